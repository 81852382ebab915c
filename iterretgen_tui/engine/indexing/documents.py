"""A document folder -> files -> text -> passages.

``scan_folder`` walks a folder with stat calls only, leaving out what ignore files name;
``read`` takes a file's bytes and notices a file that changes meanwhile; ``passages``
parses the bytes by format and splits them. Anything that cannot be indexed raises
``SkipFile`` with the reason the user sees.
"""

from __future__ import annotations

import codecs
import errno
import gzip
import hashlib
import io
import os
import stat
import unicodedata
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import charset_normalizer

from ..errors import IterRetGenError
from . import formats, latex, packaged
from .chunking import Chunk, ChunkOptions, split
from .formats import SkipFile
from .ignore import IGNORE_FILE, Ignores, Tally
from .ocr import IMAGE_SUFFIXES, OcrCancelled
from .signatures import mislabelled

if TYPE_CHECKING:
    from .ocr import OcrRun

MAX_BYTES = 50 * 1024 * 1024
_SNIFF_CHARS = 8192

_BOMS = (  # UTF-32 first: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_MARKUP = {
    ".md": formats.markdown,
    ".markdown": formats.markdown,
    ".rst": formats.rst,
    ".txt": formats.text_file,
    "": formats.text_file,  # README, INSTALL, NEWS: prose titled as a .txt is
    ".html": formats.html,
    ".htm": formats.html,
    ".xhtml": formats.html,
    ".ipynb": formats.notebook,
    ".tex": latex.latex,
}
_CONTAINERS = {".docx": formats.docx, ".epub": packaged.epub, ".odt": packaged.odt}
# Formats it does not read, named: "binary file" told a user nothing about a spreadsheet.
_NOT_READ = {
    ".doc": "a Word 97-2003 document (saved as .docx it is read)",
    ".xls": "a spreadsheet",
    ".xlsx": "a spreadsheet",
    ".ods": "a spreadsheet",
    ".ppt": "a presentation",
    ".pptx": "a presentation",
    ".odp": "a presentation",
    ".zip": "an archive",
    ".tar": "an archive",
    ".tgz": "an archive",
    ".7z": "an archive",
}
_READ_BY_OCR = {".pdf": formats.pdf, **{suffix: formats.image for suffix in IMAGE_SUFFIXES}}


@dataclass(frozen=True)
class FileEntry:
    path: Path  # absolute, inside the folder; symlinks are kept, not resolved
    size: int
    mtime_ns: int
    ctime_ns: int  # catches chmod, which leaves mtime alone

    @classmethod
    def of(cls, path: Path, st: os.stat_result) -> FileEntry:
        return cls(path, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class Skip:
    path: str
    reason: str
    folder: bool = False  # a folder left out whole, not a file


class FolderError(IterRetGenError):
    """The folder to index does not exist or is not a folder."""


def check_folder(folder: Path | str) -> Path:
    """The folder as an absolute path, or a clear error."""
    root = Path(folder).expanduser().resolve()
    if not root.exists():
        raise FolderError(f"folder not found: {folder}")
    if not root.is_dir():
        raise FolderError(f"not a folder: {folder}")
    return root


@dataclass
class FolderScan:
    files: list[FileEntry]  # in path order
    skipped: list[Skip]
    ignored: list[Tally]  # what each ignore file left out, in path order


def scan(root: Path, *, exclude: Path | None = None) -> tuple[list[FileEntry], list[Skip]]:
    """scan_folder's files and skips."""
    found = scan_folder(root, exclude=exclude)
    return found.files, found.skipped


def scan_folder(root: Path, *, exclude: Path | None = None) -> FolderScan:
    """Regular files under root, hidden names and what ``.iterretgenignore`` files name
    (ignore.py) left out, symlinks followed once: a link back to a visited folder is
    reported, never walked twice. ``exclude`` (the index's own folder, should it live
    inside root) is left out silently."""
    files: list[FileEntry] = []
    skipped: list[Skip] = []
    ignored: dict[Path, Tally] = {}
    visited = {_inode(root.stat())}
    excluded = {_inode(exclude.stat())} if exclude is not None and exclude.is_dir() else set()
    stack = [(root, Ignores())]
    while stack:
        directory, ignores = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skip(str(directory), f"cannot list folder: {exc.strerror}", folder=True))
            continue
        if any(entry.name == IGNORE_FILE for entry in entries):
            try:
                ignores = ignores.enter(directory)
            except OSError as exc:  # the folder is left out whole: what the file hides may be private
                skipped.append(Skip(str(directory), f"cannot read its {IGNORE_FILE}: {exc.strerror}", folder=True))
                continue
        subdirs = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if not _encodable(entry.name):
                shown = entry.path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                skipped.append(Skip(shown, "the name is not valid UTF-8; rename it to index it"))
                continue
            is_folder = _is_dir(entry)
            if (source := ignores.ignored_by(path, is_folder=is_folder)) is not None:
                tally = ignored.setdefault(source, Tally(str(source)))
                tally.folders += is_folder
                tally.files += not is_folder
                continue
            try:
                st = entry.stat()  # follows symlinks
            except OSError as exc:
                skipped.append(Skip(str(path), _stat_failure(path, exc)))
                continue
            if stat.S_ISDIR(st.st_mode):
                if _inode(st) in excluded:
                    continue
                if _inode(st) in visited:
                    skipped.append(Skip(str(path), "symlink loop: links to a folder already indexed", folder=True))
                    continue
                visited.add(_inode(st))
                subdirs.append((path, ignores))
            elif stat.S_ISREG(st.st_mode):
                files.append(FileEntry.of(path, st))
            else:
                skipped.append(Skip(str(path), "not a regular file (pipe, socket or device)"))
        stack.extend(reversed(subdirs))
    files.sort(key=lambda f: f.path)
    return FolderScan(files, skipped, [ignored[source] for source in sorted(ignored)])


