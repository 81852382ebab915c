""".iterretgenignore files: gitignore's patterns leave files and folders out of the index,
say so in the report, and a change to them is followed on the next index (and by --watch)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from iterretgen_tui import cli
from iterretgen_tui.engine.indexing.documents import scan_folder
from iterretgen_tui.engine.indexing.ignore import IGNORE_FILE
from iterretgen_tui.engine.indexing.indexer import open_folder_index, sync_folder, watch_folder

from . import test_indexer
from .fakes import HashEmbedder

fake_embedder = test_indexer.fake_embedder  # the fixture: `index` embeds with a HashEmbedder

REPO = Path(__file__).resolve().parent.parent


def make(folder: Path, files: dict[str, str]) -> Path:
    """Files by path relative to ``folder``; each says its own path, so a search can find it."""
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text or f"the text of {name}")
    return folder


def kept(folder: Path) -> list[str]:
    return [f.path.relative_to(folder).as_posix() for f in scan_folder(folder).files]


def indexed(index, folder: Path) -> list[str]:
    return sorted(Path(path).relative_to(folder).as_posix() for path in index.files())


def test_nested_ignore_files_are_relative_to_their_folder_and_a_deeper_one_decides(tmp_path):
    folder = make(
        tmp_path / "docs",
        {
            IGNORE_FILE: "# drafts are not answers\n*.draft\nsecret/\n/top.txt\n",
            "a.txt": "",
            "top.txt": "",
            "b.draft": "",
            "secret/s.txt": "",
            "notes/top.txt": "",  # /top.txt is anchored to the root file's folder
            "notes/c.draft": "",
            "notes/secret/t.txt": "",  # secret/ matches at any depth
            f"notes/{IGNORE_FILE}": "!keep.draft\nold?.txt\n",
            "notes/keep.draft": "",
            "notes/old1.txt": "",
            "notes/old12.txt": "",  # ? is one character
            "other/keep.draft": "",  # notes/'s file says nothing here
            "other/old1.txt": "",
        },
    )
    assert kept(folder) == ["a.txt", "notes/keep.draft", "notes/old12.txt", "notes/top.txt", "other/old1.txt"]
    found = scan_folder(folder)
    by = {Path(t.source).relative_to(folder).as_posix(): (t.files, t.folders) for t in found.ignored}
    assert by == {IGNORE_FILE: (4, 2), f"notes/{IGNORE_FILE}": (1, 0)}
    assert found.skipped == []


def test_a_negated_pattern_takes_a_file_back_but_not_out_of_an_ignored_folder(tmp_path):
    folder = make(
        tmp_path / "docs",
        {
            IGNORE_FILE: "notes/*\n!notes/keep.txt\narchive/\n!archive/keep.txt\n",
            "notes/a.txt": "",
            "notes/keep.txt": "",
            "archive/keep.txt": "",  # as in git: the walk never enters an ignored folder
        },
    )
    assert kept(folder) == ["notes/keep.txt"]


def test_folder_patterns_and_double_stars(tmp_path):
    folder = make(
        tmp_path / "docs",
        {
            IGNORE_FILE: "build/\nlogs/**/*.txt\n",
            "build/out.txt": "",
            "src/build/out.txt": "",
            "src/build.txt": "",
            "sub/build": "",  # a trailing / matches folders only
            "logs/a.txt": "",
            "logs/2024/05/b.txt": "",
            "logs/2024/05/b.md": "",
        },
    )
    assert kept(folder) == ["logs/2024/05/b.md", "src/build.txt", "sub/build"]


def test_a_pattern_added_removes_the_file_from_the_index_and_removed_brings_it_back(tmp_path):
    emb = HashEmbedder()
    folder = make(tmp_path / "docs", {"a.txt": "the aardvark digs", "b.txt": "the badger sleeps"})
    index = open_folder_index(folder, emb)
    assert sync_folder(folder, index, emb).added == 2

    (folder / IGNORE_FILE).write_text("b.txt\n")
    report = sync_folder(folder, index, emb)
    assert (report.removed, report.indexed, indexed(index, folder)) == (1, 1, ["a.txt"])
    assert [t.describe() for t in report.ignored] == [f"ignored 1 file by {folder / IGNORE_FILE}"]
    assert all("badger" not in p.text for p in index.search(emb.embed_queries(["badger"]), 5)[0])

    (folder / IGNORE_FILE).write_text("# b.txt is back\n")
    report = sync_folder(folder, index, emb)
    assert (report.added, report.indexed, indexed(index, folder), report.ignored) == (1, 2, ["a.txt", "b.txt"], [])
    assert index.search(emb.embed_queries(["badger"]), 1)[0][0].source == str(folder / "b.txt")


def test_a_folder_whose_ignore_file_cannot_be_read_is_left_out_whole(tmp_path):
    folder = make(tmp_path / "docs", {"a.txt": "", "private/p.txt": ""})
    (folder / "private" / IGNORE_FILE).mkdir()  # unreadable as a file
    found = scan_folder(folder)
    assert [f.path.name for f in found.files] == ["a.txt"]
    assert [(s.path, s.reason.split(":")[0]) for s in found.skipped] == [
        (str(folder / "private"), f"cannot read its {IGNORE_FILE}")
    ]


def test_the_index_command_says_what_each_ignore_file_left_out(tmp_path, capsys, fake_embedder):
    folder = make(
        tmp_path / "docs",
        {IGNORE_FILE: "images/\n*.tmp\n", "a.txt": "", "x.tmp": "", "y.tmp": "", "images/shot.txt": ""},
    )
    assert cli.main(["index", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"  ignored 2 files and 1 folder by {folder / IGNORE_FILE}\n" in out
    assert cli.main(["index", str(folder), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert files["ignored"] == [{"by": str(folder / IGNORE_FILE), "files": 2, "folders": 1}]
    assert files["indexed"] == 1


def test_watch_follows_a_change_to_an_ignore_file(tmp_path):
    emb = HashEmbedder()
    folder = make(tmp_path / "docs", {"a.txt": "the aardvark digs", "b.txt": "the badger sleeps"})
    index = open_folder_index(folder, emb)
    sync_folder(folder, index, emb)
    cancel, reports = threading.Event(), []

    def heard(report) -> None:
        reports.append(report)
        cancel.set()  # the sync after the change is all there is to wait for

    # The watcher runs here; the change comes once it has started, and 10 s end it regardless.
    change = threading.Timer(0.5, (folder / IGNORE_FILE).write_text, args=("b.txt\n",))
    give_up = threading.Timer(10, cancel.set)
    change.start(), give_up.start()
    try:
        watch_folder(folder, index, emb, on_report=heard, cancel=cancel, debounce_ms=100)
    finally:
        give_up.cancel()
    assert [r.removed for r in reports if r.removed] == [1]
    assert indexed(index, folder) == ["a.txt"]


def test_the_docs_folder_leaves_the_screenshots_out():
    docs = REPO / "docs"
    rules = (docs / IGNORE_FILE).read_text()
    assert any(line.startswith("#") for line in rules.splitlines()), "the file says why"
    found = scan_folder(docs)
    assert list((docs / "images").glob("*.png")), "the screenshots are there to be left out"
    assert not [f for f in found.files if f.path.is_relative_to(docs / "images")]
    assert [(t.source, t.folders) for t in found.ignored] == [(str(docs / IGNORE_FILE), 1)]


@pytest.mark.parametrize("pattern", ["images", "images/", "/images/", "**/images"])
def test_folder_pattern_spellings_all_leave_a_folder_out(tmp_path, pattern):
    folder = make(tmp_path / "docs", {IGNORE_FILE: pattern + "\n", "a.txt": "", "images/shot.txt": ""})
    assert kept(folder) == ["a.txt"]
