"""The Iter-RetGen loop with fakes at the model boundary."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.events import (
    ContextTrimmed,
    DraftDone,
    FinalAnswer,
    IterationStarted,
    PassagesRetrieved,
    QueryFormed,
    Stopped,
    StopReason,
    Token,
)
from iterretgen_tui.engine.loop.prompts import turn_echo
from iterretgen_tui.engine.loop.stopping import answers_converge
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.retriever import Retriever

from .fakes import HashEmbedder, ListIndex, ScriptedGenerator, paper_options

CORPUS = [
    Passage(1, "Paris is the capital of France.", "France", "/docs/france.md", "lines 1-3"),
    Passage(2, "The Eiffel Tower stands in Paris and was built by Gustave Eiffel.", "Eiffel Tower", "/docs/eiffel.md"),
    Passage(3, "Gustave Eiffel was born in Dijon in 1832.", "Gustave Eiffel", "/docs/gustave.md"),
    Passage(4, "Dijon is famous for its mustard.", "Dijon", "/docs/dijon.md"),
    Passage(5, "Bananas are yellow fruit.", "Bananas", "/docs/bananas.md"),
]


def default_retriever():
    embedder = HashEmbedder()
    return Retriever(embedder, ListIndex(embedder, CORPUS))


def events_of(generator, retriever=None, **options):
    return list(
        iterretgen.run(
            "Where was the builder of the Eiffel Tower born?",
            retriever=retriever or default_retriever(),
            generator=generator,
            options=paper_options(**{"iterations": 2, "top_k": 2, **options}),
        )
    )


def test_two_iterations_query_is_draft_then_question():
    draft1 = "The Eiffel Tower was built by Gustave Eiffel. So the answer is Paris."
    draft2 = "Gustave Eiffel was born in Dijon. So the answer is Dijon."
    gen = ScriptedGenerator([draft1, draft2])
    events = events_of(gen, adaptive=False, query_mode="draft")  # the paper's retrieval
    queries = [e.query for e in events if isinstance(e, QueryFormed)]
    assert queries == [
        "Where was the builder of the Eiffel Tower born?",
        draft1 + "\nWhere was the builder of the Eiffel Tower born?",
    ]
    assert [type(e) for e in events[:3]] == [IterationStarted, QueryFormed, PassagesRetrieved]
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert final.answer == "Dijon"
    assert final.stop_reason is StopReason.MAX_ITERATIONS
    assert [it.answer for it in final.iterations] == ["Paris", "Dijon"]
    # The second retrieval is the retriever's answer to the draft-augmented query.
    retrieved = [e.passages for e in events if isinstance(e, PassagesRetrieved)]
    assert [p.id for p in retrieved[1]] == [p.id for p in default_retriever().retrieve(queries[1], 2)]
    # Tokens stream and reassemble into the draft.
    tokens = "".join(e.text for e in events if isinstance(e, Token) and e.t == 1)
    assert tokens == draft1
    assert len(gen.prompts) == 2


def test_prompt_contains_demos_passages_and_question():
    gen = ScriptedGenerator(["So the answer is Dijon."])
    events_of(gen, iterations=1)
    messages = gen.prompts[0]
    assert messages[0]["role"] == "system"
    assert [m["role"] for m in messages[1:7]] == ["user", "assistant"] * 3
    last = messages[-1]["content"]
    assert last.startswith("Knowledge:\nTitle: ")
    assert "Context: " in last
    assert last.endswith("Question: Where was the builder of the Eiffel Tower born?\nLet's think step by step.")
    assert all(m["content"].rstrip().endswith(".") for m in messages[2:7:2])
    assert all("So the answer is" in m["content"] for m in messages[2:7:2])


def test_adaptive_stop_when_answers_converge():
    gen = ScriptedGenerator(["Eiffel. So the answer is Dijon.", "Born in Dijon. So the answer is dijon", "x"])
    events = events_of(gen, iterations=3, adaptive=True)
    stopped = next(e for e in events if isinstance(e, Stopped))
    assert stopped.reason is StopReason.CONVERGED and stopped.t == 2
    assert len(gen.prompts) == 2


def test_an_answer_said_again_with_the_questions_words_is_the_same_answer():
    question = "When does the office close?"
    assert answers_converge("24 December", "The office closes on 24 December", question)
    assert answers_converge("The office closes on 24 December.", "24 december", question)
    assert answers_converge("no", "No, it does not close", question)
    assert not answers_converge("24 December", "The office closes on 24 December at noon", question)
    assert not answers_converge("Paris", "Paris, Texas", "Where was he born?")
    assert not answers_converge("24 December", "The office closes on 24 December", "")  # no question said


def test_answers_that_name_other_code_are_not_the_same_answer():
    question = "How do you build a new project with Cargo?"
    built = "You build a new project with Cargo by running `cargo build` in your projects directory."
    made = "You start a new project with Cargo by running `cargo new hello_cargo` in your projects directory."
    assert not answers_converge(built, made, question)  # nearly the same words
    assert answers_converge(built, built.replace("`cargo build`", "cargo build") + " [2]", question)
    assert answers_converge(built, built.replace(".", ", then `cargo run`."), question)  # more code, the same said
    # Code the question holds, said again with the answer, is no other code.
    asked = "What does `cargo new` create?"
    assert answers_converge("a new directory and project", "`cargo new` creates a new directory and project", asked)


def test_answers_that_state_other_numbers_are_not_the_same_answer():
    question = "Which Python versions does pypdf support?"
    # Normalised alike ("310"), or nearly the same words: the number is what changed.
    assert not answers_converge("Python versions 3.1.0 and above", "Python versions 3.10 and above", question)
    assert not answers_converge("version 3 of the API", "version 4 of the API", question)
    assert answers_converge("Python 3.10 and above [1]", "Python 3.10 and above [3]", question)  # citations aside
    assert answers_converge("3,000 files", "3000 files", "How many files?")
    # A number the question holds, said again with the answer, is no other number.
    zen = "How many pages per second does OCR read on the Zen 3?"
    assert answers_converge("1.18", "OCR reads about 1.18 pages per second on the Zen 3", zen)
    assert not answers_converge("1.18", "OCR reads 1.1 pages per second on the Zen 3", zen)
    assert not answers_converge("version 3", "version 4", "Which is newer, version 3 or 4?")


def test_answers_joined_by_a_dash_are_read_as_their_words_too():
    assert answers_converge("MIT-licensed", "MIT", "Which license does faiss use?")
    assert answers_converge("e-mail", "email", "How do I reach them?")  # as written, too
    assert not answers_converge("non-ASCII", "ASCII", "Which characters need Punycode?")


def test_adaptive_stop_when_retrieval_brings_nothing_new():
    # The draft adds no words, so retrieval repeats and generating again would repeat the draft.
    gen = ScriptedGenerator(["So the answer is Paris.", "So the answer is Lyon."])
    events = events_of(gen, iterations=3, adaptive=True, top_k=5)
    stopped = next(e for e in events if isinstance(e, Stopped))
    assert stopped.reason is StopReason.SAME_PASSAGES
    assert len(gen.prompts) == 1
    assert events[-1].answer == "Paris"


def test_no_adaptive_runs_all_iterations():
    gen = ScriptedGenerator(["So the answer is Dijon."])
    events = events_of(gen, iterations=3, adaptive=False, top_k=5)
    assert len(gen.prompts) == 3
    assert events[-1].stop_reason is StopReason.MAX_ITERATIONS


def test_cancel_mid_stream_stops_generation():
    cancel = threading.Event()
    gen = ScriptedGenerator(["one two three four five six seven eight nine ten"])
    seen = []
    for event in iterretgen.run(
        "q about Paris",
        retriever=default_retriever(),
        generator=gen,
        options=paper_options(iterations=2, top_k=2),
        cancel=cancel,
    ):
        seen.append(event)
        if isinstance(event, Token) and len(seen) > 5:
            cancel.set()
    assert gen.tokens_emitted < 10
    assert isinstance(seen[-2], Stopped) and seen[-2].reason is StopReason.CANCELLED
    assert seen[-1].iterations == ()
    assert not any(isinstance(e, DraftDone) for e in seen)


def test_context_budget_trims_passages_and_says_so():
    gen = ScriptedGenerator(["So the answer is Dijon."], n_ctx=400)
    long_corpus = [Passage(i, ("Eiffel Dijon word " * 60).strip(), f"T{i}", f"/d/{i}.md") for i in range(5)]
    embedder = HashEmbedder()
    r = Retriever(embedder, ListIndex(embedder, long_corpus))
    events = list(
        iterretgen.run(
            "Eiffel Dijon?", retriever=r, generator=gen, options=paper_options(iterations=1, top_k=5, max_tokens=50)
        )
    )
    trimmed = [e for e in events if isinstance(e, ContextTrimmed)]
    assert trimmed and trimmed[0].dropped > 0
    prompt_tokens = sum(gen.count_tokens(m["content"]) + 8 for m in gen.prompts[0])
    assert prompt_tokens <= 400 - 50
    assert events[-1].iterations[0].trimmed


def test_question_longer_than_window_is_a_clear_error():
    from iterretgen_tui.engine.loop.prompts import QuestionTooLong

    gen = ScriptedGenerator(["x"], n_ctx=100)
    with pytest.raises(QuestionTooLong, match="too long"):
        list(
            iterretgen.run(
                "why " * 200, retriever=default_retriever(), generator=gen, options=paper_options(max_tokens=20)
            )
        )


def test_keep_passages_carries_earlier_ones_forward():
    gen = ScriptedGenerator(
        ["Dijon is famous for its mustard. " * 4 + "So the answer is Paris.", "So the answer is Dijon."]
    )
    events = events_of(gen, adaptive=False, keep_passages=True, top_k=1)
    final = events[-1]
    first_ids = {p.id for p in final.iterations[0].passages}
    second_ids = [p.id for p in final.iterations[1].passages]
    assert first_ids == {2}
    assert second_ids == [4, 2]  # the new passage first, then the carried one


def test_kept_passages_leave_the_next_searches_slots_to_passages_not_read():
    # The question's own ranking leads the interleave: without skipping, iteration 2 would
    # spend its first slot on passage 2 again, which the prompt carries anyway.
    gen = ScriptedGenerator(["The Eiffel Tower was built by Gustave Eiffel.", "So the answer is Dijon."])
    events = events_of(gen, adaptive=False, keep_passages=True, top_k=2, query_mode="interleave")
    first, second = [e for e in events if isinstance(e, PassagesRetrieved)]
    assert {p.id for p in first.passages} == {2, 3}
    assert not {p.id for p in second.passages} & {2, 3} and len(second.passages) == 2
    assert (first.kept, second.kept) == (0, 2)  # what the pane says the reader reads
    assert {p.id for p in events[-1].iterations[1].passages} == {p.id for p in first.passages + second.passages}


def test_skipping_read_passages_does_not_hide_a_repeating_search_from_the_adaptive_stop():
    gen = ScriptedGenerator(["So the answer is Paris.", "So the answer is Lyon."])
    events = events_of(gen, iterations=3, adaptive=True, keep_passages=True, top_k=2, query_mode="interleave")
    retrieved = [e for e in events if isinstance(e, PassagesRetrieved)]
    assert retrieved[1].repeats and retrieved[1].passages  # new passages exist, but none ranks at the top
    assert next(e for e in events if isinstance(e, Stopped)).reason is StopReason.SAME_PASSAGES
    assert len(gen.prompts) == 1


@pytest.mark.parametrize("chosen_by", ["the setting", "the reader"])
def test_earlier_first_keeps_the_last_prompt_as_the_next_ones_prefix(chosen_by):
    gen = ScriptedGenerator(
        ["Dijon is famous for its mustard. " * 4 + "So the answer is Paris.", "So the answer is Dijon."]
    )
    options = {"passage_order": "earlier-first"}
    if chosen_by == "the reader":  # auto: the order the reader's catalogue entry names
        gen.passage_order, options = "earlier-first", {}
    final = events_of(gen, adaptive=False, keep_passages=True, top_k=1, **options)[-1]
    assert [p.id for p in final.iterations[1].passages] == [2, 4]  # the earlier passage first
    first, second = gen.prompts[0][-1]["content"], gen.prompts[-1][-1]["content"]  # [1]: the follow-up
    assert second.startswith(first.split("\n\nQuestion:")[0] + "\n")  # llama.cpp reuses it


def test_earlier_first_gives_way_to_new_first_when_not_all_passages_fit():
    corpus = [Passage(i, f"Eiffel Dijon topic{i} " + "filler " * 60, f"T{i}", f"/d/{i}.md") for i in range(1, 4)]
    embedder = HashEmbedder()
    retriever = Retriever(embedder, ListIndex(embedder, corpus))
    gen = ScriptedGenerator(["topic2 topic3 unrelated. So the answer is Paris.", "So the answer is Dijon."], n_ctx=650)
    options = paper_options(iterations=2, top_k=1, adaptive=False, keep_passages=True, passage_order="earlier-first")
    final = list(iterretgen.run("Eiffel Dijon?", retriever=retriever, generator=gen, options=options))[-1]
    first, second = final.iterations
    assert second.passages[0].id != first.passages[0].id  # what iteration 2 found is never trimmed away
    assert second.trimmed


def test_events_are_immutable():
    gen = ScriptedGenerator(["So the answer is Dijon."])
    event = events_of(gen, iterations=1)[-1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.answer = "changed"


def test_generation_stops_once_the_answer_is_stated():
    gen = ScriptedGenerator(["Eiffel was born in Dijon. So the answer is Dijon. And then rambling on and on"])
    events = events_of(gen, iterations=1)
    assert events[-1].draft == "Eiffel was born in Dijon. So the answer is Dijon."
    assert gen.tokens_emitted == len(events[-1].draft.split())


def test_a_draft_that_runs_on_into_a_prompt_of_its_own_is_cut_there():
    """Copying a passage on, the 1.5B once wrote the next "Knowledge:" and "Title: ...
    Context: ..." lines, which the reply then showed."""
    echo = "\n\nKnowledge:\nTitle: Dijon Context: Dijon is a city in France. More words follow here"
    gen = ScriptedGenerator(["Eiffel was born in Dijon, regardless of whether ..." + echo, "Dijon"])
    first = [e for e in events_of(gen, iterations=1) if isinstance(e, DraftDone)][0].trace
    assert first.draft == "Eiffel was born in Dijon, regardless of whether ..."
    assert first.asked and first.answer == "Dijon"
    assert gen.tokens_emitted < len(("Eiffel was born in Dijon, regardless of whether ..." + echo).split())
    # Only a line of the turn's own layout: the words inside a sentence are the draft's.
    assert turn_echo("The Question: field of the form.\nQuestion time is at noon.") is None