def _inode(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _is_dir(entry: os.DirEntry) -> bool:
    """A folder, or a link to one (a dangling or unreadable entry is not: its stat says why)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _encodable(name: str) -> bool:
    """Undecodable bytes in a name come back as lone surrogates, which SQLite, JSON and
    the terminal all refuse."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _stat_failure(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno == errno.ENOENT and path.is_symlink():
        return f"dangling symlink to {os.readlink(path)}"
    return f"cannot read: {exc.strerror}"


def read(entry: FileEntry, max_bytes: int = MAX_BYTES) -> tuple[FileEntry, bytes]:
    """The file's bytes with the stat they were read under."""
    if entry.size > max_bytes:
        raise SkipFile(f"too large: {_size(entry.size)} (the limit is {_size(max_bytes)})")
    try:
        with open(entry.path, "rb") as fh:
            before = os.fstat(fh.fileno())
            data = fh.read(max_bytes + 1)
            after = os.fstat(fh.fileno())
    except FileNotFoundError:
        raise SkipFile("vanished while being read", transient=True) from None
    except PermissionError:
        raise SkipFile("permission denied") from None
    except OSError as exc:
        raise SkipFile(f"cannot read: {exc.strerror}") from None
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(data) != after.st_size:
        raise SkipFile("changed while being read; retried on the next run", transient=True)
    if len(data) > max_bytes:
        raise SkipFile(f"too large: over the limit of {_size(max_bytes)}")
    if not data:
        raise SkipFile("empty file")
    return replace(entry, size=after.st_size, mtime_ns=after.st_mtime_ns, ctime_ns=after.st_ctime_ns), data


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KiB" if n < 2**20 else f"{n / 2**20:.1f} MiB"


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def format_suffix(path: Path) -> str:
    """The suffix that names the file's format, in lower case; none for a version's digits:
    "MPL-2.0", "LGPL-2.1" and "Apache-2.0" are licences in prose, titled as a README is,
    and were read as lines of unknown text."""
    suffix = path.suffix.lower()
    return "" if suffix[1:].isdigit() else suffix


def read_as_markup(path: Path) -> bool:
    """Whether a reader of marked-up structure (headings, markup) reads the file:
    Markdown, reStructuredText, prose text (a file without a suffix too), HTML, LaTeX,
    Jupyter notebooks, Word, EPUB, OpenDocument, and any gzip-compressed file."""
    suffix = format_suffix(path)
    return suffix in _MARKUP or suffix in _CONTAINERS or suffix == ".gz"  # gzip files were skipped before


def read_as_plain(path: Path) -> bool:
    """Whether the file is read line for line (formats.plain): code, data, and any suffix
    no other reader takes."""
    suffix = format_suffix(path)
    return not (read_as_markup(path) or read_by_ocr(path) or suffix in _NOT_READ)


def read_by_ocr(path: Path) -> bool:
    """Whether OCR may read (part of) the file: a PDF or an image."""
    return path.suffix.lower() in _READ_BY_OCR


def passages(
    path: Path, data: bytes, chunking: ChunkOptions = ChunkOptions(), ocr: OcrRun | None = None
) -> list[Chunk]:
    """``ocr`` reads scanned pages and images (None: OCR is off); it raises OcrCancelled
    when the run is cancelled between two pages."""
    compressed = path.suffix.lower() == ".gz"
    if compressed:  # read as the file it holds: "notes.md.gz" as "notes.md"
        path = path.with_suffix("")
    suffix = format_suffix(path)
    if suffix in _NOT_READ:  # ".tar.gz" too, before it is inflated
        raise SkipFile(f"not a format it reads: {_NOT_READ[suffix]}")
    if compressed:
        data = _gunzipped(data)
    wrong = mislabelled(suffix, data)
    if wrong:
        raise SkipFile(wrong)
    try:
        if suffix in _READ_BY_OCR:
            parsed = _READ_BY_OCR[suffix](data, ocr)
        elif suffix in _CONTAINERS:
            parsed = _CONTAINERS[suffix](data)
        else:
            parsed = _MARKUP.get(suffix, formats.plain)(decode(data))
    except (SkipFile, OcrCancelled):
        raise
    except Exception as exc:  # a parser bug on odd input must not stop the whole run
        raise SkipFile(f"cannot parse: {type(exc).__name__}: {exc}"[:200]) from None
    chunks = split(parsed, chunking)
    if not chunks:
        raise SkipFile("no text found" + _no_text_hint(suffix, ocr))
    return chunks


def _gunzipped(data: bytes, max_bytes: int = MAX_BYTES) -> bytes:
    """What a gzip-compressed file holds: Debian keeps most of /usr/share/doc so, and
    every such file was skipped as binary."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as compressed:
            data = compressed.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise SkipFile(f"cannot decompress: {formats.brief(exc)}") from None
    if len(data) > max_bytes:
        raise SkipFile(f"too large: over the limit of {_size(max_bytes)} uncompressed")
    if not data:
        raise SkipFile("empty file")
    return data


def _no_text_hint(suffix: str, ocr: OcrRun | None) -> str:
    if suffix not in _READ_BY_OCR:
        return ""
    if ocr is None:
        return " (a scanned PDF? OCR is off)"
    return " (blank pages, or OCR found no text)"


def decode(data: bytes) -> str:
    """Text in any common encoding; binary content raises SkipFile."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                raise SkipFile(f"invalid {codec} text") from None
    if b"\0" in data[:_SNIFF_CHARS]:
        raise SkipFile("binary file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = _legacy(data)
    if _mostly_control(text[:_SNIFF_CHARS]):
        raise SkipFile("binary file")
    return text


def _legacy(data: bytes) -> str:
    """A legacy 8-bit encoding. charset-normalizer garbles short Western text (it rates
    cp775 or cp1257 above cp1252), so cp1252 goes first when its reading looks Western."""
    try:
        western = data.decode("cp1252")
    except UnicodeDecodeError:  # five bytes cp1252 leaves undefined
        western = ""
    if western and _looks_western(western[: 8 * _SNIFF_CHARS]):
        return western
    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        raise SkipFile("binary file")
    return str(best)


# cp1252 symbols at the byte values where cp1250, cp1257 and others put letters.
_UNLIKELY = set("¤¦¨ª¬¯²³´¸¹º¼¾ˆ‰‹›ŠŒŽšœžŸƒ¶¥")


def _looks_western(text: str) -> bool:
    """Few accented letters and almost none of the symbols Central European or Cyrillic
    text turns into when read as cp1252."""
    letters = sum(1 for ch in text if ch.isalpha())
    accented = sum(1 for ch in text if ch.isalpha() and not ch.isascii())
    unusual = sum(1 for ch in text if ch in _UNLIKELY)
    non_ascii = sum(1 for ch in text if not ch.isascii())
    return accented <= 0.5 * letters and unusual <= 0.05 * non_ascii


def _mostly_control(sample: str) -> bool:
    odd = sum(1 for ch in sample if ch not in "\t\n\r\f\v" and unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn"))
    return odd > len(sample) * 0.05
