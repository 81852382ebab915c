"""A question back when the question points at one of several things the passages name:
the rule on hand-built passages, the loop that asks instead of drafting, and how the
question back is shown, saved and read by the next turn."""

from __future__ import annotations

from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.ambiguity import ambiguity, candidates, chosen, references
from iterretgen_tui.engine.loop.conversation import REWRITE_INSTRUCTION, Asked, Turn, turn_of
from iterretgen_tui.engine.loop.events import FinalAnswer, Stopped, StopReason, Token
from iterretgen_tui.engine.loop.serialize import final_from_dict, final_to_dict
from iterretgen_tui.engine.loop.trust import asks_back, reply_text
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.retriever import Retriever
from iterretgen_tui.history import answer_markdown

from .fakes import HashEmbedder, ListIndex, ScriptedGenerator, paper_options

CLINICS = [
    Passage(1, "The Causeway VA Clinic offers primary care. It is open on weekdays.", "Clinics", "/d/a.md"),
    Passage(
        2, "Mental health care is given at the Maplewood VA Clinic and at the Causeway VA Clinic.", "Care", "/d/b.md"
    ),
    Passage(3, "Services ProvidedMinneapolis VA Clinic: x-rays and lab tests.", "Minneapolis", "/d/c.md"),
]
QUESTION = "What services does the clinic provide?"
BACK = "Which clinic do you mean: Causeway VA Clinic, Maplewood VA Clinic or Minneapolis VA Clinic?"


def test_a_reference_to_one_of_several_named_things_is_asked_back_with_their_names():
    # "the clinic" names no clinic; the passages name three (one run together with a heading).
    assert ambiguity(Asked(QUESTION), CLINICS) == BACK
    assert ambiguity(Asked("Is this clinic open on Sundays?"), CLINICS).startswith("Which clinic do you mean:")


def test_no_question_back_where_the_reference_is_resolved_or_not_ambiguous():
    # The conversation used the word: it is about a clinic already.
    earlier = (Turn("Where is the Causeway VA Clinic?", "In Boston"),)
    assert ambiguity(Asked(QUESTION, earlier), CLINICS) == ""
    # A question that names something says which one ("the" points at nothing).
    assert ambiguity(Asked("What services does the clinic in Maplewood provide?"), CLINICS) == ""
    # One such thing named: it is the one meant.
    assert ambiguity(Asked(QUESTION), CLINICS[:1]) == ""
    # "the X" that says itself which one: a clause, an "of", an ordinal or a number.
    assert ambiguity(Asked("What does the clinic that opens on weekdays offer?"), CLINICS) == ""
    assert ambiguity(Asked("Where is the second clinic?"), CLINICS) == ""
    # The passages name none of the kind.
    assert ambiguity(Asked("What does the hospital offer?"), CLINICS) == ""


DEPARTMENTS = [
    Passage(1, "The Auburn Police Department runs a volunteer program for Explorers.", "Auburn", "/d/a.md"),
    Passage(
        2,
        "POSITIONThe San Bruno Police Department hires cadets. Its Explorer program has help from the Fire Department.",
        "San Bruno",
        "/d/b.md",
    ),
    Passage(3, "Volunteers of the Police Department help at events.", "Volunteers", "/d/c.md"),
]


def test_a_kind_that_several_names_end_with_is_asked_back():
    # "the Police Department" is written as a name but names only a kind here.
    back = "Which Police Department do you mean: Auburn Police Department or San Bruno Police Department?"
    assert ambiguity(Asked("Are volunteers essential to the Police Department's success?"), DEPARTMENTS) == back
    # A name the question gives, a capitalised word that says which ("the COVID-19 vaccines"),
    # or a name the passages do not share with others is no question back.
    assert ambiguity(Asked("Does the Auburn Police Department hire cadets?"), DEPARTMENTS) == ""
    assert ambiguity(Asked("Who runs the Police Department in Auburn?"), DEPARTMENTS) == ""
    assert ambiguity(Asked("Does the San Bruno Police Department hire cadets?"), DEPARTMENTS) == ""
    assert ambiguity(Asked("Who runs the Police Department?"), DEPARTMENTS[:1]) == ""
    # A question may name something ("Explorer") without saying which department: pages of
    # two tell of Explorers. Only the names ending with the whole reference are listed.
    question = "What does the police department's Explorer program offer?"
    back = "Which police department do you mean: Auburn Police Department or San Bruno Police Department?"
    assert ambiguity(Asked(question), DEPARTMENTS) == back
    # One page holds the named word, with one police department: that one is meant.
    assert ambiguity(Asked(question), DEPARTMENTS[:1]) == ""
    # A name that holds a word the question names says which.
    assert ambiguity(Asked("What does the police department in San Bruno offer?"), DEPARTMENTS) == ""


