"""Passages read in part (engine/loop/compression.py), and the loop that reads them."""

from __future__ import annotations

import pytest

from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.compression import GAP, SentenceMemo, read_parts
from iterretgen_tui.engine.loop.events import DraftDone, FinalAnswer, FirstAnswer, Stopped, StopReason
from iterretgen_tui.engine.loop.prompts import knowledge_line
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.retriever import Retriever

from .fakes import HashEmbedder, ListIndex, ScriptedGenerator, paper_options


def words(text: str) -> int:
    return len(text.split())


TIMERS = Passage(
    1,
    "Timers call a function later. The setTimeout() method schedules a one-time callback. "
    "The clearTimeout() method cancels a Timeout object created by setTimeout(). "
    "Timers are not part of the language itself.",
    "Timers",
    "timers.md",
)
OPTIONS = Passage(
    2,
    "The watch command takes these options:\n"
    "* --poll checks files at an interval\n"
    "* --quiet hides the restart notices\n"
    "* --delay waits before restarting\n"
    "Watching is off by default.",
    "Watch",
    "watch.md",
)
BANANAS = Passage(3, "Bananas are yellow fruit. They grow in warm places and in big bunches.", "Bananas", "fruit.md")


def parts(passages, asked, *, mode="budget", tokens=40, embedder=None):
    return read_parts(passages, asked, embedder or HashEmbedder(), mode=mode, tokens=tokens, count_tokens=words)


def test_the_sentence_that_answers_is_read_and_a_gap_marks_what_was_left_out():
    [text] = parts([TIMERS], ["Which method cancels a Timeout object?"], tokens=18)
    assert "The clearTimeout() method cancels a Timeout object created by setTimeout()." in text
    assert "Timers are not part of the language" not in text
    assert words(text) <= 18


def test_kept_sentences_keep_the_passages_order():
    [text] = parts([TIMERS], ["Which method cancels a Timeout object scheduled by setTimeout?"], tokens=30)
    kept = [s for s in ("The setTimeout() method", "The clearTimeout() method") if s in text]
    assert kept == ["The setTimeout() method", "The clearTimeout() method"]
    assert text.index("setTimeout() method schedules") < text.index("clearTimeout() method cancels")


def test_a_list_item_comes_with_its_lead_in():
    [text] = parts([OPTIONS], ["What does --quiet hide?"], tokens=20)
    assert text.startswith("The watch command takes these options:")
    assert "--quiet hides the restart notices" in text
    assert f"options: {GAP} • --quiet" in text  # the items between are left out, and it says so


def test_an_option_the_question_names_is_read_where_it_is_defined():
    # The embedder scored the tool's opening closer to "What does the -c option of
    # asn1Parser do?" than the option's own line, and the reader answered from the opening.
    manual = Passage(
        5,
        "The asn1Parser tool reads a file of definitions and writes an array for the library.\n"
        "Usage: asn1Parser [OPTION] FILE\n"
        "-c, --check checks the syntax only\n-o, --output=FILE output file",
        "Manual",
        "manual.pdf",
    )
    question = "What does the -c option of asn1Parser do?"
    [text] = parts([manual], [question], tokens=12)
    assert text == "-c, --check checks the syntax only"
    [text] = parts([manual], [question.replace("-c", "-C")], tokens=12)  # case matters: -C is another option
    assert "--check" not in text


def test_a_tables_rows_and_a_lists_items_are_read_a_line_each():
    rooms = Passage(
        3, "| Room | Seats |\n| --- | --- |\n| Aurora | 12 |\n| Delta | 20 |\n| Echo | 8 |", "Rooms", "rooms.md"
    )
    [text] = parts([rooms], ["How many seats does Delta have?"], tokens=100)
    assert text == "Room: Aurora; Seats: 12\nRoom: Delta; Seats: 20\nRoom: Echo; Seats: 8"  # one run of cells before
    [text] = parts([OPTIONS], ["Which options does the watch command take?"], tokens=100)
    assert text.startswith("The watch command takes these options:\n• --poll checks files at an interval\n• --quiet")


