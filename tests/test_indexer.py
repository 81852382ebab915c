"""Syncing folders and corpora: formats, incremental updates, crashes, the lock, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from iterretgen_tui import cli, paths
from iterretgen_tui.engine.indexing import indexer
from iterretgen_tui.engine.indexing.chunking import ChunkOptions
from iterretgen_tui.engine.indexing.index import IndexLockedError, PassageIndex
from iterretgen_tui.engine.indexing.indexer import needs_sync, open_folder_index, sync_corpus, sync_folder, watch_folder

from . import docfolder
from .fakes import HashEmbedder
from .test_index import consistency

REPO = Path(__file__).resolve().parent.parent


def embedded(embedder: HashEmbedder) -> int:
    return sum(len(call) for call in embedder.calls)


def all_passages(index) -> set[tuple[str, str, str]]:
    found = index.search(HashEmbedder().embed_queries(["anything"]), max(len(index), 1))[0]
    return {(p.source, p.location, p.text) for p in found}


def write_words(path: Path, word: str, count: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"{word}{i}{j}" for j in range(10)) for i in range(count // 10)))


@pytest.fixture
def docs(tmp_path) -> Path:
    return docfolder.build(tmp_path / "docs")


@pytest.fixture
def emb() -> HashEmbedder:
    return HashEmbedder()


def sync(folder, embedder, **kwargs):
    index = open_folder_index(folder, embedder)
    return index, sync_folder(folder, index, embedder, max_bytes=docfolder.SMALL_CAP, **kwargs)


def test_the_fixture_folder_indexes_every_format_and_skips_every_broken_input(docs, emb):
    index, report = sync(docs, emb)
    data = report.to_json()
    assert set(data) == {"files", "passages", "ocr_pages", "seconds", "removed_indexes"}
    assert data["removed_indexes"] == []
    assert set(data["files"]) == {"indexed", "unchanged", "added", "updated", "removed", "skipped"}
    assert data["files"]["indexed"] == data["files"]["added"] == len(docfolder.GOOD)
    skipped = {str(Path(s["path"]).relative_to(docs)): s["reason"] for s in data["files"]["skipped"]}
    assert set(skipped) == set(docfolder.BROKEN)
    for name, reason in docfolder.BROKEN.items():
        assert skipped[name].startswith(reason), name
    passages = all_passages(index)
    for name, word in docfolder.GOOD.items():
        assert {source for source, _, text in passages if word in text} == {str(docs / name)}
    assert data["passages"] == len(index) > len(docfolder.GOOD)
    assert not any("hidden" in text for _, _, text in passages)
    consistency(index.directory, index)


def test_a_second_run_reads_and_embeds_nothing(docs, emb):
    index, _ = sync(docs, emb)
    emb.calls.clear()
    assert not needs_sync(docs, index)
    report = sync_folder(docs, index, emb, max_bytes=docfolder.SMALL_CAP)
    assert emb.calls == []
    files = report.to_json()["files"]
    assert (files["unchanged"], files["added"], files["updated"], files["removed"]) == (len(docfolder.GOOD), 0, 0, 0)
    assert len(files["skipped"]) == len(docfolder.BROKEN), "skips are reported on every run"


def test_an_edited_file_has_its_passages_replaced(tmp_path, emb):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 300)
    write_words(folder / "b.txt", "beta", 50)
    index, _ = sync(folder, emb)
    emb.calls.clear()
    (folder / "b.txt").write_text("gamma delta epsilon")
    assert needs_sync(folder, index)
    report = sync_folder(folder, index, emb)
    assert (report.updated, report.unchanged, report.added) == (1, 1, 0)
    assert emb.calls == [["gamma delta epsilon"]]
    texts = {text for source, _, text in all_passages(index) if source.endswith("b.txt")}
    assert texts == {"gamma delta epsilon"}, "no stale passage of the old version"


def test_an_edit_reuses_the_vectors_of_unchanged_sections(tmp_path, emb):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# One\nfirst section text\n# Two\nsecond section text\n")
    index, _ = sync(folder, emb)
    emb.calls.clear()
    (folder / "a.md").write_text("# One\nfirst section text\n# Two\nsecond section, edited\n")
    sync_folder(folder, index, emb)
    assert emb.calls == [["Two\n# Two\nsecond section, edited"]]  # two top-level sections: neither titles the file


def test_a_deleted_file_never_answers_again(tmp_path, emb):
    folder = tmp_path / "docs"
    write_words(folder / "keep.txt", "keep", 30)
    (folder / "gone.txt").write_text("the unicorn lives here")
    index, _ = sync(folder, emb)
    (folder / "gone.txt").unlink()
    assert needs_sync(folder, index)
    report = sync_folder(folder, index, emb)
    assert (report.removed, report.indexed) == (1, 1)
    assert all("unicorn" not in p.text for p in index.search(emb.embed_queries(["unicorn"]), 10)[0])
    consistency(index.directory, index)


def test_an_added_file_is_indexed(tmp_path, emb):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 30)
    index, _ = sync(folder, emb)
    (folder / "sub").mkdir()
    (folder / "sub" / "new.txt").write_text("a fresh zebra appears")
    assert needs_sync(folder, index)
    report = sync_folder(folder, index, emb)
    assert (report.added, report.unchanged, report.indexed) == (1, 1, 2)
    assert index.search(emb.embed_queries(["zebra"]), 1)[0][0].source == str(folder / "sub" / "new.txt")


def test_a_renamed_or_moved_file_reuses_its_vectors(tmp_path, emb):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 250)
    (folder / "notes.md").write_text("# Title\nsome markdown words\n")
    index, _ = sync(folder, emb)
    before = {(loc, text) for _, loc, text in all_passages(index)}
    emb.calls.clear()
    (folder / "moved").mkdir()
    (folder / "a.txt").rename(folder / "moved" / "renamed.txt")
    (folder / "notes.md").rename(folder / "notes-2024.md")
    report = sync_folder(folder, index, emb)
    assert emb.calls == [], "nothing is embedded again"
    assert (report.added, report.removed, report.indexed) == (2, 2, 2)
    assert {(loc, text) for _, loc, text in all_passages(index)} == before
    assert {Path(s).name for s, _, _ in all_passages(index)} == {"renamed.txt", "notes-2024.md"}
    titles = {p.title for p in index.search(emb.embed_queries(["alpha00"]), 10)[0]}
    assert titles == {"renamed.txt", "Title"}, "a file-name title follows the new name"
    consistency(index.directory, index)


def test_a_touched_file_is_hashed_not_reparsed(tmp_path, emb, monkeypatch):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 30)
    index, _ = sync(folder, emb)
    os.utime(folder / "a.txt", ns=(1, 1))
    assert needs_sync(folder, index)
    monkeypatch.setattr(indexer, "passages", lambda *a, **k: pytest.fail("re-parsed an unchanged file"))
    report = sync_folder(folder, index, emb)
    assert (report.unchanged, report.updated) == (1, 0)
    assert not needs_sync(folder, index), "the new stat is remembered"


def test_a_file_that_turns_binary_loses_its_passages(tmp_path, emb):
    folder = tmp_path / "docs"
    (folder).mkdir()
    (folder / "a.txt").write_text("readable words")
    index, _ = sync(folder, emb)
    (folder / "a.txt").write_bytes(b"\x00\x01binary now")
    report = sync_folder(folder, index, emb)
    assert (report.removed, report.indexed, len(index)) == (1, 0, 0)
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [("a.txt", "binary file")]
    assert not needs_sync(folder, index), "a skipped file is remembered, not retried every time"


def test_files_vanishing_during_a_run(tmp_path, emb, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.txt", "b.txt"):
        (folder / name).write_text(f"words of {name}")
    index, _ = sync(folder, emb)
    (folder / "b.txt").write_text("b was edited")
    (folder / "c.txt").write_text("c is new")
    real_read = indexer.read

    def read_after_delete(entry, max_bytes):
        entry.path.unlink()  # gone between the scan and the read
        return real_read(entry, max_bytes)

    monkeypatch.setattr(indexer, "read", read_after_delete)
    report = sync_folder(folder, index, emb)
    assert (report.removed, report.added, report.indexed) == (1, 0, 1)
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [
        ("b.txt", "vanished while being read"),
        ("c.txt", "vanished while being read"),
    ]
    assert {Path(source).name for source, _, _ in all_passages(index)} == {"a.txt"}
    consistency(index.directory, index)


def test_an_index_inside_its_own_folder_is_left_out(tmp_path, emb, monkeypatch):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 30)
    monkeypatch.setenv("ITERRETGEN_HOME", str(folder / "appdata"))
    index, report = sync(folder, emb)
    assert report.indexed == 1 and report.skipped == []
    assert not needs_sync(folder, index), "the index's own writes are no change to the folder"


def test_new_passage_settings_reprocess_every_file(tmp_path, emb):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 250)
    index, _ = sync(folder, emb)
    assert needs_sync(folder, index, ChunkOptions(50, 10))
    report = sync_folder(folder, index, emb, chunking=ChunkOptions(50, 10))
    assert report.updated == 1 and len(index) == 6
    assert not needs_sync(folder, index, ChunkOptions(50, 10))


@pytest.mark.parametrize(
    "version, again", [("MARKUP_VERSION", "notes.md"), ("PDF_VERSION", "paper.pdf"), ("PLAIN_VERSION", "plain.csv")]
)
def test_a_newer_reader_reads_its_files_again_and_nothing_else(tmp_path, emb, monkeypatch, version, again):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Otters\n<!-- draft: badgers -->\nOtters swim at dusk.\n", "utf-8")
    (folder / "plain.csv").write_text("bird,place\nheron,river\n", "utf-8")
    (folder / "paper.pdf").write_bytes(docfolder.pdf_bytes([["Herons wade at dawn."]]))
    monkeypatch.setattr(indexer, version, "older")
    index, _ = sync(folder, emb)
    monkeypatch.undo()
    assert needs_sync(folder, index)
    read_paths = []
    real_read = indexer.read
    monkeypatch.setattr(indexer, "read", lambda entry, cap: read_paths.append(entry.path.name) or real_read(entry, cap))
    report = sync_folder(folder, index, emb)
    assert read_paths == [again] and report.updated == 1 and report.unchanged == 2
    assert not needs_sync(folder, index)
    assert not any("badgers" in text for _, _, text in all_passages(index))


def test_progress_is_reported(tmp_path, emb):
    folder = tmp_path / "docs"
    for n in range(5):
        write_words(folder / f"f{n}.txt", f"w{n}x", 200)
    seen = []
    sync(folder, emb, progress=seen.append)
    assert seen and all(p.files_total == 5 for p in seen)
    assert seen[-1].files_done == 5 and seen[-1].passages_done == 15
    assert [p.passages_done for p in seen] == sorted(p.passages_done for p in seen)
    assert seen[-1].eta_seconds == 0 and seen[-1].rate > 0
    assert any(p.current.endswith("f3.txt") for p in seen)


def test_cancel_keeps_the_committed_batches_and_a_rerun_finishes(tmp_path, emb, monkeypatch):
    monkeypatch.setattr(indexer, "BATCH_PASSAGES", 4)
    folder = tmp_path / "docs"
    for n in range(10):
        write_words(folder / f"f{n}.txt", f"w{n}x", 200)  # 3 passages each
    cancel = threading.Event()

    def stop_after_two_commits(p):
        if p.files_done >= 4:
            cancel.set()

    index, report = sync(folder, emb, cancel=cancel, progress=stop_after_two_commits)
    assert report.cancelled and 0 < report.indexed < 10
    committed = len(index)
    consistency(index.directory, index)
    emb.calls.clear()
    report = sync_folder(folder, index, emb)
    assert not report.cancelled and report.indexed == 10 and len(index) == 30
    assert embedded(emb) == 30 - committed, "committed work is not embedded again"


def test_sync_corpus_is_one_passage_per_document_and_cached(emb):
    docs = [
        ("d1", "Paris", "Paris is the capital of France."),
        ("d2", "Rome", "Rome is in Italy."),
        ("d3", "Empty", "  "),
        ("d1", "Dup", "a duplicate id"),
    ]
    index = PassageIndex.open(paths.data_dir() / "corpus", embedder_identity=emb.identity, dim=emb.dim)
    report = sync_corpus(index, docs, emb)
    assert (report.added, report.indexed, len(index)) == (2, 2, 2)
    assert sorted((s.path, s.reason) for s in report.skipped) == [
        ("d1", "duplicate document id"),
        ("d3", "empty document"),
    ]
    [top] = index.search(emb.embed_queries(["capital of France"]), 1)
    assert (top[0].source, top[0].title, top[0].text, top[0].location) == (
        "d1",
        "Paris",
        "Paris is the capital of France.",
        "",
    )
    emb.calls.clear()
    report = sync_corpus(index, docs, emb)
    assert emb.calls == [] and report.unchanged == 2
    report = sync_corpus(index, [("d1", "Paris", "Paris is the capital of France!"), ("d4", "Oslo", "Oslo.")], emb)
    assert (report.updated, report.added, report.removed, report.indexed) == (1, 1, 1, 2)
    assert embedded(emb) == 2


def test_watch_follows_changes(tmp_path, emb):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 20)
    index, _ = sync(folder, emb)
    cancel, reports = threading.Event(), []
    watcher = threading.Thread(
        target=watch_folder,
        args=(folder, index, emb),
        kwargs=dict(on_report=reports.append, cancel=cancel, debounce_ms=100),
    )
    watcher.start()
    try:
        time.sleep(0.5)  # let the watcher start
        (folder / "new.txt").write_text("a watched walrus")
        deadline = time.monotonic() + 10
        while not any(r.added for r in reports) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        cancel.set()
        watcher.join(10)
    assert not watcher.is_alive()
    assert any(r.added == 1 for r in reports)
    assert index.search(emb.embed_queries(["walrus"]), 1)[0][0].source.endswith("new.txt")


# -- other processes: the lock and crashes --------------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    sys.path.insert(0, {repo!r})
    from tests.fakes import HashEmbedder
    from iterretgen_tui.engine.indexing import index as index_module, indexer
    from iterretgen_tui.engine.indexing.indexer import open_folder_index, sync_folder

    point, _, nth = os.environ.get("CRASH_AT", "").partition(":")
    hits = {{}}

    def at(name):
        hits[name] = hits.get(name, 0) + 1
        if name == point and hits[name] == int(nth):
            os.kill(os.getpid(), signal.SIGKILL)

    class Slow(HashEmbedder):
        def embed_batch(self, texts, *, queries=False):
            at("embed")
            time.sleep(0.1)
            return super().embed_batch(texts, queries=queries)

    write_file = index_module.PassageIndex._write_file
    def in_commit(self, update, added):
        dropped = write_file(self, update, added)
        at("in-commit")  # inside the transaction, before COMMIT
        return dropped
    index_module.PassageIndex._write_file = in_commit

    commit = index_module.PassageIndex.commit
    def after_commit(self, *args, **kwargs):
        commit(self, *args, **kwargs)
        at("after-commit")
    index_module.PassageIndex.commit = after_commit

    replace = os.replace
    def snapshot_rename(src, dst):
        at("snapshot-rename")  # the new snapshot written, not yet renamed into place
        return replace(src, dst)
    index_module.os.replace = snapshot_rename

    indexer.BATCH_PASSAGES = 6
    folder = sys.argv[1]
    embedder = Slow()
    index = open_folder_index(folder, embedder)
    if os.environ.get("CLI"):
        from iterretgen_tui import cli, paths
        from iterretgen_tui.session import Session

        def load_embedder(self, status=None):
            self.embedder = embedder
        Session.load_embedder = load_embedder
        print("started", flush=True)
        sys.exit(cli.main(["index", folder, *os.environ["CLI"].split()]))
    if os.environ.get("HOLD_LOCK"):
        with index.lock():
            print("locked", flush=True)
            time.sleep(float(os.environ["HOLD_LOCK"]))
        sys.exit(0)
    print("started", flush=True)
    sync_folder(folder, index, embedder)
    print("finished", flush=True)
    """
)