def test_a_decimal_answer_streamed_in_pieces_is_read_whole():
    """ "4.23" streams as "4", ".", "23": a stop at "4." once made the answer "4"."""

    class Pieces(ScriptedGenerator):
        def stream(self, messages, *, max_tokens, cancel):
            self.prompts.append(list(messages))
            for piece in ["It costs more.", " So the answer is 4", ".", "23", ".", " It", " was", " measured."]:
                self.tokens_emitted += 1
                yield piece

    gen = Pieces([])
    events = events_of(gen, iterations=1)
    assert events[-1].draft == "It costs more. So the answer is 4.23."
    assert events[-1].answer == "4.23" and gen.tokens_emitted == 6


def test_stop_names_the_iteration_that_found_nothing_new():
    gen = ScriptedGenerator(["So the answer is Paris.", "So the answer is Lyon."])
    events = events_of(gen, iterations=3, adaptive=True, top_k=5)
    stopped = next(e for e in events if isinstance(e, Stopped))
    assert stopped.t == 2 and stopped.reason.describe(stopped.t) == "same top passages at iteration 2"


@pytest.mark.parametrize("mode", ["fusion", "interleave", "feedback"])
def test_combined_modes_keep_the_question_passages_against_a_misleading_draft(mode):
    misleading = "Bananas are yellow fruit. Bananas bananas yellow fruit. So the answer is bananas."
    plain = events_of(
        ScriptedGenerator([misleading, "So the answer is Dijon."]), adaptive=False, top_k=2, query_mode="draft"
    )
    fused = events_of(
        ScriptedGenerator([misleading, "So the answer is Dijon."]), adaptive=False, top_k=2, query_mode=mode
    )
    first_ids = [p.id for p in fused[-1].iterations[0].passages]
    plain_second = [p.id for p in plain[-1].iterations[1].passages]
    fused_second = [p.id for p in fused[-1].iterations[1].passages]
    assert 5 in plain_second  # the draft alone drags the banana passage in
    assert first_ids[0] in fused_second  # the question's best passage stays
    assert [e.query for e in fused if isinstance(e, QueryFormed)][1].startswith(misleading)


