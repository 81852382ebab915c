"""Keep an index in step with a folder or a dataset corpus: incremental, batched, resumable.

A file is re-read only when its size, mtime or ctime moved, and re-parsed only when its
content hash moved. A passage whose embedded text is already stored (a renamed, moved or
copied file, an unchanged section of an edited one) takes the stored vector. Work is
committed in batches, each file with all of its passages, so a crash or Ctrl-C loses at
most one batch and the next run picks up the files whose new stat was never committed.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ... import paths
from ..cores import CoreShare
from ..counting import counted
from ..embedding.embedder import Embedder
from .chunking import Chunk, ChunkOptions
from .documents import (
    MAX_BYTES,
    FileEntry,
    Skip,
    SkipFile,
    check_folder,
    content_hash,
    passages,
    read,
    read_as_markup,
    read_as_plain,
    read_by_ocr,
    scan,
    scan_folder,
)
from .ignore import IGNORE_FILE, Tally
from .index import FileRecord, FileUpdate, IndexMismatchError, NewPassage, PassageIndex
from .ocr import OCR_MODES, OcrCancelled, OcrRun
from .superseded import RemovedIndex, remove_superseded

PARSER_VERSION = "1"  # bump when parsing, splitting or the embedded text changes
MARKUP_VERSION = "29"  # bump when markup alone is read differently: only those files are read again
PDF_VERSION = "3"  # the same for a PDF's text layer (its scanned pages are read by OCR again with it)
PLAIN_VERSION = "2"  # the same for files read line for line (code, data, manual pages)
BATCH_PASSAGES = 256
BATCH_FILES = 512
BATCH_SECONDS = 5.0
EMBED_CALL = 64  # texts per embedder call: the cancel check and progress granularity


@dataclass(frozen=True)
class IndexProgress:
    files_done: int
    files_total: int  # files to (re)process this run; unchanged ones are not counted
    passages_done: int
    rate: float  # passages per second
    eta_seconds: float | None  # None until there is a rate to extrapolate
    current: str  # the file being read, or "" between files
    ocr_pages_done: int = 0  # page images read by OCR this run
    ocr_pages_left: int = 0  # pages of the current file still to be read by OCR

    @property
    def ocr_note(self) -> str:
        """What OCR has done, for a progress line; "" while it has done nothing."""
        if not (self.ocr_pages_done or self.ocr_pages_left):
            return ""
        left = f", {self.ocr_pages_left} to go in this file" if self.ocr_pages_left else ""
        return f"{self.ocr_pages_done} pages OCR'd{left}"


@dataclass
class IndexReport:
    indexed: int = 0  # files whose text is in the index after the run
    unchanged: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    skipped: list[Skip] = field(default_factory=list)
    ignored: list[Tally] = field(default_factory=list)  # what each .iterretgenignore left out
    passages: int = 0  # passages in the index after the run
    seconds: float = 0.0
    embedded: int = 0  # passages embedded this run; the others reused stored vectors
    ocr_pages: int = 0  # page images read by OCR this run
    cancelled: bool = False
    removed_indexes: list[RemovedIndex] = field(default_factory=list)  # of superseded embedder schemes

    def to_json(self) -> dict:
        files = {
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
        }
        if self.ignored:  # only where ignore files are: the summary's keys stay as they were
            files["ignored"] = [tally.to_json() for tally in self.ignored]
        return {
            "files": files,
            "passages": self.passages,
            "ocr_pages": self.ocr_pages,
            "seconds": round(self.seconds, 3),
            "removed_indexes": [
                {"path": r.directory, "embedder": r.embedder, "bytes": r.bytes} for r in self.removed_indexes
            ],
        }

    def not_read(self) -> str:
        """What this run could not read, counted by kind ("2 files and 1 folder"); "" when
        it read everything."""
        folders = sum(skip.folder for skip in self.skipped)
        counts = ((len(self.skipped) - folders, "file"), (folders, "folder"))
        return " and ".join(counted(n, noun) for n, noun in counts if n)

    def removed_note(self) -> str:
        """The indexes removed this run, in a sentence; "" when none were."""
        if not self.removed_indexes:
            return ""
        megabytes = sum(r.bytes for r in self.removed_indexes) / 1e6
        count = len(self.removed_indexes)
        kind = "an index" if count == 1 else f"{count} indexes"
        return f"Removed {kind} built by an earlier version of the embedder ({megabytes:.1f} MB)."


ProgressCallback = Callable[[IndexProgress], None]


def open_folder_index(folder: Path, embedder: Embedder) -> PassageIndex:
    """The folder's index for this embedder (paths.embedder_index_dir)."""
    directory = paths.embedder_index_dir(folder, embedder.identity)
    return PassageIndex.open(directory, embedder_identity=embedder.identity, dim=embedder.dim)