def spawn(tmp_path: Path, folder: Path, **env) -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(repo=str(REPO)))
    return subprocess.Popen(
        [sys.executable, str(script), str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **{k: str(v) for k, v in env.items()}},
    )


def lexical_files(index) -> set[str]:
    """The files whose own words (w<n>x...) a keyword search finds, each in all its passages."""
    found = set()
    for n in range(24):
        hits = index.lexical_search(f"w{n}x*", 10)  # a prefix query: every word of file n
        if hits:
            assert {Path(p.source).stem for p in hits} == {f"f{n:02d}"} and len(hits) == 3
            found.add(f"f{n:02d}")
    return found


def corpus_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    for n in range(24):
        write_words(folder / f"f{n:02d}.txt", f"w{n}x", 200)  # 3 passages each
    return folder


@pytest.mark.parametrize(
    "crash",
    ["embed:4", "in-commit:7", "after-commit:3", "snapshot-rename:2", "kill:0.2", "kill:0.5", "kill:0.9"],
)
def test_a_killed_run_leaves_a_consistent_index_that_resumes(tmp_path, crash):
    folder = corpus_folder(tmp_path)
    point, _, value = crash.partition(":")
    child = spawn(tmp_path, folder, CRASH_AT=crash if point != "kill" else "")
    assert child.stdout.readline().strip() == "started"
    if point == "kill":
        time.sleep(float(value))
        child.send_signal(signal.SIGKILL)
    child.wait(30)
    assert child.returncode == -signal.SIGKILL, "the child was killed before it finished"

    emb = HashEmbedder()
    index = open_folder_index(folder, emb)
    consistency(index.directory, index)
    committed = len(index)
    assert committed < 72 or point == "snapshot-rename"
    assert lexical_files(index) == {Path(p.source).stem for p in index.passages(range(1, 200))}
    report = sync_folder(folder, index, emb)
    assert report.indexed == 24 and len(index) == 72
    assert embedded(emb) == 72 - committed, "only uncommitted work is embedded again"
    consistency(index.directory, index)
    assert lexical_files(index) == {f"f{n:02d}" for n in range(24)}
    fresh = HashEmbedder()
    clean = PassageIndex.open(tmp_path / "clean", embedder_identity=fresh.identity, dim=fresh.dim)
    sync_folder(folder, clean, fresh)
    assert all_passages(index) == all_passages(clean)