def test_feedback_mode_adds_the_previous_top_passage_as_a_query():
    asked = []
    recording = default_retriever()
    plain_many = recording.retrieve_many
    recording.retrieve_many = lambda queries, k: asked.append(list(queries)) or plain_many(queries, k)
    draft = "The Eiffel Tower was built by Gustave Eiffel. So the answer is Paris."
    events = events_of(
        ScriptedGenerator([draft, "So the answer is Dijon."]),
        adaptive=False,
        query_mode="feedback",
        retriever=recording,
    )
    question = "Where was the builder of the Eiffel Tower born?"
    lead = events[-1].iterations[0].passages[0]
    # The lead as the index embedded it: its title, then its text.
    assert asked == [[question], [question, f"{lead.title}\n{lead.text}\n{question}", f"{draft}\n{question}"]]
    second = [p.id for p in events[-1].iterations[1].passages]
    assert second[0] == lead.id and len(second) == 2  # the question's best passage leads
    named = ("question", "lead", "draft")
    assert [e.searches for e in events if isinstance(e, QueryFormed)] == [("question",), named]
    assert [trace.searches for trace in events[-1].iterations] == [("question",), named]


def test_each_mode_names_its_searches_in_merge_order():
    from iterretgen_tui.engine.loop.queries import searches

    untitled = Passage(3, "Gustave Eiffel was born in Dijon.", "", "/docs/notes.txt", "lines 1-2")
    assert list(searches("q?", "y\nq?", "draft")) == ["draft"]
    assert (
        list(searches("q?", "y\nq?", "fusion")) == list(searches("q?", "y\nq?", "interleave")) == ["question", "draft"]
    )
    feedback = searches("q?", "y\nq?", "feedback", untitled)
    assert feedback == {"question": "q?", "lead": f"{untitled.text}\nq?", "draft": "y\nq?"}


