"""An answer that resolves only a two-hop question's inner part, and the rest of the
question asked next (engine/loop/bridges.py)."""

from __future__ import annotations

from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.bridges import answer_the_rest, rest_of_question
from iterretgen_tui.engine.loop.events import FinalAnswer
from iterretgen_tui.engine.loop.question_kind import FACTOID
from iterretgen_tui.engine.loop.serialize import final_from_dict, final_to_dict
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.retriever import Retriever
from iterretgen_tui.history import answer_markdown

from .fakes import HashEmbedder, ListIndex, ScriptedGenerator, paper_options

QUESTION = "Who married the publisher of abolitionist newspaper The North Star?"
DRAFT = (
    "The publisher of the abolitionist newspaper The North Star was Frederick Douglass. "
    "So the answer is Frederick Douglass."
)


def test_the_rest_of_the_question_with_the_bridge_filled_in():
    assert rest_of_question(QUESTION, DRAFT, "Frederick Douglass") == "Who married Frederick Douglass?"
    # The phrase ends on a preposition, or in a bracket.
    assert (
        rest_of_question(
            "Who is the employer of the person Mach's principle was named after?",
            "The person Mach's principle was named after is Ernst Mach. So the answer is Ernst Mach.",
            "Ernst Mach",
        )
        == "Who is the employer of Ernst Mach?"
    )
    assert (
        rest_of_question(
            "What is the place of birth of the director of film The Zone (2017 Film)?",
            "The director of the film The Zone (2017 film) is Denys Desjardins. So the answer is Denys Desjardins.",
            "Denys Desjardins",
        )
        == "What is the place of birth of Denys Desjardins?"
    )
    assert (
        rest_of_question(
            "Which country the director of film The White Countess is from?",
            "The director of The White Countess is James Ivory.",
            "James Ivory",
        )
        == "Which country James Ivory is from?"
    )


def test_a_question_word_that_asks_something_of_the_phrase_after_it():
    draft = "The builder of the Eiffel Tower was Gustave Eiffel. So the answer is Gustave Eiffel."
    assert rest_of_question("Where was the builder of the Eiffel Tower born?", draft, "Gustave Eiffel") == (
        "Where was Gustave Eiffel born?"
    )
    # The phrase is what is asked for, or the question word asks for the phrase itself.
    assert rest_of_question("Who was the builder of the Eiffel Tower?", draft, "Gustave Eiffel") is None
    assert (
        rest_of_question(
            "Where was the place of death of the builder of the Eiffel Tower?",
            "The place of death of the builder of the Eiffel Tower was Paris.",
            "Paris",
        )
        is None
    )


def test_no_rest_when_the_answer_is_what_was_asked():
    # The phrase the answer names opens the question: it is the question's own subject.
    assert (
        rest_of_question(
            "What is the seat of the county where Van Hook Township is located?",
            "The seat of the county is Stanley. So the answer is Stanley.",
            "Stanley",
        )
        is None
    )
    # The draft says more than "X is ANSWER" of it, or names no phrase of the question.
    assert rest_of_question(QUESTION, "Frederick Douglass married Helen Pitts.", "Helen Pitts") is None
    assert (
        rest_of_question(QUESTION, "The North Star is a newspaper. So the answer is Anna Murray.", "Anna Murray")
        is None
    )
    # The question goes on with a clause the draft's phrase left out.
    assert (
        rest_of_question(
            "What is the name of the executive producer of the film that has a score composed by Jerry Goldsmith?",
            "The executive producer of the film is Steven Spielberg.",
            "Steven Spielberg",
        )
        is None
    )
    # A question that names two options, or an answer of no content words.
    assert (
        rest_of_question("Who was born first, the publisher of The North Star or Ann Hui?", DRAFT, "Frederick Douglass")
        is None
    )
    assert rest_of_question(QUESTION, "The publisher of The North Star was yes.", "yes") is None
    # "How much" asks the amount the phrase is: "How much does it $0.02?" is no question.
    cost = "How much does it cost to store a gigabyte in S3 per month?"
    assert rest_of_question(cost, "The cost to store a gigabyte in S3 per month is $0.02.", "$0.02") is None
    founder = "The founder of Apple was Steve Jobs."
    assert rest_of_question("How many children did the founder of Apple have?", founder, "Steve Jobs") == (
        "How many children did Steve Jobs have?"
    )


def test_the_rest_is_asked_afresh_and_its_answer_kept_only_when_it_is_a_new_one():
    asked: list[str] = []

    def redraft(reply: str):
        def answer(question: str, kind: str) -> str:
            asked.append(question)
            assert kind == FACTOID
            return f"So the answer is {reply}." if reply else "Nothing says."

        return answer

    assert answer_the_rest(QUESTION, DRAFT, "Frederick Douglass", redraft("Helen Pitts Douglass")) == (
        "Helen Pitts Douglass",
        "Who married Frederick Douglass?",
    )
    assert asked == ["Who married Frederick Douglass?"]
    for reply in ("Frederick Douglass", "Douglass", ""):
        assert answer_the_rest(QUESTION, DRAFT, "Frederick Douglass", redraft(reply)) == ("Frederick Douglass", "")
    asked.clear()
    assert answer_the_rest(QUESTION, "So the answer is Anna.", "Anna", redraft("Helen")) == ("Anna", "")
    assert asked == []


def test_the_loop_answers_the_rest_and_says_it_asked():
    embedder = HashEmbedder()
    corpus = [
        Passage(1, "The North Star was published by Frederick Douglass.", "The North Star", "/a.md"),
        Passage(2, "In 1884 Douglass married Helen Pitts.", "Frederick Douglass", "/b.md"),
    ]
    generator = ScriptedGenerator([DRAFT, "Douglass married Helen Pitts in 1884. So the answer is Helen Pitts."])
    events = iterretgen.run(
        QUESTION,
        retriever=Retriever(embedder, ListIndex(embedder, corpus)),
        generator=generator,
        options=paper_options(iterations=1, top_k=2),
    )
    [final] = [e for e in events if isinstance(e, FinalAnswer)]
    assert final.answer == "Helen Pitts"
    [trace] = final.iterations
    assert trace.draft == DRAFT  # shown as written
    assert trace.asked_rest == "Who married Frederick Douglass?" and trace.stated and not trace.asked
    assert final_from_dict(final_to_dict(final)).iterations[0].asked_rest == trace.asked_rest
    assert "asked next: Who married Frederick Douglass?" in answer_markdown(final)
    # Asked afresh over the same passages: the same prompt, the rest in the question's place.
    first, again = generator.prompts
    assert again[:-1] == first[:-1]
    assert again[-1]["content"] == first[-1]["content"].replace(QUESTION, "Who married Frederick Douglass?")