def test_ctrl_c_stops_the_cli_cleanly_and_a_rerun_resumes(tmp_path):
    folder = corpus_folder(tmp_path)
    emb = HashEmbedder()
    index = open_folder_index(folder, emb)
    child = spawn(tmp_path, folder, CLI=" ")
    assert child.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 30
    while index.file_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # interrupt once a batch is committed
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 130 and out.startswith("stopped early: ")
    consistency(index.directory, index)
    committed = len(index)
    assert 0 < committed < 72
    sync_folder(folder, index, emb)
    assert len(index) == 72 and embedded(emb) == 72 - committed


def test_cli_watch_prints_a_summary_per_change_until_ctrl_c(tmp_path):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 30)
    child = spawn(tmp_path, folder, CLI="--watch --json")
    try:
        assert child.stdout.readline().strip() == "started"
        assert json.loads(child.stdout.readline())["files"]["added"] == 1
        time.sleep(1)  # the watcher starts after the first summary
        (folder / "b.txt").write_text("a watched walrus")
        assert json.loads(child.stdout.readline())["files"]["added"] == 1
        child.send_signal(signal.SIGINT)
        assert child.wait(30) == 0
    finally:
        child.kill()


def test_a_second_process_waits_for_the_lock_or_fails_clearly(tmp_path, emb):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 30)
    index = open_folder_index(folder, emb)
    holder = spawn(tmp_path, folder, HOLD_LOCK=1.5)
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(IndexLockedError, match=f"pid {holder.pid}"):
        sync_folder(folder, index, emb, lock_timeout=0)
    messages = []
    started = time.monotonic()
    report = sync_folder(folder, index, emb, on_wait=messages.append)
    assert report.indexed == 1 and time.monotonic() - started > 0.5
    assert len(messages) == 1 and "waiting" in messages[0] and str(holder.pid) in messages[0]
    holder.wait(10)


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def fake_embedder(monkeypatch):
    from iterretgen_tui.session import Session

    def load_embedder(self, status=lambda message: None):
        self.embedder = HashEmbedder()

    monkeypatch.setattr(Session, "load_embedder", load_embedder)


