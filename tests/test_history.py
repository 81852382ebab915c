"""Saved conversations: round trip of the loop's answers, listing, export to Markdown."""

from __future__ import annotations

import re
from dataclasses import replace

from iterretgen_tui import history, paths
from iterretgen_tui.engine.loop.events import FinalAnswer, IterationTrace, StopReason
from iterretgen_tui.engine.passages import Passage

P1 = Passage(7, "Gustave Eiffel was born in Dijon.", "Gustave *Eiffel*", "/docs/g.pdf", "p. 2", 0.8)
P2 = Passage(9, "The tower is in Paris.", "Tower", "/docs/t.md", "", 0.5)


def final(question: str = "Where was Eiffel born?") -> FinalAnswer:
    traces = (
        IterationTrace(1, question, (P2,), "It is in Paris. So the answer is Paris.", "Paris", 1.25),
        IterationTrace(
            2,
            "draft\n" + question,
            (P1, P2),
            "Born in Dijon. So the answer is Dijon.",
            "Dijon",
            2.5,
            300,
            True,
            ("the question", "the draft + the question"),
        ),
    )
    return FinalAnswer(question, "Dijon", traces[-1].draft, (P1, P2), StopReason.CONVERGED, traces, 2)


def test_a_turn_comes_back_exactly_as_it_was_saved():
    store = history.History()
    assert store.path == paths.history_db()
    cid = store.start("Where was Eiffel born?", "/docs")
    store.add_turn(cid, final())
    store.add_turn(cid, final("And the tower?"))
    conversation = store.get(cid)
    assert conversation.turns == (final(), final("And the tower?"))
    assert conversation.turns[0].stop_reason is StopReason.CONVERGED
    store.close()


def test_a_turn_saved_before_searches_were_recorded_still_opens():
    saved = re.sub(r', "searches": \[[^]]*\]', "", history.final_to_json(final()))
    assert '"searches"' not in saved
    assert [trace.searches for trace in history.final_from_json(saved).iterations] == [(), ()]


def test_recent_lists_newest_first_with_turn_counts():
    store = history.History()
    first = store.start("first", "/a")
    second = store.start("second", "/b")
    store.add_turn(second, final())
    store.add_turn(first, final())  # answering again moves it to the top
    rows = store.recent()
    assert [(r.id, r.title, r.turns) for r in rows] == [(first, "first", 1), (second, "second", 1)]
    store.delete(first)
    assert [r.id for r in store.recent()] == [second]


def test_answer_markdown_numbers_the_sources_with_file_and_location():
    text = history.answer_markdown(final())
    assert text.startswith("**Answer:** Dijon\n\nBorn in Dijon.\n\n")
    assert "- **[1]** Gustave \\*Eiffel\\* — `/docs/g.pdf (p. 2)`" in text
    assert "- **[2]** Tower — `/docs/t.md`" in text
    # A PDF without a title of its own is titled by its file name: said once.
    untitled = replace(final(), sources=(replace(P1, title="g.pdf"),))
    assert "- **[1]** `/docs/g.pdf (p. 2)`" in history.answer_markdown(untitled)
    # Passages of one section of one file share a line, each with its number and place.
    page3 = replace(P1, id=8, location="p. 3")
    grouped = history.sources_markdown((P1, P2, page3), {"/docs/g.pdf": "changed"})
    assert grouped == (
        "- Gustave \\*Eiffel\\* — `/docs/g.pdf`: **[1]** p. 2, **[3]** p. 3 — ⚠ **file changed**\n"
        "- **[2]** Tower — `/docs/t.md`"
    )


def test_an_empty_answer_says_so():
    empty = FinalAnswer("q", "", "", (), StopReason.CANCELLED, (), 1)
    assert history.answer_markdown(empty) == "_No answer._"


def test_export_writes_every_turn_with_its_stop_reason_and_times(tmp_path):
    store = history.History()
    cid = store.start("Where was Eiffel born?", "/docs")
    store.add_turn(cid, final())
    path = history.export(store.get(cid), tmp_path / "sub" / "chat.md")
    text = path.read_text("utf-8")
    assert text.startswith("# Where was Eiffel born?\n\nDocuments: `/docs`\n")
    assert "## Where was Eiffel born?" in text
    assert "`/docs/g.pdf (p. 2)`" in text
    assert "_converged at iteration 2 · per iteration: 1.2 s, 2.5 s_" in text


def test_the_stop_summary_names_the_iteration_that_stopped():
    same = FinalAnswer("q", "Paris", "d", (P2,), StopReason.SAME_PASSAGES, final().iterations[:1], 2)
    assert history.stop_summary(same) == "same top passages at iteration 2 · per iteration: 1.2 s"
    assert history.stop_summary(final()).startswith("converged at iteration 2 ·")


