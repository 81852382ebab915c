"""The FAISS index type follows the index size; ids and results survive the switch."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from iterretgen_tui.engine.indexing import index as index_module
from iterretgen_tui.engine.indexing.index import FileRecord, FileUpdate, NewPassage, PassageIndex, build_vectors

DIM = 16
THRESHOLD = 400  # the real one is 50,000: the switch is the same, the test stays fast


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(index_module, "ANN_THRESHOLD", THRESHOLD)


def clustered(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, DIM))
    x = centres[rng.integers(0, 20, n)] + 0.3 * rng.normal(size=(n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def file_update(name: str, vectors: np.ndarray) -> FileUpdate:
    passages = [NewPassage(name, f"{name} passage {i}", str(i), f"{name}-{i}", v) for i, v in enumerate(vectors)]
    return FileUpdate(FileRecord(f"/docs/{name}", 1, 1, 1, name), passages)


def kind(index: PassageIndex) -> str:
    return "ivf" if isinstance(index._vectors, faiss.IndexIVF) else "flat"


def test_build_picks_exact_below_the_threshold_and_ivf_above_keeping_ids():
    ids = np.arange(THRESHOLD, dtype=np.int64) * 5 + 3
    small = build_vectors(clustered(THRESHOLD - 1), ids[:-1])
    large = build_vectors(clustered(THRESHOLD), ids)
    assert isinstance(small, faiss.IndexIDMap2) and isinstance(large, faiss.IndexIVFFlat)
    assert large.nprobe == index_module.NPROBE
    assert np.array_equal(np.sort(index_module._ids(large)), ids)
    assert np.array_equal(np.sort(index_module._ids(small)), ids[:-1])


def test_ivf_finds_what_exact_search_finds():
    vectors = clustered(2000)
    ids = np.arange(2000, dtype=np.int64) + 100
    ivf = build_vectors(vectors, ids)
    exact = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    exact.add_with_ids(vectors, ids)
    queries = clustered(50, seed=1)
    _, truth = exact.search(queries, 10)
    _, found = ivf.search(queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found.tolist(), truth.tolist())])
    assert recall >= 0.95
    _, self_hits = ivf.search(vectors[:20], 1)
    assert self_hits[:, 0].tolist() == ids[:20].tolist()


def test_the_index_switches_kind_as_it_grows_and_shrinks(tmp_path):
    vectors = clustered(THRESHOLD + 100)
    with PassageIndex.open(tmp_path, embedder_identity="test", dim=DIM) as index:
        with index.lock():
            index.commit([file_update("a", vectors[:300])])
        assert kind(index) == "flat"
        with index.lock():
            index.commit([file_update("b", vectors[300:])])
        assert kind(index) == "ivf" and len(index) == THRESHOLD + 100  # switched when the snapshot was saved
        with index.lock():  # incremental commits work on IVF: replace a file, ids stay consistent
            index.commit([file_update("b", vectors[300:350])])
            assert kind(index) == "ivf" and len(index) == 350
            [hits] = index.search(vectors[310:311], 3)
            assert hits[0].text == "b passage 10"
            saved_ids = set(index_module._ids(index._vectors).tolist())
        assert kind(index) == "flat"  # below the threshold again: the saved snapshot is exact

    with PassageIndex.open(tmp_path, embedder_identity="test", dim=DIM) as index:
        assert kind(index) == "flat" and index._load_snapshot()
        assert {p.id for p in index.passages(saved_ids)} == saved_ids
        assert index.search(vectors[310:311], 1)[0][0].text == "b passage 10"


def test_an_ivf_snapshot_is_loaded_without_rebuilding(tmp_path):
    vectors = clustered(THRESHOLD * 2)
    with PassageIndex.open(tmp_path, embedder_identity="test", dim=DIM) as index, index.lock():
        index.commit([file_update("a", vectors)])
    with PassageIndex.open(tmp_path, embedder_identity="test", dim=DIM) as index:
        assert kind(index) == "ivf" and index._load_snapshot()  # the saved snapshot fits
        assert index.search(vectors[:1], 1)[0][0].text == "a passage 0"