RELEASES = [
    Passage(
        1, "This release merges the security fix that appears in v2.30.7.", "Git v2.38.3 Release Notes", "/d/3.txt"
    ),
    Passage(
        2, "This release merges the security fix that appears in v2.30.6.", "Git v2.38.1 Release Notes", "/d/1.txt"
    ),
    Passage(3, "Fixes since v2.37: a bugfix to subtree.", "Git v2.38 Release Notes › Fixes since v2.37", "/d/0.txt"),
]


def test_where_the_documents_are_the_things_meant_their_titles_name_them():
    # No name in the text ends with "release"; three documents' titles name releases.
    back = (
        "Which maintenance release do you mean: "
        "Git v2.38.3 Release Notes, Git v2.38.1 Release Notes or Git v2.38 Release Notes?"
    )
    assert ambiguity(Asked("What security fix does the maintenance release carry?"), RELEASES) == back
    # A question holding a title whole says which; one document's title is no choice.
    assert ambiguity(Asked("Does this release, Git v2.38.1 Release Notes, merge a fix?"), RELEASES) == ""
    films = [
        Passage(1, "A 1936 film.", "That Devil, Bateese", "/d/b.txt"),
        Passage(2, "A 1949 film.", "That Devil Quemado", "/d/q.txt"),
    ]
    assert ambiguity(Asked("Which came out earlier, She Shall Have Music or That Devil, Bateese?"), films) == ""
    assert ambiguity(Asked("What does the release fix?"), RELEASES[:1]) == ""
    # A section's heading names what the section does, no thing of its kind.
    book = "Storing Lists of Values with Vectors - The Rust Programming Language"
    vectors = [
        Passage(1, "To access each element in turn, iterate.", f"{book} › Iterating Over the Values", "/d/v.html"),
        Passage(2, "Vectors store values.", f"{book} › Storing Lists of Values", "/d/v.html"),
    ]
    assert ambiguity(Asked("How do I iterate over the values in a vector?"), vectors) == ""
    # The head in lower case or before lower-case words is no name of that kind: a page on
    # "Vernon Maxwell (American football)" is no "former American"; code is no name either.
    players = [
        Passage(1, "He played linebacker.", "Vernon Maxwell (American football)", "/d/v.txt"),
        Passage(2, "He played linebacker.", "Anthony Simmons (American football)", "/d/a.txt"),
        Passage(3, "Returns the joined path.", "Path › path.join([...paths])", "/d/p.txt"),
        Passage(4, "Resolves a path.", "Path › path.resolve([...paths])", "/d/p.txt"),
    ]
    assert ambiguity(Asked("What is the nick name of this former American player?"), players) == ""
    assert ambiguity(Asked("What does this joined path hold?"), players) == ""


def test_references_are_demonstratives_and_a_bare_the_and_no_relative_that():
    # Demonstratives first, up to a function word; "the" where the question names nothing.
    assert references("What does this clinic provide for the public?") == [["clinic", "provide"], ["public"]]
    assert references("What does this clinic provide for the Navy?") == [["clinic", "provide"]]
    # "that" after a noun starts a clause; after a function word it points.
    assert references("Name the river that Toongabbie Creek flows into.") == []
    assert references("What is the purpose of that NASA mission?")[0] == ["NASA", "mission"]


def test_candidates_are_names_ending_with_the_head_and_more_than_the_reference():
    passages = [Passage(1, "The State Library and the California State Library lend books.", "", "/d/l.md")]
    # "State Library" is only the reference's own words: no candidate.
    assert candidates("library", passages, ["state", "library"]) == ["California State Library"]
    # A plural head also takes singular names; a name continuing past the head is not one.
    passages = [Passage(1, "Sampson State Park and Long Point State Park Road are near.", "", "/d/p.md")]
    assert candidates("parks", passages, ["parks"]) == ["Sampson State Park"]


def loop(question: str, **options) -> tuple[list, ScriptedGenerator]:
    embedder = HashEmbedder()
    generator = ScriptedGenerator(["The Causeway VA Clinic. So the answer is primary care."])
    events = list(
        iterretgen.run(
            question,
            retriever=Retriever(embedder, ListIndex(embedder, CLINICS)),
            generator=generator,
            options=paper_options(**{"iterations": 2, "top_k": 3, **options}),
        )
    )
    return events, generator