def test_fuse_is_reciprocal_rank_fusion():
    from iterretgen_tui.engine.retrieval.fusion import fuse

    a, b, c = (Passage(i, "t", "T", "s", score=s) for i, s in ((1, 0.9), (2, 0.8), (3, 0.7)))
    fused = fuse([[a, b, c], [b, c, a]], 3)
    assert [p.id for p in fused] == [2, 1, 3]  # 2: 1/62+1/61 > 1: 1/61+1/63 > 3: 1/63+1/62
    assert fused[0].score == 0.8
    assert [p.id for p in fuse([[a], [c, b]], 2)] == [1, 3]  # ties keep first-seen order


def test_interleave_takes_the_rankings_in_turn_each_passage_once():
    from iterretgen_tui.engine.retrieval.fusion import interleave

    a, b, c, d = (Passage(i, "t", "T", "s") for i in range(1, 5))
    assert [p.id for p in interleave([[a, b, c], [b, d, a]], 4)] == [1, 2, 4, 3]
    assert [p.id for p in interleave([[a, b], [c, d]], 3)] == [1, 3, 2]
    assert interleave([[a], []], 2) == []  # nothing past the shorter ranking
    assert [p.id for p in interleave([[a, b], [a, b]], 5)] == [1, 2]


def test_unknown_query_mode_is_refused():
    with pytest.raises(ValueError, match="query_mode"):
        events_of(ScriptedGenerator(["So the answer is Paris."]), adaptive=False, query_mode="magic")
    with pytest.raises(ValueError, match="passage_order must be one of auto, new-first, earlier-first"):
        events_of(ScriptedGenerator(["So the answer is Paris."]), passage_order="shuffled")