def test_the_budget_holds_for_all_passages_together_and_leaves_out_what_does_not_bear():
    passages = [TIMERS, OPTIONS, BANANAS]
    for budget in (20, 45):
        got = parts(passages, ["Which method cancels a Timeout object?"], tokens=budget)
        given = [(p, text) for p, text in zip(passages, got) if text is not None]
        assert given[0][0] is TIMERS and "clearTimeout() method cancels" in given[0][1]
        assert sum(words(knowledge_line(p.title, text)) for p, text in given) <= budget
        assert len(given) == (1 if budget == 20 else 2)  # a passage none of whose sentences fits is left out


def test_sentences_mode_keeps_the_best_of_every_passage_and_whole_mode_keeps_all():
    passages = [TIMERS, BANANAS]
    best = parts(passages, ["Which method cancels a Timeout object?"], mode="sentences")
    assert all(text is not None for text in best)
    assert best[1].count(".") <= 2 and "Bananas" in best[1]
    assert parts(passages, ["anything"], mode="whole") == [TIMERS.text, BANANAS.text]


def test_the_memo_embeds_each_sentence_once():
    embedder = HashEmbedder()
    memo = SentenceMemo(embedder)
    parts([TIMERS], ["Which method cancels a Timeout?"], embedder=memo)
    parts([TIMERS], ["Which method schedules a callback?"], embedder=memo)
    sentence_batches = [batch for batch in embedder.calls if "Timers call a function later." in batch]
    assert len(sentence_batches) == 1


EIFFEL = Passage(
    1,
    "Gustave Eiffel was born in Dijon in 1832. He studied chemistry in Paris. "
    "His company built bridges across Europe. He died in 1923 in Paris.",
    "Gustave Eiffel",
    "/docs/gustave.md",
)


def test_the_loop_reads_compressed_passages_and_cites_the_whole_ones():
    corpus = [
        EIFFEL,
        Passage(2, "Dijon is famous for its mustard. It lies in Burgundy.", "Dijon", "/docs/dijon.md"),
        Passage(3, "Bananas are yellow fruit that grow in warm places.", "Bananas", "/docs/bananas.md"),
    ]
    embedder = HashEmbedder()
    generator = ScriptedGenerator(["Gustave Eiffel was born in Dijon. So the answer is Dijon."])
    events = list(
        iterretgen.run(
            "Where was Gustave Eiffel born?",
            retriever=Retriever(embedder, ListIndex(embedder, corpus)),
            generator=generator,
            options=paper_options(iterations=2, top_k=2, adaptive=False, read="budget", read_tokens=24),
        )
    )
    knowledge = generator.prompts[0][-1]["content"]
    assert "Gustave Eiffel was born in Dijon in 1832." in knowledge
    assert "His company built bridges across Europe" not in knowledge  # read in part
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    # The sources and evidence are the whole passages the reader was given parts of.
    assert (final.sources[0].id, final.sources[0].text) == (1, corpus[0].text)
    assert final.evidence.passage_id == 1 and final.sources[final.evidence.n - 1].id == 1
    # The first stated answer is announced while iteration 2 checks it, and timed.
    [first] = [e for e in events if isinstance(e, FirstAnswer)]
    assert first.t == 1 and first.answer.answer == "Dijon"
    assert events.index(first) == next(i for i, e in enumerate(events) if isinstance(e, DraftDone)) + 1
    assert final.first_answer_seconds == first.seconds


