"""`ask` with fakes at the model boundary: what it prints, readable and --json."""

from __future__ import annotations

import json
from dataclasses import replace

from iterretgen_tui import cli, session
from iterretgen_tui.engine.loop.events import StopReason

from .tui_support import CORPUS, FakeSession, HeldGenerator

QUESTION = "Where was the builder of the Eiffel Tower born?"


def ask(monkeypatch, tmp_path, capsys, drafts, *flags, corpus=CORPUS):
    generator = HeldGenerator(drafts)
    generator.release.set()
    monkeypatch.setattr(
        session, "Session", lambda settings, **_: FakeSession(settings, generator=generator, corpus=corpus)
    )
    (tmp_path / "docs").mkdir(exist_ok=True)
    code = cli.main(
        [
            "ask",
            QUESTION,
            "--folder",
            str(tmp_path / "docs"),
            "--query-mode",
            "draft",
            "--no-keep-passages",
            "--top-k",
            "5",
            *flags,
        ]
    )
    return code, capsys.readouterr()


def test_the_stop_names_the_iteration_that_found_nothing_new(monkeypatch, tmp_path, capsys):
    # The second retrieval brings nothing new: the loop stops during iteration 2, after one draft.
    code, out = ask(monkeypatch, tmp_path, capsys, ["So the answer is Paris.", "So the answer is Lyon."])
    assert code == 0
    assert "same top passages at iteration 2" in out.err


def test_json_carries_the_whole_trace(monkeypatch, tmp_path, capsys):
    code, out = ask(monkeypatch, tmp_path, capsys, ["So the answer is Paris.", "So the answer is Lyon."], "--json")
    data = json.loads(out.out)
    assert code == 0 and data["answer"] == "Paris"
    assert data["stop_reason"] == StopReason.SAME_PASSAGES.value and data["stopped_at"] == 2
    assert data["sources"][0]["n"] == 1 and {"passage_id", "source", "score", "text"} <= set(data["sources"][0])
    [first] = data["iterations"]
    assert first["searches"] == ["question"] and first["passages"][0]["passage_id"] == data["sources"][0]["passage_id"]
    assert data["models"]["llm"] == "scripted-llm" and data["models"]["embedder"] == "hash-embedder"


def test_sources_of_one_section_share_a_line(monkeypatch, tmp_path, capsys):
    one_page = [replace(p, title="Guide", source="docs/guide.md", location=f"lines {p.id}0-{p.id}9") for p in CORPUS]
    code, out = ask(
        monkeypatch, tmp_path, capsys, ["So the answer is Dijon."] * 2, "--iterations", "1", corpus=one_page
    )
    assert code == 0
    [line] = [line for line in out.out.splitlines() if "docs/guide.md" in line]
    assert line.startswith("Guide - docs/guide.md: [1] lines ") and "[5] lines " in line


def test_an_answer_that_only_restates_the_question_gives_way_to_the_reasoning(monkeypatch, tmp_path, capsys):
    draft = "Gustave Eiffel was born in Dijon. So the answer is the builder of the Eiffel Tower."
    code, out = ask(monkeypatch, tmp_path, capsys, [draft] * 2, "--iterations", "1")
    assert code == 0
    assert "Gustave Eiffel was born in Dijon." in out.out
    assert "the builder of the Eiffel Tower\n" not in out.out
    # ... and so does the first answer, shown while a second iteration checks it
    code, out = ask(monkeypatch, tmp_path, capsys, [draft] * 3, "--iterations", "2")
    [first] = [line for line in out.err.splitlines() if line.startswith("first answer, ")]
    assert first.endswith("after the question: Gustave Eiffel was born in Dijon.")
