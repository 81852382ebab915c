"""Why each passage is in an iteration: new, found again or carried forward, and by which search."""

from __future__ import annotations

from iterretgen_tui.engine.loop import provenance, queries
from iterretgen_tui.engine.loop.events import DraftDone, FinalAnswer, PassagesRetrieved
from iterretgen_tui.engine.loop.provenance import AGAIN, CARRIED, NEW, Origin, found_by, origins
from iterretgen_tui.engine.loop.serialize import final_to_dict
from iterretgen_tui.history import final_from_json, final_to_json

from .fakes import ScriptedGenerator
from .test_loop import CORPUS, events_of

P1, P2, P3, P4, P5 = CORPUS
DRAFTS = [
    "The Eiffel Tower was built by Gustave Eiffel. So the answer is Paris.",
    "Gustave Eiffel was born in Dijon in 1832. So the answer is Dijon.",
]


def test_found_by_names_every_search_whose_top_k_holds_the_passage():
    rankings = {"the question": [P1, P2, P5], "the draft + the question": [P2, P3, P1]}
    assert found_by([P2, P1, P3], rankings, k=2) == (
        ("the question", "the draft + the question"),
        ("the question",),
        ("the draft + the question",),
    )
    # Fusion reads deeper than k: a passage only below every top k still names its searches.
    assert found_by([P5], rankings, k=2) == (("the question",),)


def test_origins_tell_new_again_and_carried_from_earlier_iterations():
    earlier = [(1, (P1, P2))]
    marks = origins(2, (P3, P1, P2), (("the draft + the question",), ("the question",), ()), earlier)
    assert marks == (
        Origin(NEW, ("the draft + the question",), 2),
        Origin(AGAIN, ("the question",), 1),
        Origin(CARRIED, (), 1),
    )
    assert [m.describe() for m in marks] == [
        "new · via the draft + the question",
        "found again (first in 1) · via the question",
        "carried from iteration 1",
    ]


def test_a_trace_without_provenance_has_no_marks():
    """History saved before provenance was recorded: nothing is guessed."""
    assert origins(2, (P1, P2), (), [(1, (P1,))]) == ()


def test_the_loop_records_which_search_found_each_passage_and_what_was_carried():
    events = events_of(ScriptedGenerator(DRAFTS), adaptive=False, keep_passages=True, query_mode="draft")
    retrieved = [e for e in events if isinstance(e, PassagesRetrieved)]
    traces = [e.trace for e in events if isinstance(e, DraftDone)]
    assert all(len(e.found_by) == len(e.passages) for e in retrieved)
    assert set(retrieved[0].found_by) == {(queries.QUESTION,)}
    first, second = traces
    assert first.found_by == retrieved[0].found_by
    retrieved_ids = {p.id for p in retrieved[1].passages}
    carried = [p for p, names in zip(second.passages, second.found_by) if not names]
    assert carried and all(p.id not in retrieved_ids for p in carried)  # kept, not found again
    assert all(names for p, names in zip(second.passages, second.found_by) if p.id in retrieved_ids)
    marks = provenance.trace_origins(traces)
    assert {m.kind for m in marks[0]} == {NEW}
    assert [m.kind for m in marks[1] if m.kind == CARRIED] == [CARRIED] * len(carried)


def test_ask_json_and_history_carry_the_same_marks():
    events = events_of(ScriptedGenerator(DRAFTS), adaptive=False, keep_passages=True, query_mode="draft")
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    rows = final_to_dict(final)["iterations"]
    expected = provenance.trace_origins(final.iterations)
    for row, marks in zip(rows, expected):
        assert [(p["origin"], p["found_by"], p["first_iteration"]) for p in row["passages"]] == [
            (m.kind, list(m.searches), m.first_t) for m in marks
        ]
    assert provenance.trace_origins(final_from_json(final_to_json(final)).iterations) == expected


def test_the_paper_mode_still_retrieves_as_before():
    """Without skipping, search_again merges rank_searches' rankings as merge_rankings does,
    split so the loop keeps each ranking."""
    from iterretgen_tui.engine.retrieval.retriever import Retriever

    from .fakes import HashEmbedder, ListIndex

    embedder = HashEmbedder()
    r = Retriever(embedder, ListIndex(embedder, CORPUS))
    named = queries.searches("Who built it?", "Gustave Eiffel\nWho built it?", "fusion")
    rankings = queries.rank_searches(named, r, 2, "fusion")
    again = queries.search_again(named, r, 2, "fusion", read=(), skip_read=False)
    assert queries.merge_rankings(rankings, 2, "fusion") == again.passages
    assert all(len(ranking) == len(CORPUS) for ranking in rankings.values())  # fusion reads deeper than k
