"""What the welcome and the stale-source marks read from an index: headings, example
questions, file records against the files on disk."""

from __future__ import annotations

import os

import numpy as np

from iterretgen_tui.engine.indexing.examples import example_questions, question_for
from iterretgen_tui.engine.indexing.index import FileRecord, FileUpdate, NewPassage, PassageIndex
from iterretgen_tui.engine.indexing.staleness import CHANGED, DELETED, stale_sources


def test_a_heading_becomes_a_question():
    assert question_for("iterretgen-chat › Better models") == "What does iterretgen-chat say about better models?"
    assert question_for("Guide › GPU setup") == "What does Guide say about GPU setup?"
    # A heading's leading article reads in lower case mid-sentence, as a name's does.
    assert question_for("Spec › The source XML files") == "What does Spec say about the source XML files?"
    assert question_for("Books › The Hobbit") == "What does Books say about The Hobbit?"
    assert question_for("FAQ › How do I pull a model") == "How do I pull a model?"
    assert question_for("FAQ › Why is it slow?") == "Why is it slow?"
    assert question_for("Gustave Eiffel") == "What do the documents say about Gustave Eiffel?"
    assert question_for("The chat window › What you see") == "What does the chat window say about what you see?"
    assert question_for("The Hobbit › Maps") == "What does The Hobbit say about maps?"
    assert (
        question_for("Does iterating pay off? Measured › End to end") == "What do the documents say about end to end?"
    )
    # A section's number is no part of its topic, a Title Case heading keeps its case, and
    # a first heading that any document could have names no document.
    assert (
        question_for("Users and Groups in Debian › Chapter 2. Users and Groups")
        == "What do the documents say about Users and Groups?"
    )
    assert question_for("Guide › 3.1 Setup") == "What does Guide say about setup?"
    assert question_for("Guide › 3 ways to win") == "What does Guide say about 3 ways to win?"
    assert question_for("Introduction › Usage") == "What do the documents say about usage?"
    # A title in capitals reads as a title; a short word in it may be an acronym.
    assert question_for("TRIGGERS › DPKG DETAILS") == "What does Triggers say about DPKG Details?"
    assert question_for("TMUX(1) › WINDOWS AND PANES") == "What does TMUX(1) say about Windows and Panes?"
    assert question_for("FAQ › API") == "What does FAQ say about API?"


def test_examples_take_the_biggest_sections_one_per_file_and_skip_file_names():
    headings = [
        ("Guide › Installing", "/d/guide.md", 9),
        ("Guide › Running", "/d/guide.md", 7),  # same file as a bigger section
        ("notes.txt", "/d/notes.txt", 6),  # the indexer's fallback: a file name, not a topic
        ("invoice-scan", "/d/invoice-scan.pdf", 6),  # a PDF titled by the program that made it
        ("Paper › Results", "/d/paper.pdf", 5),
        ("Paper › Results", "/d/paper-copy.pdf", 5),  # the same question twice
        ("A heading much too long to be a topic someone would ask about", "/d/long.md", 4),
        ("FAQ › Why is it slow?", "/d/faq.md", 2),
    ]
    assert example_questions(headings, 3) == [
        "What does Guide say about installing?",
        "What does Paper say about results?",
        "Why is it slow?",
    ]
    assert example_questions([], 3) == []


def test_examples_come_from_each_subfolder_first_and_not_twice_but_for_numbers():
    headings = [
        ("Git 2.36 Release Notes › Fixes since v2.35", "/d/relnotes/2.36.0.txt", 30),
        ("Git 2.35 Release Notes › Fixes since v2.34", "/d/relnotes/2.35.0.txt", 29),
        ("Git 2.35 Release Notes › Updates since Git 2.34", "/d/relnotes/2.35.0.txt", 20),
        ("Git 2.37 Release Notes › Updates since Git 2.36", "/d/relnotes/2.37.0.txt", 19),
        ("Git-jump › Usage", "/d/contrib/git-jump.txt", 3),
        ("Team conventions › Branches", "/d/conventions.docx", 2),
        ("E0382 - Error codes index › Error code E0382", "/d/errors/E0382.html", 7),
        ("E0277 - Error codes index › Error code E0277", "/d/errors/E0277.html", 5),
    ]
    assert example_questions(headings, 4) == [
        "What does Git 2.36 Release Notes say about fixes since v2.35?",
        "What do the documents say about Error code E0382?",
        "What does Git-jump say about usage?",
        "What does Team conventions say about branches?",
    ]
    # A code tells apart no more than a number: E0277's page, E0382's but for its code, is not asked.
    assert example_questions(headings, 5)[4] == "What does Git 2.35 Release Notes say about Updates since Git 2.34?"