def test_a_looping_draft_is_stopped_trimmed_and_asked_for_its_answer():
    loop = "It is a tower that is shared among all the people. " * 20
    gen = ScriptedGenerator(["Gustave Eiffel built it. " + loop, "Dijon", "So the answer is Dijon."])
    events = events_of(gen, adaptive=False, query_mode="draft")
    first = [e for e in events if isinstance(e, DraftDone)][0].trace
    assert first.looped and first.asked and first.stated
    assert first.draft == "Gustave Eiffel built it. It is a tower that is shared among all the people."
    assert first.answer == "Dijon"  # the follow-up's reply
    assert gen.tokens_emitted < len(loop.split()) // 5  # stopped at once, not at the token limit
    # Iteration 2 searches with the draft before its loop, not with the loop.
    query = [e for e in events if isinstance(e, QueryFormed)][1].query
    assert query == first.draft + "\nWhere was the builder of the Eiffel Tower born?"
    final = events[-1]
    assert final.evidence is not None and final.evidence.text in " ".join(p.text for p in final.sources)
    assert final.sources[final.evidence.n - 1].id == final.evidence.passage_id


def test_an_empty_draft_feeds_the_evidence_sentence_to_the_next_query():
    gen = ScriptedGenerator(["", "", "", "So the answer is Dijon."])  # no draft, nothing when asked or made to go on
    events = events_of(gen, adaptive=False, query_mode="draft")
    first = [e for e in events if isinstance(e, DraftDone)][0].trace
    assert first.draft == "" and not first.stated and first.evidence is not None
    query = [e for e in events if isinstance(e, QueryFormed)][1].query
    assert query == first.evidence.text + "\nWhere was the builder of the Eiffel Tower born?"


def test_an_open_question_gets_the_cited_prompt_and_its_reply_is_the_answer():
    reply = "It was built by Gustave Eiffel [1], who was born in Dijon [2]."
    gen = ScriptedGenerator([reply])
    events = list(
        iterretgen.run(
            "How was the Eiffel Tower built?",
            retriever=default_retriever(),
            generator=gen,
            options=paper_options(iterations=1, top_k=2),
        )
    )
    final = events[-1]
    assert final.kind == "open" and final.answer == reply
    assert len(gen.prompts) == 1  # an open answer is its reply: no follow-up asked
    assert gen.prompts[0][-1]["content"].startswith("Knowledge:\n[1] Title: ")