# -- folders -------------------------------------------------------------------------------


def sync_folder(
    folder: Path,
    index: PassageIndex,
    embedder: Embedder,
    *,
    chunking: ChunkOptions = ChunkOptions(),
    cancel: threading.Event | None = None,
    progress: ProgressCallback | None = None,
    max_bytes: int = MAX_BYTES,
    lock_timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    ocr: str = "auto",
    cores: CoreShare | None = None,
) -> IndexReport:
    """Bring the index in step with the folder. Waits for another writer (``lock_timeout``
    None) or raises ``IndexLockedError``; ``on_wait`` hears once that it is waiting.
    ``ocr`` "auto" reads scanned PDF pages and images by OCR, "off" leaves them out.
    ``cores`` hears that indexing runs, so a chat model beside it takes half the cores."""
    if ocr not in OCR_MODES:
        raise ValueError(f"ocr must be one of {', '.join(OCR_MODES)}, not {ocr!r}")
    root = check_folder(folder)
    _check(index, embedder)
    started = time.monotonic()
    report = IndexReport()
    with index.lock(timeout=lock_timeout, cancel=cancel, on_wait=on_wait), _running(cores):
        _build_lexical(index, progress, cancel)
        signature = _signature(chunking)
        reprocess_all = index.meta("chunking") != signature
        outdated = _outdated(index, ocr)
        found = scan_folder(root, exclude=index.directory)
        entries, report.skipped, report.ignored = found.files, found.skipped, found.ignored
        known = index.files()
        if not known and (reprocess_all or outdated):
            # A new index: what this run commits is read with these settings, so a run cut
            # short must not make the next one read (and OCR) those files again.
            index.commit(meta={"chunking": signature} | outdated)
            reprocess_all, outdated = False, {}
        todo = _changed(entries, known, report, reprocess_all, [_REREADS[key] for key in outdated])
        writer = _Writer(index, embedder, report, cancel, progress, [entry for entry, _ in todo])
        writer.ocr = OcrRun(cancel) if ocr == "auto" else None
        gone = set(known) - {str(e.path) for e in entries}
        for entry, reprocess in todo:
            if writer.cancelled():
                break
            vanished = _sync_file(entry, known.get(str(entry.path)), writer, reprocess, chunking, max_bytes)
            if vanished:
                gone.add(str(entry.path))
        writer.flush()
        # Removals run even after a cancel: a deleted file must never answer a question.
        meta = {}
        if not writer.cancelled():
            meta = ({"chunking": signature} if reprocess_all else {}) | outdated
        _remove(index, report, known, [path for path in gone if path in known], meta or None)
    report.ocr_pages = writer.ocr.pages_done if writer.ocr else 0
    return _finish(report, index, writer, started)


def _changed(
    entries: list[FileEntry],
    known: dict[str, FileRecord],
    report: IndexReport,
    reprocess_all: bool,
    reread: list[Callable[[Path], bool]],
) -> list[tuple[FileEntry, bool]]:
    """The files to read, each with whether it must be read again whatever its hash; the
    rest are counted unchanged (or listed as skipped again)."""
    todo = []
    for entry in entries:
        record = known.get(str(entry.path))
        reprocess = reprocess_all or any(which(entry.path) for which in reread)
        if record is None or reprocess or not _same_stat(record, entry):
            todo.append((entry, reprocess))
        elif record.skip:
            report.skipped.append(Skip(record.path, record.skip))
        else:
            report.unchanged += 1
    return todo


