"""Passages on disk: SQLite for files, passages and their vectors; FAISS to search them.

Crash safety rests on one rule: SQLite is the truth. Each batch of work is one SQLite
transaction holding the files, their passages and the passages' vectors, and it bumps a
generation number. The FAISS file is a snapshot of those vectors named after the
generation it holds (``vectors-<generation>.faiss``), written beside the old one and
renamed into place. Opening loads the snapshot of the current generation when its ids
are exactly the passage ids, and otherwise rebuilds the vectors from SQLite. So a crash
at any moment leaves the last committed batch loadable, with every vector id a passage
and every passage a vector; a stale or missing snapshot costs a rebuild, never an error.

The keyword (lexical) index is an SQLite FTS5 table over the passages' titles and texts,
kept by triggers on ``passages``: every insert and delete of a passage updates it inside
the same transaction, so it can never disagree with the passages. It reads the text from
``passages`` (external content) instead of holding a second copy. An index made before it
existed, or with another tokenizer, gets it built from the stored passages by
``build_lexical`` (one transaction; nothing is embedded again).

The FAISS index type follows the size (``_kind``): exact inner product below
``ANN_THRESHOLD`` vectors, an inverted-file index (IVF, which keeps explicit ids and
supports removal, so incremental commits work as on the flat one) above it. A snapshot of
the wrong kind for its size, or an IVF index that has outgrown its lists, is rebuilt.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np
from filelock import FileLock, Timeout

from ... import paths
from ..errors import IterRetGenError
from ..passages import Passage

SCHEMA_VERSION = "1"
_DB = "index.sqlite3"
_WRITE_LOCK = "write.lock"
_SQL_VARS = 500  # ids per `IN (...)` query, below SQLite's parameter limit
# Exact search reads every vector per query (memory-bound); above this an IVF index reads
# a few percent of them (docs/performance.md, scripts/bench_retrieval.py).
ANN_THRESHOLD = 50_000
NPROBE = 32  # lists searched per query: recall@10 close to exact at 1M (scripts/bench_retrieval.py)
_TRAIN_PER_LIST = 40  # k-means sample per list: faiss asks for 39 at least; more only costs time
_BLAS_QUERIES = 20  # from here faiss searches by BLAS matrix products, which use the threads well

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,  -- absolute file path, or a dataset document id
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    skip TEXT NOT NULL DEFAULT ''  -- why the file has no passages, '' when indexed
);
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a stale vector id finds nothing
    file_id INTEGER NOT NULL REFERENCES files(id),
    location TEXT NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    key TEXT NOT NULL,  -- hash of the embedded text: equal keys can share a vector
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS passages_file ON passages(file_id);
CREATE INDEX IF NOT EXISTS passages_key ON passages(key);
"""

# Diacritics folded (café = cafe); no stemming: Porter stemming measured no better on the QA sets
# (docs/evaluation.md, "Hybrid retrieval").
LEXICAL_TOKENIZER = "unicode61 remove_diacritics 2"
_LEXICAL_BATCH = 5_000  # passages per step of a build: the cancel check and progress granularity


def _lexical_schema(tokenizer: str) -> tuple[str, ...]:
    """The FTS5 table and the triggers that keep it in step with ``passages`` (statements
    one by one: a trigger's body has semicolons, and executescript would commit)."""
    delete = "INSERT INTO lexical (lexical, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);"
    insert = "INSERT INTO lexical (rowid, title, text) VALUES (new.id, new.title, new.text);"
    return (
        "CREATE VIRTUAL TABLE lexical USING fts5("
        f"title, text, content='passages', content_rowid='id', tokenize='{tokenizer}')",
        f"CREATE TRIGGER lexical_add AFTER INSERT ON passages BEGIN {insert} END",
        f"CREATE TRIGGER lexical_drop AFTER DELETE ON passages BEGIN {delete} END",
        f"CREATE TRIGGER lexical_edit AFTER UPDATE OF title, text ON passages BEGIN {delete} {insert} END",
    )


_LEXICAL_DROP = (
    "DROP TRIGGER IF EXISTS lexical_add",
    "DROP TRIGGER IF EXISTS lexical_drop",
    "DROP TRIGGER IF EXISTS lexical_edit",
    "DROP TABLE IF EXISTS lexical",
)


