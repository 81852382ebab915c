"""Indexes that no embedder of this version can open again.

A folder keeps one index per embedder identity, so switching embedders or backends and
back finds its index intact. An int8 export that changes (its vectors move, so its
identity does: ``onnx_export.IDENTITIES``) leaves the index of the old identity behind,
which nothing can search or update any more: it only takes disk. Once the folder's own
index is in step, those beside it are removed; one that another process is writing is
left for a later run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..embedding.onnx_export import IDENTITIES
from .index import PassageIndex, remove_index, stored_identity

# What may follow an embedder's own "name:dim:metric" in an identity this version makes:
# nothing (torch, ONNX fp32) or a current int8 scheme.
CURRENT_SCHEMES = frozenset({"", *IDENTITIES.values()})


@dataclass(frozen=True)
class RemovedIndex:
    directory: str
    embedder: str  # the identity it was built for
    bytes: int


def superseded(identity: str, current: str) -> bool:
    """``identity`` is ``current``'s embedder under a scheme this version no longer makes."""
    base = ":".join(current.split(":")[:3])
    if identity == current or not (identity == base or identity.startswith(base + ":")):
        return False
    return identity[len(base) + 1 :] not in CURRENT_SCHEMES


def remove_superseded(index: PassageIndex) -> list[RemovedIndex]:
    """Removes the indexes beside ``index`` that its embedder built under a superseded scheme."""
    removed = []
    for directory in sorted(index.directory.parent.iterdir()):
        if directory == index.directory or not directory.is_dir():
            continue
        identity = stored_identity(directory)
        if identity is None or not superseded(identity, index.identity):
            continue
        size = remove_index(directory)
        if size is not None:
            removed.append(RemovedIndex(str(directory), identity, size))
    return removed