def _sync_file(
    entry: FileEntry,
    record: FileRecord | None,
    writer: _Writer,
    reprocess: bool,
    chunking: ChunkOptions,
    max_bytes: int,
) -> bool:
    """Queue one changed or new file. Returns whether it vanished."""
    path = str(entry.path)
    was_indexed = record is not None and not record.skip
    writer.report_progress(current=path)
    digest = ""
    try:
        entry, data = read(entry, max_bytes)
        digest = content_hash(data)
        if was_indexed and not reprocess and record.hash == digest:
            writer.add(_record(entry, digest), None, outcome="unchanged")  # touched, not edited
            return False
        if writer.ocr is not None:
            writer.ocr.on_page = lambda: writer.report_progress(current=path)
        chunks = passages(entry.path, data, chunking, ocr=writer.ocr)
    except OcrCancelled:
        return False  # nothing of the file is kept: the next run reads it again
    except SkipFile as skip:
        writer.report.skipped.append(Skip(path, skip.reason))
        if skip.transient:  # retried next run; a vanished file is removed now
            return not entry.path.exists()
        writer.add(_record(entry, digest, skip.reason), [], outcome="removed" if was_indexed else "")
        return False
    writer.add(
        _record(entry, digest), chunks, fallback_title=entry.path.name, outcome="updated" if was_indexed else "added"
    )
    return False


def needs_sync(folder: Path, index: PassageIndex, chunking: ChunkOptions = ChunkOptions(), ocr: str = "auto") -> bool:
    """Whether any file was added, changed or removed since the last sync (stat calls only)."""
    if index.meta("chunking") != _signature(chunking) or _outdated(index, ocr):
        return True
    entries, _ = scan(check_folder(folder), exclude=index.directory)
    on_disk = {str(e.path): (e.size, e.mtime_ns, e.ctime_ns) for e in entries}
    return on_disk != {path: (r.size, r.mtime_ns, r.ctime_ns) for path, r in index.files().items()}


def watch_folder(
    folder: Path,
    index: PassageIndex,
    embedder: Embedder,
    *,
    on_report: Callable[[IndexReport], None],
    cancel: threading.Event,
    debounce_ms: int = 1000,
    **sync_options,
) -> None:
    """Sync after each burst of changes until ``cancel`` is set (the caller syncs first)."""
    import watchfiles

    root = check_folder(folder)
    own = index.directory.resolve()

    def visible(_change, changed: str) -> bool:
        path = Path(changed)
        if path.is_relative_to(own) or not path.is_relative_to(root):
            return False
        parts = path.relative_to(root).parts
        if parts and parts[-1] == IGNORE_FILE:  # hidden, but it changes what is indexed
            parts = parts[:-1]
        return not any(part.startswith(".") for part in parts)

    for _changes in watchfiles.watch(root, watch_filter=visible, debounce=debounce_ms, stop_event=cancel):
        on_report(sync_folder(root, index, embedder, cancel=cancel, **sync_options))


# The files a setting's change reads again: another OCR mode (or an index from before OCR),
# PDFs and images only; a newer markup reader, the files read for their structure only
# (documents.read_as_markup); a newer PDF reader, PDFs; a newer reader of the rest, the
# rest (documents.read_as_plain).
_REREADS: dict[str, Callable[[Path], bool]] = {
    "ocr": read_by_ocr,
    "markup": read_as_markup,
    "plain": read_as_plain,
    "pdf": lambda path: path.suffix.lower() == ".pdf",
}


def _outdated(index: PassageIndex, ocr: str) -> dict[str, str]:
    """The settings of _REREADS this index was read with that differ now, with their new values."""
    wanted = {"ocr": ocr, "markup": MARKUP_VERSION, "pdf": PDF_VERSION, "plain": PLAIN_VERSION}
    return {key: value for key, value in wanted.items() if index.meta(key) != value}


def _signature(chunking: ChunkOptions) -> str:
    """What the stored passages were split with: another parser or split redoes every file."""
    return f"{PARSER_VERSION}:{chunking.words}:{chunking.overlap}"


def _same_stat(record: FileRecord, entry: FileEntry) -> bool:
    return (record.size, record.mtime_ns, record.ctime_ns) == (entry.size, entry.mtime_ns, entry.ctime_ns)


