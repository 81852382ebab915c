"""Indexes of a superseded embedder scheme are removed once the folder's own index is in
step; other embedders' and backends' indexes stay, and so does one another process writes."""

from __future__ import annotations

import json
import shutil
import threading

from filelock import FileLock

from iterretgen_tui import paths
from iterretgen_tui.commands.index import print_report
from iterretgen_tui.engine.embedding.onnx_export import IDENTITIES
from iterretgen_tui.engine.indexing.index import PassageIndex, stored_identity
from iterretgen_tui.engine.indexing.indexer import open_folder_index, sync_corpus, sync_folder
from iterretgen_tui.engine.indexing.superseded import superseded

from .fakes import HashEmbedder

BASE = "all-minilm-l6-v2:384:cosine"


def test_only_a_scheme_this_version_no_longer_makes_is_superseded():
    current_int8 = f"{BASE}:{IDENTITIES['int8']}"
    assert superseded(f"{BASE}:int8-fused", current_int8)
    assert superseded(f"{BASE}:int8-fused", BASE), "whichever backend runs now"
    assert not superseded(BASE, current_int8), "fp32 (torch, ONNX fp32) is current"
    assert not superseded(f"{BASE}:{IDENTITIES['openvino-int8']}", current_int8)
    assert not superseded(current_int8, BASE)
    assert not superseded(current_int8, current_int8)
    assert not superseded("bge-small:384:cosine:int8-fused", current_int8), "another model"
    assert not superseded(f"{BASE}x:int8-fused", BASE), "a name that only starts alike"


OLD_SCHEME = f"{HashEmbedder().identity}:int8-fused"


def _folder_with_an_old_index(tmp_path):
    """A folder of one note, and beside its future index one of a superseded scheme."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Harbour\nThe ferry leaves at noon.\n")
    emb = HashEmbedder()
    return folder, emb, _index_beside(folder, OLD_SCHEME, emb.dim)


def _index_beside(folder, identity: str, dim: int) -> str:
    directory = paths.embedder_index_dir(folder, identity)
    PassageIndex.open(directory, embedder_identity=identity, dim=dim).close()
    return str(directory)


def test_a_sync_removes_the_superseded_index_beside_it_and_keeps_the_others(tmp_path, capsys):
    folder, emb, old = _folder_with_an_old_index(tmp_path)
    held = _index_beside(folder, f"{emb.identity}:int8", emb.dim)
    kept = [
        _index_beside(folder, f"{emb.identity}:{IDENTITIES['openvino-int8']}", emb.dim),
        _index_beside(folder, f"other:{emb.dim}:cosine:int8-fused", emb.dim),
    ]
    index = open_folder_index(folder, emb)
    writer = FileLock(f"{held}/write.lock")
    writer.acquire()  # another process is writing that one: it stays for a later run
    try:
        report = sync_folder(folder, index, emb)
    finally:
        writer.release()
    assert [r.directory for r in report.removed_indexes] == [old]
    assert report.removed_indexes[0].embedder == OLD_SCHEME
    assert report.removed_indexes[0].bytes > 0
    assert not paths.embedder_index_dir(folder, OLD_SCHEME).joinpath("index.sqlite3").exists()
    assert all(stored_identity(d) is not None for d in [*kept, held, str(index.directory)])
    assert report.added == 1 and len(index) == 1, "the folder's own index is untouched"

    print_report(report, as_json=True)
    assert json.loads(capsys.readouterr().out)["removed_indexes"][0]["path"] == old
    print_report(report, as_json=False)
    assert "Removed an index built by an earlier version of the embedder (" in capsys.readouterr().out

    again = sync_folder(folder, index, emb)
    assert [r.directory for r in again.removed_indexes] == [held] and again.removed_note().startswith(
        "Removed an index"
    )
    assert sync_folder(folder, index, emb).removed_note() == ""
    index.close()


def test_a_dataset_index_in_step_removes_the_superseded_ones_beside_it(tmp_path):
    emb = HashEmbedder()
    old_dir = paths.dataset_index_dir(tmp_path / "set", OLD_SCHEME)
    PassageIndex.open(old_dir, embedder_identity=OLD_SCHEME, dim=emb.dim).close()
    other = paths.dataset_index_dir(tmp_path / "set", f"other:{emb.dim}:cosine")
    PassageIndex.open(other, embedder_identity=f"other:{emb.dim}:cosine", dim=emb.dim).close()
    with PassageIndex.open(
        paths.dataset_index_dir(tmp_path / "set", emb.identity), embedder_identity=emb.identity, dim=emb.dim
    ) as index:
        report = sync_corpus(index, [("d1", "Harbour", "The ferry leaves at noon.")], emb)
    assert [r.directory for r in report.removed_indexes] == [str(old_dir)] and report.added == 1
    assert stored_identity(old_dir) is None and stored_identity(other) is not None


def test_a_cancelled_sync_removes_nothing(tmp_path):
    folder, emb, old = _folder_with_an_old_index(tmp_path)
    cancel = threading.Event()
    cancel.set()
    with open_folder_index(folder, emb) as index:
        report = sync_folder(folder, index, emb, cancel=cancel)
    assert report.cancelled and not report.removed_indexes
    assert stored_identity(old) == OLD_SCHEME


def test_a_removal_the_system_refuses_leaves_the_sync_and_the_old_index_as_they_were(tmp_path, monkeypatch):
    folder, emb, old = _folder_with_an_old_index(tmp_path)

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "held open by another program", str(path))

    monkeypatch.setattr(shutil, "rmtree", refuse)
    with open_folder_index(folder, emb) as index:
        report = sync_folder(folder, index, emb)
    assert report.added == 1 and not report.removed_indexes and not report.cancelled
    assert stored_identity(old) == OLD_SCHEME
