"""An answer traced back to the option it stands for (engine/loop/choices.py)."""

from __future__ import annotations

from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.choices import named_options, option_answered
from iterretgen_tui.engine.loop.events import FinalAnswer
from iterretgen_tui.engine.loop.question_kind import yes_no_answer
from iterretgen_tui.engine.loop.trust import reply_text
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.retriever import Retriever

from .fakes import HashEmbedder, ListIndex, ScriptedGenerator, paper_options

QUESTION = "Which film has the director died earlier, Payment On Demand or My Cousin From Warsaw?"
DRAFT = (
    "Payment On Demand was directed by Curtis Bernhardt. Curtis Bernhardt died on 13 February 1981. "
    "My Cousin from Warsaw was directed by Carl Boese. Carl Boese died on 6 July 1958. "
    "1958 is earlier than 1981. So the answer is Carl Boese."
)


def test_the_options_a_question_names():
    assert named_options(QUESTION) == (("Payment On Demand",), "My Cousin From Warsaw")
    # Titles with commas and question marks of their own (hotpotqa, 2wiki).
    assert named_options(
        "Which film has the director born earlier, The Adventures Of Priscilla, Queen Of The Desert "
        "or Harvest: 3,000 Years?"
    ) == (("The Adventures Of Priscilla, Queen Of The Desert", "Queen Of The Desert"), "Harvest: 3,000 Years")
    assert named_options("Who died later, What Will You Do When You Catch Me? or Ringo Lam?") == (
        ("What Will You Do When You Catch Me?",),
        "Ringo Lam",
    )
    assert named_options("Is Muskegon County Airport or John Wayne Airport further west?") is None
    assert named_options("Which file holds the settings?") is None


def test_an_answer_that_names_neither_option_becomes_the_one_it_stands_for():
    assert option_answered(QUESTION, DRAFT, "Carl Boese") == "My Cousin From Warsaw"
    bernhardt = DRAFT.replace("So the answer is Carl Boese.", "So the answer is Curtis Bernhardt.")
    assert option_answered(QUESTION, bernhardt, "Curtis Bernhardt") == "Payment On Demand"
    priscilla = (
        "Which film has the director born earlier, The Adventures Of Priscilla, Queen Of The Desert "
        "or Harvest: 3,000 Years?"
    )
    draft = "The director of The Adventures of Priscilla, Queen of the Desert is Stephan Elliott."
    assert option_answered(priscilla, draft, "Stephan Elliott") == "The Adventures Of Priscilla, Queen Of The Desert"


def test_an_answer_is_left_alone_when_nothing_ties_it_to_one_option():
    assert option_answered(QUESTION, DRAFT, "My Cousin from Warsaw") == "My Cousin from Warsaw"
    assert option_answered(QUESTION, DRAFT, "Payment On Demand (1951)") == "Payment On Demand (1951)"
    both = "Carl Boese directed neither Payment On Demand nor My Cousin From Warsaw. So the answer is Carl Boese."
    assert option_answered(QUESTION, both, "Carl Boese") == "Carl Boese"
    assert option_answered(QUESTION, "So the answer is Ann Hui.", "Ann Hui") == "Ann Hui"
    assert option_answered(QUESTION, DRAFT, "") == ""
    assert option_answered("Who directed My Cousin From Warsaw?", DRAFT, "Carl Boese") == "Carl Boese"


def test_the_loop_answers_with_the_option():
    embedder = HashEmbedder()
    corpus = [
        Passage(1, "My Cousin from Warsaw is a 1931 film directed by Carl Boese.", "My Cousin from Warsaw", "/a.md"),
        Passage(2, "Carl Boese (1887 - 1958) was a German film director.", "Carl Boese", "/b.md"),
    ]
    events = iterretgen.run(
        QUESTION,
        retriever=Retriever(embedder, ListIndex(embedder, corpus)),
        generator=ScriptedGenerator([DRAFT]),
        options=paper_options(iterations=1, top_k=2),
    )
    [final] = [e for e in events if isinstance(e, FinalAnswer)]
    assert final.answer == "My Cousin From Warsaw"
    assert final.iterations[0].stated


def test_a_yes_or_no_questions_answer_is_the_yes_or_no_it_opens_with():
    asked = "Can a backup be stopped in the jobs list?"
    assert yes_no_answer(asked, "Yes, you can stop it by pressing Ctrl+Q") == "Yes"
    assert yes_no_answer(asked, "no. It runs to its end") == "no"
    assert yes_no_answer(asked, "No charge") == "No charge"  # no yes or no: the answer as it is
    assert yes_no_answer("Which key stops a backup?", "Yes, Esc") == "Yes, Esc"  # not a yes-or-no question
    # In the loop: a draft that states no answer, asked for it outright.
    embedder = HashEmbedder()
    corpus = [Passage(1, "Esc stops a running backup in the jobs list.", "Jobs", "/jobs.md")]
    draft = "A running backup can be stopped in the jobs list."
    events = iterretgen.run(
        asked,
        retriever=Retriever(embedder, ListIndex(embedder, corpus)),
        generator=ScriptedGenerator([draft, "Yes, you can stop it by pressing Ctrl+Q."]),
        options=paper_options(iterations=1, top_k=1),
    )
    [final] = [e for e in events if isinstance(e, FinalAnswer)]
    assert final.iterations[0].asked and final.answer == "Yes"
    assert reply_text(final) == f"Yes\n{draft}"  # its reasoning under it