def _record(entry: FileEntry, digest: str, skip: str = "") -> FileRecord:
    return FileRecord(str(entry.path), entry.size, entry.mtime_ns, entry.ctime_ns, digest, skip)


# -- dataset corpora -----------------------------------------------------------------------

CORPUS_LAYOUT = f"corpus:{PARSER_VERSION}"


def sync_corpus(
    index: PassageIndex,
    docs: Iterable[tuple[str, str, str]],
    embedder: Embedder,
    *,
    cancel: threading.Event | None = None,
    progress: ProgressCallback | None = None,
    cores: CoreShare | None = None,
) -> IndexReport:
    """Index (doc_id, title, text) documents, one passage each; unchanged ones are kept."""
    _check(index, embedder)
    started = time.monotonic()
    report = IndexReport()
    docs = list(docs)
    with index.lock(cancel=cancel), _running(cores):
        _build_lexical(index, progress, cancel)
        reprocess_all = index.meta("chunking") != CORPUS_LAYOUT
        known = index.files()
        seen: set[str] = set()
        todo = []
        for doc_id, title, text in docs:
            if doc_id in seen:
                report.skipped.append(Skip(doc_id, "duplicate document id"))
                continue
            seen.add(doc_id)
            record = known.get(doc_id)
            digest = content_hash(f"{title}\0{text}".encode())
            if record is not None and record.hash == digest and not reprocess_all:
                report.unchanged += not record.skip
                if record.skip:
                    report.skipped.append(Skip(doc_id, record.skip))
            else:
                todo.append((FileRecord(doc_id, len(text), 0, 0, digest), title, text.strip(), record))
        writer = _Writer(index, embedder, report, cancel, progress, [t[0] for t in todo])
        for doc, title, text, record in todo:
            if writer.cancelled():
                break
            was_indexed = record is not None and not record.skip
            if text:
                writer.add(
                    doc,
                    [Chunk(text, "", title)],
                    fallback_title=doc.path,
                    outcome="updated" if was_indexed else "added",
                )
            else:
                report.skipped.append(Skip(doc.path, "empty document"))
                writer.add(
                    FileRecord(doc.path, 0, 0, 0, doc.hash, "empty document"),
                    [],
                    outcome="removed" if was_indexed else "",
                )
        writer.flush()
        if not writer.cancelled():  # only a complete pass knows which documents are gone
            meta = {"chunking": CORPUS_LAYOUT} if reprocess_all else None
            _remove(index, report, known, set(known) - seen, meta)
    return _finish(report, index, writer, started)


# -- shared --------------------------------------------------------------------------------


def _running(cores: CoreShare | None):
    return cores.indexing() if cores is not None else nullcontext()


def _check(index: PassageIndex, embedder: Embedder) -> None:
    if index.identity != embedder.identity or index.dim != embedder.dim:
        raise IndexMismatchError(
            f"the index holds vectors of {index.identity!r}; it cannot take vectors of {embedder.identity!r}"
        )


def _build_lexical(index: PassageIndex, progress: ProgressCallback | None, cancel: threading.Event | None) -> None:
    """An index from before the keyword index gets it from its stored passages, once."""
    started = time.monotonic()

    def report(done: int, total: int) -> None:
        rate = done / max(time.monotonic() - started, 1e-9)
        progress(IndexProgress(0, 0, done, rate, (total - done) / rate, f"keyword index: {done}/{total} passages"))

    index.build_lexical(progress=report if progress else None, cancel=cancel)


def _remove(
    index: PassageIndex, report: IndexReport, known: dict[str, FileRecord], paths: Iterable[str], meta: dict | None
) -> None:
    """Drop what is gone; a file counts as removed only if it had passages."""
    paths = sorted(paths)
    report.removed += sum(1 for path in paths if not known[path].skip)
    index.commit(removed=paths, meta=meta)


