"""PassageIndex: SQLite + FAISS storage, snapshots, identity checks, the write lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from iterretgen_tui.engine.indexing.index import (
    FileRecord,
    FileUpdate,
    IndexLockedError,
    IndexMismatchError,
    NewPassage,
    PassageIndex,
)

from .fakes import HashEmbedder

EMB = HashEmbedder(dim=32)


def open_index(directory: Path, identity: str = EMB.identity, dim: int = EMB.dim) -> PassageIndex:
    return PassageIndex.open(directory, embedder_identity=identity, dim=dim)


def update(path: str, *texts: str, hash_: str = "h") -> FileUpdate:
    vectors = EMB.embed_batch(list(texts))
    new = [NewPassage(f"title {t}", t, f"line {i + 1}", f"key-{t}", v) for i, (t, v) in enumerate(zip(texts, vectors))]
    return FileUpdate(FileRecord(path, len(texts), 1, 1, hash_), new)


def consistency(directory: Path, index: PassageIndex) -> None:
    """Every vector id has a passage and every passage a vector; the keyword index holds
    exactly the passages' titles and texts."""
    with sqlite3.connect(directory / "index.sqlite3") as db:
        stored = {row[0] for row in db.execute("SELECT id FROM passages")}
        orphans = db.execute("SELECT COUNT(*) FROM passages WHERE file_id NOT IN (SELECT id FROM files)").fetchone()
        # rank 1: also compare the index with its content table (raises "malformed" if they differ)
        db.execute("INSERT INTO lexical (lexical, rank) VALUES ('integrity-check', 1)")
    assert orphans == (0,)
    assert len(index) == len(stored)
    if stored:
        found = index.search(np.ones((1, index.dim), dtype=np.float32), len(stored))[0]
        assert {p.id for p in found} == stored


def test_search_ranks_passages_and_reports_sources(tmp_path):
    with open_index(tmp_path) as index, index.lock():
        index.commit([update("/docs/a.txt", "red apples", "green pears"), update("/docs/b.txt", "blue sky")])
        [hits] = index.search(EMB.embed_queries(["green pears"]), 2)
        assert hits[0].text == "green pears" and len(hits) == 2
        assert hits[0].source == "/docs/a.txt" and hits[0].location == "line 2" and hits[0].title == "title green pears"
        assert hits[0].score >= hits[1].score
        assert len(index) == 3 and index.file_count() == 2
        assert [p.text for p in index.passages([hits[0].id, 999, hits[1].id])] == [hits[0].text, hits[1].text]
        assert index.search(EMB.embed_queries(["x"]), 10)[0].__len__() == 3  # k above the count


def test_empty_index_searches_to_nothing(tmp_path):
    with open_index(tmp_path) as index:
        assert index.search(EMB.embed_queries(["a", "b"]), 5) == [[], []]
        assert len(index) == 0 and index.file_count() == 0
        with pytest.raises(ValueError):
            index.search(np.zeros((1, 7), dtype=np.float32), 5)


def test_replacing_and_removing_files(tmp_path):
    with open_index(tmp_path) as index, index.lock():
        index.commit([update("/a", "one", "two"), update("/b", "three")])
        old_ids = {p.id for p in index.search(EMB.embed_queries(["one"]), 5)[0]}
        index.commit([update("/a", "four")], removed=["/b"])
        texts = {p.text for p in index.search(EMB.embed_queries(["one"]), 5)[0]}
        assert texts == {"four"}
        new_id = index.search(EMB.embed_queries(["four"]), 1)[0][0].id
        assert new_id not in old_ids, "passage ids are never reused"
        assert set(index.files()) == {"/a"}
        consistency(tmp_path, index)


def test_a_stat_only_update_keeps_the_passages(tmp_path):
    with open_index(tmp_path) as index, index.lock():
        index.commit([update("/a", "one")])
        index.commit([FileUpdate(FileRecord("/a", 9, 9, 9, "h"), None)])
        assert index.files()["/a"].mtime_ns == 9 and len(index) == 1


def test_vectors_are_found_by_key(tmp_path):
    with open_index(tmp_path) as index, index.lock():
        index.commit([update("/a", "alpha")])
        found = index.vectors_for(["key-alpha", "key-missing"])
        assert set(found) == {"key-alpha"}
        np.testing.assert_allclose(found["key-alpha"], EMB.embed_batch(["alpha"])[0])


