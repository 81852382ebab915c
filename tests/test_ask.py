"""`ask` with fakes at the model boundary: what it prints, readable and --json."""

from __future__ import annotations

import json

from iterretgen_tui import cli, session
from iterretgen_tui.engine.loop.events import StopReason

from .tui_support import FakeSession, HeldGenerator

QUESTION = "Where was the builder of the Eiffel Tower born?"


def ask(monkeypatch, tmp_path, capsys, drafts, *flags):
    generator = HeldGenerator(drafts)
    generator.release.set()
    monkeypatch.setattr(session, "Session", lambda settings, **_: FakeSession(settings, generator=generator))
    (tmp_path / "docs").mkdir()
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