def test_the_loop_asks_back_instead_of_drafting_and_lists_where_the_names_are_from():
    events, generator = loop(QUESTION)
    final = events[-1]
    assert isinstance(final, FinalAnswer) and final.asked_back.startswith("Which clinic do you mean: ")
    # The names in the order of the ranking that found them.
    assert all(name in final.asked_back for name in ("Causeway VA Clinic", "Maplewood", "Minneapolis VA Clinic"))
    assert [e.reason for e in events if isinstance(e, Stopped)] == [StopReason.ASKED_BACK]
    assert not generator.prompts and not any(isinstance(e, Token) for e in events)  # nothing drafted
    assert {p.source for p in final.sources} == {"/d/a.md", "/d/b.md", "/d/c.md"}
    assert asks_back(final) and reply_text(final) == final.asked_back
    shown = answer_markdown(final)
    assert f"**{final.asked_back}**" in shown and "Sources" in shown and "Answer:" not in shown
    # Saved and read back; the next turn reads the question back as the assistant's turn.
    again = final_from_dict(final_to_dict(final))
    assert again == final
    assert turn_of(again) == Turn(QUESTION, final.asked_back)


def test_asking_back_can_be_turned_off_and_a_clear_question_is_drafted():
    events, generator = loop(QUESTION, ask_back=False)
    assert events[-1].asked_back == "" and generator.prompts
    events, generator = loop("What does the Causeway VA Clinic offer?")
    assert events[-1].asked_back == "" and events[-1].answer == "primary care"


PARKS = "Which park do you mean: Sampson State Park, Long Point State Park or Watkins Glen State Park?"


def test_a_reply_that_names_one_of_the_choices_is_read_as_the_question_about_it():
    turns = (Turn("Are dogs allowed in the park?", PARKS),)
    assert chosen("Long Point", turns) == "Are dogs allowed in Long Point State Park?"
    assert chosen("the watkins glen one", turns) == "Are dogs allowed in Watkins Glen State Park?"
    assert chosen("State Park", turns) == ""  # names all three
    # A reply that says which in words of its own: the reference with those words after it.
    assert chosen("The one on Seneca Lake", turns) == "Are dogs allowed in the park on Seneca Lake?"
    assert chosen("I mean the Sonnenberg one", turns) == "Are dogs allowed in the park Sonnenberg?"
    assert chosen("In Ithaca , please", turns) == "Are dogs allowed in the park in Ithaca?"
    for other in ("Sonnenberg", "Thanks", "Never mind", "yes", "Is it open in winter?", "The one my aunt likes"):
        assert chosen(other, turns) == ""  # the reader reads it: a first word's capital may only start it
    assert chosen("Long Point", (Turn("Are dogs allowed there?", "Yes."),)) == ""  # nothing was asked back
    # A version is chosen with or without its "v".
    releases = (
        Turn(
            "What does the release fix?",
            "Which release do you mean: Git v2.37.5 Release Notes or Git v2.38.1 Release Notes?",
        ),
    )
    assert chosen("the 2.37.5 one", releases) == "What does Git v2.37.5 Release Notes fix?"
    assert chosen("v2.38.1", releases) == "What does Git v2.38.1 Release Notes fix?"
    assert chosen("the 2.39.5 one", releases) == "What does the release 2.39.5 fix?"  # not listed
    # In the loop: no rewrite is generated, and the choice is what is searched and read.
    generator = ScriptedGenerator(["Dogs are welcome on a leash. So the answer is yes."])
    events = list(
        iterretgen.run(
            "Long Point",
            retriever=Retriever(HashEmbedder(), ListIndex(HashEmbedder(), CLINICS)),
            generator=generator,
            options=paper_options(iterations=1, top_k=2),
            turns=turns,
        )
    )
    assert events[-1].standalone == "Are dogs allowed in Long Point State Park?"
    assert all(REWRITE_INSTRUCTION != prompt[0]["content"] for prompt in generator.prompts)


def test_eval_scores_a_question_asked_back_as_one_with_no_answer_at_every_t():
    from iterretgen_tui.engine.evaluation import evaluate
    from iterretgen_tui.engine.evaluation.datasets import Question

    embedder = HashEmbedder()
    question = Question("q1", QUESTION, ("primary care",), {"/d/a.md": 1})
    records = [
        evaluate.evaluate_question(
            question,
            retriever=Retriever(embedder, ListIndex(embedder, CLINICS)),
            generator=ScriptedGenerator(["So the answer is primary care."]),
            options=paper_options(iterations=3, top_k=3),
            stop_adaptively=adaptive,
        )
        for adaptive in (False, True)
    ]
    assert [len(r["iterations"]) for r in records] == [3, 1]
    assert all(r["adaptive"] == {"t": 1, "reason": "asked_back"} for r in records)
    [row] = evaluate.summarize(records[:1], [3], judged=False)
    assert row["acc"] == 0.0 and evaluate.summarize_adaptive(records, judged=False)["acc"] == 0.0