class IndexMismatchError(IterRetGenError):
    """The index on disk cannot be used: another embedder or format built it, or it is damaged."""


class IndexLockedError(IterRetGenError):
    """Another process is writing this index."""


class _Cancelled(Exception):
    """A build stopped by its cancel event; its transaction is rolled back."""


@dataclass(frozen=True)
class FileRecord:
    path: str
    size: int
    mtime_ns: int
    ctime_ns: int
    hash: str
    skip: str = ""


@dataclass(frozen=True)
class NewPassage:
    title: str
    text: str
    location: str
    key: str
    vector: np.ndarray


@dataclass(frozen=True)
class FileUpdate:
    record: FileRecord
    passages: Sequence[NewPassage] | None  # None: same content, only the stat is updated


class PassageIndex:
    """Search reads the in-memory FAISS copy; writers hold ``lock()`` and ``commit`` batches."""

    def __init__(self, directory: Path, conn: sqlite3.Connection, identity: str, dim: int) -> None:
        self.directory = directory
        self.identity = identity
        self.dim = dim
        self._db = conn
        self._mutex = threading.RLock()  # the TUI may search while a worker thread indexes
        self._generation = -1
        self._saved_generation = -1
        self._vectors = _empty(dim)

    @classmethod
    def open(cls, directory: Path, *, embedder_identity: str, dim: int) -> PassageIndex:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(directory / _DB, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # readers see the last commit while a writer works
            conn.execute("PRAGMA synchronous=NORMAL")
            _initialise(conn, embedder_identity, dim)
            _check_identity(conn, directory, embedder_identity, dim)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise IndexMismatchError(
                f"the index in {directory} is damaged ({exc}); delete that folder and index again"
            ) from None
        except BaseException:
            conn.close()
            raise
        index = cls(directory, conn, embedder_identity, dim)
        if not index._load_snapshot():
            try:
                with index.lock(timeout=0):
                    pass  # releasing the lock writes the rebuilt snapshot
            except IndexLockedError:
                pass  # the writer holding it will save one
        return index

    # -- reading -------------------------------------------------------------------------

    def search(self, vectors: np.ndarray, k: int) -> list[list[Passage]]:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"expected query vectors of shape (n, {self.dim}), got {vectors.shape}")
        with self._mutex:
            self._refresh()
            if k < 1 or self._vectors.ntotal == 0:
                return [[] for _ in range(len(vectors))]
            with _omp_threads(1 if len(vectors) < _BLAS_QUERIES else faiss.omp_get_max_threads()):
                scores, ids = self._vectors.search(vectors, min(k, self._vectors.ntotal))
            found = {p.id: p for p in self.passages(int(i) for i in np.unique(ids) if i >= 0)}
        return [
            [found[i].with_score(s) for s, i in zip(row_scores, row_ids.tolist()) if i in found]
            for row_scores, row_ids in zip(scores, ids)
        ]

    def lexical_search(self, match: str, k: int, *, title_weight: float = 1.0) -> list[Passage]:
        """Passages matching an FTS5 ``match`` expression (engine/retrieval/lexical.py builds
        safe ones), best bm25 first, the title's terms counted ``title_weight`` times a
        text term's; the score is bm25's, negated so that higher is better."""
        with self._mutex:
            if self.meta("lexical") is None:
                raise IndexMismatchError(
                    f"the index in {self.directory} has no keyword index yet; index the folder again to build it"
                )
            rows = self._db.execute(
                "SELECT rowid, bm25(lexical, ?, 1.0) AS score FROM lexical WHERE lexical MATCH ? "
                "ORDER BY score LIMIT ?",
                (title_weight, match, k),
            ).fetchall()
            found = {p.id: p for p in self.passages(row[0] for row in rows)}
        return [found[i].with_score(-score) for i, score in rows if i in found]

    def term_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many passages hold each term (as the keyword index tokenizes; terms it
        does not hold are left out): the lexical retriever drops the commonest terms of a
        long query by these counts."""
        with self._mutex:
            if not terms or self.meta("lexical") is None:
                return {}  # no keyword index yet: lexical_search says so
            # fts5vocab reads the keyword index's own term list; a temp table, so the file's
            # schema stays as it is.
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_terms USING fts5vocab(main, lexical, row)"
            )
            rows = self._db.execute(f"SELECT term, doc FROM temp.lexical_terms WHERE term IN ({_marks(terms)})", terms)
            return dict(rows.fetchall())

    def passages(self, ids: Iterable[int]) -> list[Passage]:
        """Passages by id in the order asked; ids no longer in the index are left out."""
        ids = [int(i) for i in ids]
        rows = {}
        with self._mutex:
            for part in _chunks(ids):
                rows.update(
                    (row[0], Passage(id=row[0], text=row[1], title=row[2], source=row[3], location=row[4]))
                    for row in self._db.execute(
                        "SELECT p.id, p.text, p.title, f.path, p.location FROM passages p "
                        f"JOIN files f ON f.id = p.file_id WHERE p.id IN ({_marks(part)})",
                        part,
                    )
                )
        return [rows[i] for i in ids if i in rows]

    def around(self, passage_id: int) -> tuple[Passage | None, Passage | None]:
        """The passages just before and after this one in its file (None where there is
        none): a file's passages are written in order, so their ids follow."""
        found = {p.id: p for p in self.passages([passage_id - 1, passage_id, passage_id + 1])}
        own = found.get(passage_id)

        def same_file(passage: Passage | None) -> Passage | None:
            return passage if passage is not None and own is not None and passage.source == own.source else None

        return same_file(found.get(passage_id - 1)), same_file(found.get(passage_id + 1))

    def __len__(self) -> int:
        with self._mutex:
            self._refresh()
            return int(self._vectors.ntotal)

    def file_count(self) -> int:
        """Files (or dataset documents) with passages in the index."""
        with self._mutex:
            return self._db.execute("SELECT COUNT(*) FROM files WHERE skip = ''").fetchone()[0]

    def files(self) -> dict[str, FileRecord]:
        with self._mutex:
            rows = self._db.execute("SELECT path, size, mtime_ns, ctime_ns, hash, skip FROM files").fetchall()
        return {row[0]: FileRecord(*row) for row in rows}

    def file_records(self, paths: Iterable[str]) -> dict[str, FileRecord]:
        """The records of these paths (those the index has), to tell a stale source."""
        paths = list(dict.fromkeys(paths))
        found = {}
        with self._mutex:
            for part in _chunks(paths):
                for row in self._db.execute(
                    f"SELECT path, size, mtime_ns, ctime_ns, hash, skip FROM files WHERE path IN ({_marks(part)})", part
                ):
                    found[row[0]] = FileRecord(*row)
        return found

    def headings(self, limit: int = 1000, per_file: int = 20) -> list[tuple[str, str, int]]:
        """(title, source path, passages) of the sections holding most passages, at most
        ``per_file`` of a file: what the folder is about, for the welcome's example
        questions. A book's print-all page or a long changelog has more large sections
        than all the other files together; and the rows run deep enough to hold the
        small sections the pages of a site share (examples._template)."""
        with self._mutex:
            rows = self._db.execute(
                "SELECT title, path, n FROM ("
                " SELECT p.title, f.path, COUNT(*) AS n, MIN(p.id) AS first, ROW_NUMBER() OVER"
                " (PARTITION BY p.file_id ORDER BY COUNT(*) DESC, MIN(p.id)) AS place"
                " FROM passages p JOIN files f ON f.id = p.file_id GROUP BY p.file_id, p.title"
                ") WHERE place <= ? ORDER BY n DESC, first LIMIT ?",
                (per_file, limit),
            ).fetchall()
        return [tuple(row) for row in rows]

    def vectors_for(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors of passages with these keys: renamed or copied text is not re-embedded."""
        found: dict[str, np.ndarray] = {}
        with self._mutex:
            for part in _chunks(list(set(keys))):
                for key, blob in self._db.execute(
                    f"SELECT key, vector FROM passages WHERE key IN ({_marks(part)})", part
                ):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def vectors(self, ids: Sequence[int]) -> np.ndarray:
        """Stored vectors by passage id, in the order asked (all must exist): what the
        query encoder is trained against, without re-embedding a passage."""
        ids = [int(i) for i in ids]
        rows: dict[int, bytes] = {}
        with self._mutex:
            for part in _chunks(ids):
                rows.update(self._db.execute(f"SELECT id, vector FROM passages WHERE id IN ({_marks(part)})", part))
        missing = [i for i in ids if i not in rows]
        if missing:
            raise KeyError(f"no passages with ids {missing[:5]}")
        return np.frombuffer(b"".join(rows[i] for i in ids), dtype=np.float32).reshape(len(ids), self.dim)

    def meta(self, key: str) -> str | None:
        with self._mutex:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # -- writing -------------------------------------------------------------------------

    @contextmanager
    def lock(
        self,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> Iterator[None]:
        """Exclusive writing across processes; the snapshot is saved on release.

        ``timeout`` None waits until the holder finishes (or ``cancel`` is set); 0 fails at
        once. ``on_wait`` gets one message when waiting starts.
        """
        lock = FileLock(self.directory / _WRITE_LOCK)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            self._wait_for(lock, timeout, cancel, on_wait)
        try:
            (self.directory / "writer.pid").write_text(str(os.getpid()))
            with self._mutex:
                self._refresh()  # another process may have written since we loaded
            yield
            self.save()
        finally:
            lock.release()

    def _wait_for(self, lock: FileLock, timeout, cancel, on_wait) -> None:
        holder = self._holder()
        if timeout == 0:
            raise IndexLockedError(f"another process{holder} is updating the index in {self.directory}")
        if on_wait:
            on_wait(f"another process{holder} is updating this index; waiting for it to finish")
        waited = 0.0
        while True:
            if cancel is not None and cancel.is_set():
                raise IndexLockedError(f"stopped while waiting for another process{holder} to finish indexing")
            if timeout is not None and waited >= timeout:
                raise IndexLockedError(f"another process{holder} kept the index locked for {timeout:g} s")
            try:
                lock.acquire(timeout=0.2)
                return
            except Timeout:
                waited += 0.2

    def _holder(self) -> str:
        try:
            return f" (pid {int((self.directory / 'writer.pid').read_text())})"
        except (OSError, ValueError):
            return ""

    def build_lexical(
        self,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> bool:
        """Build the keyword index from the stored passages if it is missing or was made with
        another tokenizer (call holding ``lock()``). One transaction: a crash or a cancel
        leaves the index as it was. ``progress`` gets (passages done, total). Returns
        whether it is current now."""
        with self._mutex:
            if self.meta("lexical") == LEXICAL_TOKENIZER:
                return True
            try:
                with self._transaction():
                    total = self._db.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
                    for statement in (*_LEXICAL_DROP, *_lexical_schema(LEXICAL_TOKENIZER)):
                        self._db.execute(statement)
                    done, last = 0, -1
                    while done < total:
                        if cancel is not None and cancel.is_set():
                            raise _Cancelled
                        upto, count = self._db.execute(
                            "SELECT MAX(id), COUNT(*) FROM (SELECT id FROM passages WHERE id > ? ORDER BY id LIMIT ?)",
                            (last, _LEXICAL_BATCH),
                        ).fetchone()
                        self._db.execute(  # (FTS5 tables take no RETURNING clause)
                            "INSERT INTO lexical (rowid, title, text) SELECT id, title, text FROM passages "
                            "WHERE id > ? AND id <= ?",
                            (last, upto),
                        )
                        done, last = done + count, upto
                        if progress:
                            progress(done, total)
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('lexical', ?)", (LEXICAL_TOKENIZER,))
            except _Cancelled:
                return False
        return True

    def commit(
        self,
        updates: Sequence[FileUpdate] = (),
        removed: Sequence[str] = (),
        meta: dict[str, str] | None = None,
    ) -> None:
        """One transaction: replace the passages of updated files, drop removed files."""
        if not (updates or removed or meta):
            return  # an unchanged generation keeps the saved snapshot current
        with self._mutex:
            try:
                with self._transaction():
                    current = int(self._meta_value("generation"))
                    dropped, added = [], []
                    for update in updates:
                        dropped += self._write_file(update, added)
                    for path in removed:
                        dropped += self._drop_file(path)
                    for key, value in (meta or {}).items():
                        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
                    self._db.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (str(current + 1),))
                if current != self._generation:
                    self._rebuild()  # another writer came between: our copy missed its work
                    return
                if dropped:
                    self._vectors.remove_ids(np.array(dropped, dtype=np.int64))
                if added:
                    ids, vectors = zip(*added)
                    self._vectors.add_with_ids(np.stack(vectors), np.array(ids, dtype=np.int64))
                self._generation = current + 1
            except BaseException:
                self._rebuild()  # the in-memory copy may be half updated; SQLite is the truth
                raise

    def _write_file(self, update: FileUpdate, added: list) -> list[int]:
        r = update.record
        row = self._db.execute("SELECT id FROM files WHERE path = ?", (r.path,)).fetchone()
        values = (r.size, r.mtime_ns, r.ctime_ns, r.hash, r.skip)
        if row is None:
            file_id = self._db.execute(
                "INSERT INTO files (size, mtime_ns, ctime_ns, hash, skip, path) VALUES (?, ?, ?, ?, ?, ?)",
                (*values, r.path),
            ).lastrowid
        else:
            file_id = row[0]
            self._db.execute(
                "UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ?, hash = ?, skip = ? WHERE id = ?",
                (*values, file_id),
            )
        if update.passages is None:
            return []
        dropped = self._passages_of(file_id) if row is not None else []
        self._db.execute("DELETE FROM passages WHERE file_id = ?", (file_id,))
        for p in update.passages:
            vector = np.ascontiguousarray(p.vector, dtype=np.float32).reshape(self.dim)
            passage_id = self._db.execute(
                "INSERT INTO passages (file_id, location, title, text, key, vector) VALUES (?, ?, ?, ?, ?, ?)",
                (file_id, p.location, p.title, p.text, p.key, vector.tobytes()),
            ).lastrowid
            added.append((passage_id, vector))
        return dropped

    def _drop_file(self, path: str) -> list[int]:
        row = self._db.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return []
        dropped = self._passages_of(row[0])
        self._db.execute("DELETE FROM passages WHERE file_id = ?", (row[0],))
        self._db.execute("DELETE FROM files WHERE id = ?", (row[0],))
        return dropped

    def _passages_of(self, file_id: int) -> list[int]:
        return [r[0] for r in self._db.execute("SELECT id FROM passages WHERE file_id = ?", (file_id,))]

    def save(self) -> None:
        """Write the FAISS snapshot of the current generation (call while holding ``lock()``)."""
        with self._mutex:
            generation, ids = self._committed_ids()
            if generation == self._saved_generation:
                return
            if generation != self._generation or not _same_ids(self._vectors, ids) or not _fits(self._vectors):
                self._rebuild()
            target = self.directory / f"vectors-{self._generation}.faiss"
            tmp = target.with_name(target.name + ".tmp")
            with open(tmp, "wb") as fh:
                fh.write(faiss.serialize_index(self._vectors).tobytes())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
            _fsync_dir(self.directory)
            for old in self.directory.glob("vectors-*"):
                if old != target:
                    old.unlink(missing_ok=True)
            self._saved_generation = self._generation

    def close(self) -> None:
        with self._mutex:
            self._db.close()

    def __enter__(self) -> PassageIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- loading -------------------------------------------------------------------------

    def _load_snapshot(self) -> bool:
        """Load the current generation's snapshot; rebuild from SQLite when it is missing,
        stale or damaged. Returns whether the snapshot was usable."""
        with self._mutex:
            generation, ids = self._committed_ids()
            path = self.directory / f"vectors-{generation}.faiss"
            try:
                vectors = faiss.read_index(str(path))
            except (RuntimeError, OSError):  # missing (a crash before saving) or damaged
                vectors = None
            if vectors is None or vectors.d != self.dim or not _same_ids(vectors, ids) or not _fits(vectors):
                self._rebuild()
                return False
            self._vectors = vectors
            self._generation = self._saved_generation = generation
            return True

    def _rebuild(self) -> None:
        with self._transaction(write=False):
            generation = int(self._meta_value("generation"))
            rows = self._db.execute("SELECT id, vector FROM passages ORDER BY id").fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), self.dim)
        del rows  # the blobs are copied into the matrix: do not hold them twice
        self._vectors = build_vectors(matrix, ids)
        self._generation = generation

    def _committed_ids(self) -> tuple[int, np.ndarray]:
        with self._transaction(write=False):  # one snapshot of the database for both reads
            generation = int(self._meta_value("generation"))
            ids = np.fromiter((r[0] for r in self._db.execute("SELECT id FROM passages ORDER BY id")), dtype=np.int64)
        return generation, ids

    def _refresh(self) -> None:
        if int(self._meta_value("generation")) != self._generation:
            self._rebuild()

    def _meta_value(self, key: str) -> str:
        return self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]

    @contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def stored_identity(directory: Path) -> str | None:
    """The embedder identity an index folder was built for, read without opening it for
    writing; None when it holds no readable index."""
    database = Path(directory) / _DB
    if not database.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def remove_index(directory: Path) -> int | None:
    """Deletes an index folder and returns the bytes it held; None, touching nothing, while
    another process writes it, and None when the system refuses the deletion (a file held
    open elsewhere, permissions): removing an index is never worth failing the caller."""
    directory = Path(directory)
    lock = FileLock(directory / _WRITE_LOCK)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    try:
        size = paths.disk_size(directory)
        shutil.rmtree(directory)
    except OSError:
        return None
    finally:
        lock.release()
    return size


def _initialise(conn: sqlite3.Connection, identity: str, dim: int) -> None:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in (*_SCHEMA.split(";"), *_lexical_schema(LEXICAL_TOKENIZER)):  # executescript would commit
            conn.execute(statement)
        conn.executemany(
            "INSERT OR IGNORE INTO meta VALUES (?, ?)",
            [
                ("schema", SCHEMA_VERSION),
                ("embedder", identity),
                ("dim", str(dim)),
                ("generation", "0"),
                ("lexical", LEXICAL_TOKENIZER),
            ],
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _check_identity(conn: sqlite3.Connection, directory: Path, identity: str, dim: int) -> None:
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("schema") != SCHEMA_VERSION:
        raise IndexMismatchError(
            f"the index in {directory} has format {meta.get('schema')!r}, this version reads "
            f"{SCHEMA_VERSION!r}; delete that folder and index again"
        )
    if meta.get("embedder") != identity or meta.get("dim") != str(dim):
        raise IndexMismatchError(
            f"the index in {directory} holds vectors of embedder {meta.get('embedder')!r}, "
            f"not {identity!r}; index again with that embedder or use a new index folder"
        )


def _empty(dim: int) -> faiss.Index:
    return faiss.IndexIDMap2(faiss.IndexFlatIP(dim))


def _lists(n: int) -> int:
    """IVF lists for n vectors: sqrt(n) keeps k-means training to about a minute at 1M."""
    return int(np.sqrt(n))


def build_vectors(matrix: np.ndarray, ids: np.ndarray) -> faiss.Index:
    """The FAISS index for these vectors: exact below ``ANN_THRESHOLD``, IVF above."""
    n, dim = matrix.shape
    if n < ANN_THRESHOLD:
        vectors = _empty(dim)
    else:
        lists = _lists(n)
        vectors = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).choice(n, min(n, lists * _TRAIN_PER_LIST), replace=False)
        vectors.train(matrix[np.sort(sample)])
        vectors.nprobe = NPROBE
    if n:
        vectors.add_with_ids(matrix, ids)
    return vectors


def _fits(vectors: faiss.Index) -> bool:
    """Whether the index type still suits its size (an IVF index may grow 4x before its lists are too few)."""
    ivf = isinstance(vectors, faiss.IndexIVF)
    if vectors.ntotal < ANN_THRESHOLD:
        return not ivf
    return ivf and vectors.nlist * 2 >= _lists(vectors.ntotal)


def _ids(vectors: faiss.Index) -> np.ndarray:
    if isinstance(vectors, faiss.IndexIVF):
        lists = vectors.invlists
        parts = [faiss.rev_swig_ptr(lists.get_ids(i), lists.list_size(i)).copy() for i in range(vectors.nlist)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return faiss.vector_to_array(vectors.id_map) if vectors.ntotal else np.empty(0, dtype=np.int64)


def _same_ids(vectors: faiss.Index, ids: np.ndarray) -> bool:
    stored = _ids(vectors)
    return len(stored) == len(ids) and bool(np.array_equal(np.sort(stored), ids))


@contextmanager
def _omp_threads(n: int) -> Iterator[None]:
    """A few queries are searched one vector at a time, bound by memory: more OpenMP threads
    only add barrier waits, worst on a busy machine (docs/performance.md)."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (POSIX; other systems have no directory handles)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _chunks(items: list) -> Iterator[list]:
    for start in range(0, len(items), _SQL_VARS):
        yield items[start : start + _SQL_VARS]


def _marks(items: list) -> str:
    return ", ".join("?" * len(items))