def test_a_draft_that_is_its_answer_is_not_said_twice():
    said = replace(final(), answer="Eiffel was born in Dijon", draft="Eiffel was born in Dijon.")
    assert history.answer_markdown(said).count("born in Dijon") == 1
    assert "**Answer:** Dijon\n\nBorn in Dijon." in history.answer_markdown(final())  # the answer, then the draft


def test_a_draft_cut_inside_a_code_block_does_not_swallow_the_sources():
    cut = FinalAnswer("q", "x", "Run this:\n\n```bash\nls --all --all", (P2,), StopReason.MAX_ITERATIONS, (), 1)
    text = history.answer_markdown(cut)
    assert "```bash\nls --all --all\n```\n\n**Sources**" in text
    assert history.close_fences("a\n~~~~\nb\n~~~~\n```") == "a\n~~~~\nb\n~~~~\n```\n```"
    assert history.close_fences("```\ncode\n```") == "```\ncode\n```"


def test_evidence_is_saved_shown_under_the_answer_and_exported():
    from dataclasses import replace

    from iterretgen_tui.engine.loop.evidence import Evidence, Quote

    evidence = Evidence("Gustave Eiffel was born in Dijon.", 1, 7, "/docs/g.pdf", "p. 2", 0.7)
    answered = replace(
        final(), evidence=evidence, iterations=tuple(replace(t, evidence=evidence) for t in final().iterations)
    )
    store = history.History()
    cid = store.start("Where was Eiffel born?", "/docs")
    store.add_turn(cid, answered)
    assert store.get(cid).turns == (answered,)
    text = history.answer_markdown(answered)
    assert text.index("**Answer:** Dijon") < text.index(
        "**From your documents:** “Gustave Eiffel was born in Dijon.” **[1]** — `/docs/g.pdf (p. 2)`"
    )
    assert "From your documents" in history.to_markdown(store.get(cid))
    store.close()
    # A list item's own line is a Markdown hard break, not run into the next sentence.
    item = Evidence("• Returns: {Timeout} a reference\nSets the *timer*.", 2, 8, "/docs/t.md", "line 4", 0.6)
    assert "“• Returns: {Timeout} a reference\\\nSets the \\*timer\\*.” **[2]**" in history.evidence_markdown(item)
    # A code span shows its text as written: escaped there, "_" would show as "\_".
    code = Evidence("Saved under `$ITERRETGEN_HOME/config` or my_home.", 1, 7, "/docs/t.md", "line 9", 0.6)
    assert "“Saved under `$ITERRETGEN_HOME/config` or my\\_home.”" in history.evidence_markdown(code)
    # A web address stays as written: the chat makes it a link, which would show a backslash.
    link = Evidence("Book: <https://x.org/my_book.html#strings> says so_far.", 1, 7, "/docs/t.md", "line 2", 0.6)
    assert "“Book: \\<https://x.org/my_book.html#strings> says so\\_far.”" in history.evidence_markdown(link)
    # A placeholder in angle brackets is text, not a tag a renderer would drop.
    tag = Evidence("Set it to <implementation-keywords>, the builder.", 1, 7, "/docs/r.txt", "line 46", 0.6)
    assert "“Set it to \\<implementation-keywords>, the builder.”" in history.evidence_markdown(tag)
    # Old GNU docs quote `like this': code; a backquote that closes nothing is shown as one,
    # not paired with the one before the file's name.
    gnu = Evidence("Any shell begun with the `--login' option reads it.", 5, 7, "/docs/NEWS", "line 9", 0.6)
    assert "“Any shell begun with the `--login` option reads it.” **[5]** — `/docs/NEWS (line 9)`" in (
        history.evidence_markdown(gnu)
    )
    stray = Evidence("Press ` then run it.", 5, 7, "/docs/NEWS", "line 9", 0.6)
    assert "“Press \\` then run it.” **[5]**" in history.evidence_markdown(stray)
    # The sentence quoted beside it has a line, a number and a file of its own, and is saved.
    two = replace(evidence, also=Quote("He designed the tower.", 3, 9, "/docs/t.md", "line 7", 0.5))
    assert history.evidence_markdown(two) == (
        "**From your documents:** “Gustave Eiffel was born in Dijon.” **[1]** — `/docs/g.pdf (p. 2)`\\\n"
        "“He designed the tower.” **[3]** — `/docs/t.md (line 7)`"
    )
    store = history.History()
    cid = store.start("Where was Eiffel born?", "/docs")
    store.add_turn(cid, replace(answered, evidence=two))
    assert store.get(cid).turns[0].evidence == two
    store.close()