def test_cli_json_prints_one_object_and_no_progress(tmp_path, capsys, fake_embedder):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 150)
    assert cli.main(["index", str(folder), "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["files"]["added"] == 1 and data["passages"] == 2
    assert err == ""
    assert cli.main(["index", str(folder)]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("1 file indexed (0 added, 0 updated, 0 removed, 1 unchanged), 2 passages")
    write_words(folder / "b.txt", "beta", 30)
    assert cli.main(["index", str(folder)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("indexing: 0/1 files, 0 passages"), "progress goes to stderr"


@pytest.mark.parametrize("target, message", [("missing", "folder not found"), ("file.txt", "not a folder")])
def test_cli_refuses_bad_folders_in_one_line(tmp_path, capsys, fake_embedder, target, message):
    (tmp_path / "file.txt").write_text("x")
    assert cli.main(["index", str(tmp_path / target)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_no_wait_exits_clearly_when_locked(tmp_path, capsys, fake_embedder):
    folder = tmp_path / "docs"
    write_words(folder / "a.txt", "alpha", 30)
    index = open_folder_index(folder, HashEmbedder())
    with index.lock():
        assert cli.main(["index", str(folder), "--no-wait"]) == 2
    err = capsys.readouterr().err
    assert "another process" in err and "is updating the index" in err


@pytest.mark.slow
def test_index_command_with_the_real_embedder_builds_the_index_ask_uses(docs):
    result = subprocess.run(
        [sys.executable, "-m", "iterretgen_tui", "index", str(docs), "--json", "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    files = json.loads(result.stdout)["files"]
    assert files["indexed"] == len(docfolder.GOOD) + 1, "huge.txt is under the default size cap"
    from iterretgen_tui import config
    from iterretgen_tui.session import Session

    session = Session(config.load({"device": "cpu"}))
    session.load_embedder()
    index = open_folder_index(docs, session.embedder)
    assert len(index) == json.loads(result.stdout)["passages"], "`ask` finds the index `index` built"
    [hits] = index.search(session.embedder.embed_queries(["Which animal has one hump?"]), 1)
    assert hits[0].source == str(docs / "paper.pdf") and hits[0].location == "p. 2"