def test_reopening_loads_the_snapshot(tmp_path):
    with open_index(tmp_path) as index, index.lock():
        index.commit([update("/a", "alpha", "beta")])
    snapshots = list(tmp_path.glob("vectors-*.faiss"))
    assert len(snapshots) == 1, "one snapshot, the old ones removed"
    with open_index(tmp_path) as again:
        assert again._load_snapshot(), "the saved snapshot matches the database"
        consistency(tmp_path, again)


@pytest.mark.parametrize("damage", ["missing", "garbage", "stale"])
def test_a_bad_snapshot_is_rebuilt_from_sqlite(tmp_path, damage):
    with open_index(tmp_path) as index, index.lock():
        index.commit([update("/a", "alpha", "beta")])
    [snapshot] = tmp_path.glob("vectors-*.faiss")
    if damage == "missing":
        snapshot.unlink()
    elif damage == "garbage":
        snapshot.write_bytes(b"not a faiss index")
    else:  # a commit that never reached a snapshot (a crash before the lock was released)
        writer = open_index(tmp_path)
        writer.commit([update("/b", "gamma")])
        writer._db.close()
    with open_index(tmp_path) as again:
        consistency(tmp_path, again)
        assert len(again) == (3 if damage == "stale" else 2)
    assert len(list(tmp_path.glob("vectors-*.faiss"))) == 1, "opening saved a fresh snapshot"


def test_another_embedder_is_refused(tmp_path):
    open_index(tmp_path).close()
    with pytest.raises(IndexMismatchError, match="holds vectors of embedder 'hash:32:cosine'"):
        open_index(tmp_path, identity="minilm:384:cosine", dim=384)
    with pytest.raises(IndexMismatchError):
        open_index(tmp_path, dim=16)


def test_a_damaged_database_is_refused_clearly(tmp_path):
    (tmp_path / "index.sqlite3").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(IndexMismatchError, match="is damaged"):
        open_index(tmp_path)


def test_a_reader_sees_what_another_writer_committed(tmp_path):
    reader = open_index(tmp_path)
    with open_index(tmp_path) as writer, writer.lock():
        writer.commit([update("/a", "alpha")])
    assert [p.text for p in reader.search(EMB.embed_queries(["alpha"]), 3)[0]] == ["alpha"]
    reader.close()


def test_a_stale_writer_catches_up_when_it_takes_the_lock(tmp_path):
    first, second = open_index(tmp_path), open_index(tmp_path)
    with first.lock():
        first.commit([update("/a", "alpha")])
    with second.lock():
        second.commit([update("/b", "beta")])
        consistency(tmp_path, second)
        assert len(second) == 2
    first.close(), second.close()


def test_the_lock_excludes_a_second_writer(tmp_path):
    holder, other = open_index(tmp_path), open_index(tmp_path)
    with holder.lock():
        with pytest.raises(IndexLockedError, match="another process"):
            with other.lock(timeout=0):
                pass
        with pytest.raises(IndexLockedError, match="kept the index locked"):
            with other.lock(timeout=0.3):
                pass
    with other.lock(timeout=0):
        pass  # free again once released
    holder.close(), other.close()


def test_a_waiting_writer_says_so_then_proceeds(tmp_path):
    holder, other = open_index(tmp_path), open_index(tmp_path)
    messages, got_it = [], threading.Event()

    def wait_for_lock():
        with other.lock(on_wait=messages.append):
            got_it.set()

    with holder.lock():
        waiter = threading.Thread(target=wait_for_lock)
        waiter.start()
        time.sleep(0.5)
        assert not got_it.is_set()
        assert messages and "waiting" in messages[0]
    waiter.join(5)
    assert got_it.is_set()
    holder.close(), other.close()


def test_cancel_stops_the_wait(tmp_path):
    holder, other = open_index(tmp_path), open_index(tmp_path)
    cancel = threading.Event()
    with holder.lock():
        threading.Timer(0.3, cancel.set).start()
        with pytest.raises(IndexLockedError, match="stopped while waiting"):
            with other.lock(cancel=cancel):
                pass
    holder.close(), other.close()