def _finish(report: IndexReport, index: PassageIndex, writer: _Writer, started: float) -> IndexReport:
    report.cancelled = writer.cancelled()
    report.passages = len(index)
    report.indexed = index.file_count()
    report.skipped.sort(key=lambda s: s.path)
    report.seconds = time.monotonic() - started
    if not report.cancelled:  # the index is in step: those of a superseded scheme can go
        report.removed_indexes = remove_superseded(index)
    return report


def embedding_text(chunk: Chunk) -> str:
    """What the embedder sees: the document's own title helps (BEIR practice); a file name
    is left out, so a renamed file embeds to the same text and keeps its vectors."""
    return f"{chunk.heading}\n{chunk.text}" if chunk.heading else chunk.text


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass
class _Pending:
    record: FileRecord
    chunks: list[Chunk] | None  # None: content unchanged; [] drops the file's passages
    fallback_title: str
    outcome: str  # the report counter this file adds to once committed, or ""


class _Writer:
    """Collects processed files, embeds what has no stored vector, commits in batches."""

    def __init__(
        self,
        index: PassageIndex,
        embedder: Embedder,
        report: IndexReport,
        cancel: threading.Event | None,
        progress: ProgressCallback | None,
        todo: list[FileEntry] | list[FileRecord],
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.report = report
        self.cancel = cancel
        self.progress = progress
        self.files_total = len(todo)
        self.bytes_total = sum(item.size for item in todo) or 1
        self.files_done = self.bytes_done = self.passages_done = 0
        self.started = self.last_commit = time.monotonic()
        self.pending: list[_Pending] = []
        self.ocr: OcrRun | None = None  # folders only: reads scanned pages and images

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def add(self, record: FileRecord, chunks: list[Chunk] | None, *, fallback_title: str = "", outcome: str) -> None:
        self.pending.append(_Pending(record, chunks, fallback_title, outcome))
        waiting = sum(len(p.chunks or ()) for p in self.pending)
        if (
            waiting >= BATCH_PASSAGES
            or len(self.pending) >= BATCH_FILES
            or time.monotonic() - self.last_commit >= BATCH_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        texts = {_key(t): t for p in batch for t in map(embedding_text, p.chunks or ())}
        vectors = self.index.vectors_for(texts)
        missing = {k: t for k, t in texts.items() if k not in vectors}
        if not self._embed(missing, vectors):
            return  # cancelled: nothing of this batch is committed, the next run redoes it
        updates = []
        for p in batch:
            new = None
            if p.chunks is not None:
                new = []
                for chunk in p.chunks:
                    key = _key(embedding_text(chunk))
                    new.append(
                        NewPassage(chunk.heading or p.fallback_title, chunk.text, chunk.location, key, vectors[key])
                    )
            updates.append(FileUpdate(p.record, new))
        self.index.commit(updates)
        for p in batch:
            if p.outcome:
                setattr(self.report, p.outcome, getattr(self.report, p.outcome) + 1)
        self.files_done += len(batch)
        self.bytes_done += sum(p.record.size for p in batch)
        self.passages_done += len(texts) - len(missing)  # reused vectors count as done too
        self.last_commit = time.monotonic()
        self.report_progress()

    def _embed(self, missing: dict[str, str], vectors: dict[str, np.ndarray]) -> bool:
        """Embed in calls of EMBED_CALL, longest first (similar lengths pad least)."""
        order = sorted(missing, key=lambda k: len(missing[k]), reverse=True)
        for start in range(0, len(order), EMBED_CALL):
            if self.cancelled():
                return False
            keys = order[start : start + EMBED_CALL]
            for key, vector in zip(keys, self.embedder.embed_batch([missing[k] for k in keys])):
                vectors[key] = vector
            self.report.embedded += len(keys)
            self.passages_done += len(keys)
            self.report_progress()
        return True

    def report_progress(self, current: str = "") -> None:
        if self.progress is None:
            return
        elapsed = max(time.monotonic() - self.started, 1e-9)
        eta = elapsed * (self.bytes_total - self.bytes_done) / self.bytes_done if self.bytes_done else None
        ocr = (self.ocr.pages_done, self.ocr.pages_left) if self.ocr else (0, 0)
        self.progress(
            IndexProgress(
                self.files_done, self.files_total, self.passages_done, self.passages_done / elapsed, eta, current, *ocr
            )
        )