def test_examples_skip_a_template_heading_and_a_long_file_without_headings():
    headings = [
        ("2. NEWS", "/d/dist.news.html", 90),  # a changelog: one title over all of it
        ("npm-stage › Flags", "/d/npm-stage.md", 16),
        ("npm-trust › Flags", "/d/npm-trust.md", 15),  # the pages' template, not their topic
        ("Memcheck › 4.3. Command-Line Options", "/d/mc.html", 12),
        ("Quick Start › 3. Running your program", "/d/quick.html", 4),
    ]
    assert example_questions(headings, 3) == [
        "What does Memcheck say about Command-Line Options?",
        "What does Quick Start say about running your program?",
        "What do the documents say about NEWS?",
    ]


def _update(path, title, texts, dim=4):
    record = FileRecord(str(path), 10, 1, 1, "h")
    passages = [NewPassage(title, t, "lines 1-2", f"{path}{i}", np.ones(dim, np.float32)) for i, t in enumerate(texts)]
    return FileUpdate(record, passages)


def test_the_index_lists_its_largest_sections_and_the_records_asked_for(tmp_path):
    with PassageIndex.open(tmp_path / "index", embedder_identity="e", dim=4) as index:
        with index.lock():
            index.commit(
                [
                    _update("/d/a.md", "A › Setup", ["one", "two"]),
                    _update("/d/b.md", "B › Usage", ["three", "four", "five"]),
                ]
            )
        assert index.headings() == [("B › Usage", "/d/b.md", 3), ("A › Setup", "/d/a.md", 2)]
        book = [
            NewPassage(f"Book › Part {n}", "x", "", f"b{n}{i}", np.ones(4, np.float32))
            for n in range(3)
            for i in range(5)
        ]
        with index.lock():
            index.commit([FileUpdate(FileRecord("/d/book.md", 10, 1, 1, "h"), book)])
        # A file's own largest sections, and no more of them than asked, leave room for the others.
        assert index.headings(per_file=1) == [
            ("Book › Part 0", "/d/book.md", 5),
            ("B › Usage", "/d/b.md", 3),
            ("A › Setup", "/d/a.md", 2),
        ]
        assert set(index.file_records(["/d/a.md", "/nowhere.md"])) == {"/d/a.md"}


def test_a_source_edited_or_deleted_since_indexing_is_stale(tmp_path):
    kept, edited, deleted = (tmp_path / name for name in ("kept.md", "edited.md", "deleted.md"))
    for path in (kept, edited, deleted):
        path.write_text("original text")
    records = {}
    for path in (kept, edited, deleted):
        st = os.stat(path)
        records[str(path)] = FileRecord(str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, "h")
    edited.write_text("text edited after indexing")
    deleted.unlink()
    os.chmod(kept, 0o600)  # a chmod moves ctime only: the text is what was indexed
    sources = [str(kept), str(edited), str(deleted), "dataset-doc-17"]
    assert stale_sources(records, sources) == {str(edited): CHANGED, str(deleted): DELETED}


def test_the_session_gives_examples_and_stale_sources_and_reindexing_keeps_its_index(tmp_path):
    from iterretgen_tui.config import Settings
    from iterretgen_tui.session import Session

    from .fakes import HashEmbedder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\n## Installing\n\nRun make install first.\n")
    (docs / "notes.md").write_text("# Notes\n\n## Results\n\nThe tower is 330 metres tall.\n")
    session = Session(Settings())
    session.embedder = HashEmbedder()
    session.open_folder(docs)
    index = session.index
    assert session.info()["files"] == 2
    assert sorted(session.examples()) == ["What does Guide say about installing?", "What does Notes say about results?"]
    guide = str((docs / "guide.md").resolve())
    (docs / "guide.md").write_text("# Guide\n\n## Installing\n\nRun make run instead.\n")
    assert session.stale_sources([guide, str((docs / "notes.md").resolve())]) == {guide: CHANGED}
    session.open_folder(docs)  # re-index: an answer may be searching the open index meanwhile
    assert session.index is index and len(index) > 0
    assert session.stale_sources([guide]) == {}