def test_the_iterations_after_the_first_read_within_their_own_budget():
    corpus = [
        EIFFEL,
        Passage(2, "Dijon is famous for its mustard. It lies in Burgundy.", "Dijon", "/docs/dijon.md"),
    ]
    embedder = HashEmbedder()
    generator = ScriptedGenerator(["Gustave Eiffel was born in Dijon. So the answer is Dijon."] * 2)
    options = paper_options(iterations=2, top_k=2, adaptive=False, read="budget", read_tokens=24, check_read_tokens=400)
    list(
        iterretgen.run(
            "Where was Gustave Eiffel born?",
            retriever=Retriever(embedder, ListIndex(embedder, corpus)),
            generator=generator,
            options=options,
        )
    )
    drafts = [
        p[-1]["content"] for p in generator.prompts if "Gustave Eiffel was born in Dijon in 1832" in p[-1]["content"]
    ]
    assert len(drafts) == 2
    assert "His company built bridges across Europe" not in drafts[0]  # 24 tokens at iteration 1
    assert "His company built bridges across Europe" in drafts[1]  # 400 while checking it
    assert (options.read_budget(1), options.read_budget(2), options.read_budget(3)) == (24, 400, 400)


def test_a_kept_passage_is_read_as_before_and_the_check_budget_goes_to_new_ones():
    dijon = Passage(
        2, "Dijon is famous for its mustard. It lies in Burgundy. It has a cathedral.", "Dijon", "/docs/d.md"
    )
    embedder = HashEmbedder()
    generator = ScriptedGenerator(["Gustave Eiffel was born in Dijon. So the answer is Dijon."] * 2)
    options = paper_options(
        iterations=2,
        top_k=1,
        adaptive=False,
        keep_passages=True,
        passage_order="earlier-first",
        read_tokens=24,
        check_read_tokens=400,
    )
    events = list(
        iterretgen.run(
            "Where was Gustave Eiffel born?",
            retriever=Retriever(embedder, ListIndex(embedder, [EIFFEL, dijon])),
            generator=generator,
            options=options,
        )
    )
    first, second = [e.trace for e in events if isinstance(e, DraftDone)]
    assert [p.id for p in first.passages] == [1] and [p.id for p in second.passages] == [1, 2]
    knowledge = [
        p[-1]["content"].split("\n\nQuestion:")[0] for p in generator.prompts if "Knowledge:" in p[-1]["content"]
    ]
    # Iteration 2's prompt starts as iteration 1's did: llama.cpp evaluates only the new passage.
    assert knowledge[1].startswith(knowledge[0] + "\n")
    assert "His company built bridges across Europe" not in knowledge[1]
    assert knowledge_line("Dijon", dijon.text) in knowledge[1]  # whole, within 400 tokens


@pytest.mark.parametrize(
    ("question", "stops"),
    [("Where was Gustave Eiffel born?", True), ("How did Gustave Eiffel build bridges?", False)],
)
def test_a_factoids_searches_that_find_only_passages_weighed_before_stop_the_loop(question, stops):
    # Iteration 1 is handed both passages and reads only Eiffel's; iteration 2's searches
    # find the same two at their top. A factoid's check would choose from them again; an
    # open question's check reads what the budget left out of them.
    embedder = HashEmbedder()
    generator = ScriptedGenerator(["So the answer is Paris."] * 2 + ["Eiffel built them in iron."] * 4)
    options = paper_options(
        iterations=2, top_k=2, adaptive=True, keep_passages=True, read="budget", read_tokens=24, check_read_tokens=24
    )
    events = list(
        iterretgen.run(
            question,
            retriever=Retriever(embedder, ListIndex(embedder, [EIFFEL, BANANAS])),
            generator=generator,
            options=options,
        )
    )
    first = next(e.trace for e in events if isinstance(e, DraftDone))
    assert [p.id for p in first.passages] == [1]  # nothing of the bananas was read
    stopped = next(e for e in events if isinstance(e, Stopped))
    assert (stopped.reason is StopReason.SAME_PASSAGES) == stops
    assert len([e for e in events if isinstance(e, DraftDone)]) == (1 if stops else 2)