def test_a_turn_saved_before_evidence_still_opens():
    saved = history.final_to_json(final())
    for key in ("evidence", "kind", "looped", "stated", "asked"):
        saved = re.sub(rf', "{key}": [^,}}]*', "", saved)
    assert '"evidence"' not in saved and '"stated"' not in saved
    reopened = history.final_from_json(saved)
    assert reopened == final()
    assert reopened.evidence is None and reopened.kind == "factoid"


def test_a_weak_answer_says_so_and_leads_with_the_evidence():
    from dataclasses import replace

    from iterretgen_tui.engine.loop.evidence import Evidence

    evidence = Evidence("Gustave Eiffel was born in Dijon.", 1, 7, "/docs/g.pdf", "p. 2")
    traces = final().iterations
    cut = replace(traces[-1], looped=True, draft="Born in Dijon, in Dijon, in")
    looped = replace(final(), evidence=evidence, iterations=(*traces[:-1], cut))
    text = history.answer_markdown(looped)
    assert text.startswith("⚠ The model started repeating itself")
    assert text.index("From your documents") < text.index("The model's answer (unverified):** Dijon")
    # Cut where it began to repeat a whole sentence, the draft is whole: no weakness.
    whole = replace(looped, iterations=(*traces[:-1], replace(traces[-1], looped=True)))
    assert history.answer_markdown(whole).startswith("**Answer:** Dijon")
    unstated = replace(looped, answer="", iterations=(*traces[:-1], replace(traces[-1], stated=False)))
    assert history.answer_markdown(unstated).startswith("⚠ No answer found")
    assert "unverified" not in history.answer_markdown(unstated)
    invented = replace(final(), answer="Grenoble", evidence=evidence)
    assert history.answer_markdown(invented).startswith("⚠ The model's answer is not supported")


def test_the_checked_note_says_how_later_iterations_fared_with_the_first_answer():
    changed = final()
    assert history.checked_note(changed) == (
        "Changed after reading 1 more passage; the first answer was: Paris (converged at iteration 2)."
    )
    assert f"_{history.checked_note(changed)}_" in history.answer_markdown(changed)
    first = changed.iterations[0]
    same = replace(changed, answer="paris", iterations=(first, replace(changed.iterations[1], passages=(P2,))))
    assert (
        history.checked_note(same) == "Checked against the same passages again: unchanged (converged at iteration 2)."
    )
    # Answers the adaptive stop counts as the same (token F1 >= 0.8) are unchanged here too.
    named = replace(same, answer="Alexandre Gustave Eiffel", iterations=(replace(first, answer="Gustave Eiffel"),))
    named = replace(named, iterations=(*named.iterations, same.iterations[1]))
    assert history.checked_note(named).startswith("Checked against the same passages again: unchanged")
    # ... and so is the first answer said again with the question's words ("Paris" read as
    # "Eiffel was born in Paris"): the same answer, not a change.
    said = replace(same, answer="Eiffel was born in Paris")
    assert history.checked_note(said).startswith("Checked against the same passages again: unchanged")
    # A last answer that only restates the question ("Eiffel") is not shown: its draft is,
    # and a draft that still says the first answer leaves it unchanged.
    restating = replace(same, answer="Eiffel", draft="Eiffel was born in Paris, in 1832.")
    assert history.checked_note(restating).startswith("Checked against the same passages again: unchanged")
    assert history.checked_note(replace(restating, draft="Eiffel was born in Dijon.")).startswith("Changed")
    # A last answer that is the first's opening sentence, its second left out, still says it.
    longer = replace(first, answer="Eiffel was born in Paris [1]. He built a tower there.")
    cut = replace(said, answer="Eiffel was born in Paris.", iterations=(longer, said.iterations[1]))
    assert history.checked_note(cut).startswith("Checked against the same passages again: unchanged, said shorter")
    assert history.checked_note(replace(cut, answer="He built a tower there.")).startswith("Changed")
    nothing_new = replace(changed, iterations=(first,), stop_reason=StopReason.SAME_PASSAGES, stopped_at=2)
    assert history.checked_note(nothing_new).startswith(
        "Checked: the next search found only passages already considered"
    )
    alone = replace(changed, iterations=(first,), stop_reason=StopReason.MAX_ITERATIONS, stopped_at=1)
    cancelled = replace(changed, stop_reason=StopReason.CANCELLED)
    assert history.checked_note(alone) == history.checked_note(cancelled) == ""  # nothing checked it
