"""A question read with the conversation before it, with a scripted reader: the rewrite,
what retrieval and the reader then take, "your documents don't say", and the history
and `ask --continue` round trips."""

from __future__ import annotations

import dataclasses
import json
import threading

from iterretgen_tui import cli, models, session
from iterretgen_tui.engine.loop import iterretgen, outcome
from iterretgen_tui.engine.loop.answers import only_restates
from iterretgen_tui.engine.loop.conversation import (
    REWRITE_INSTRUCTION,
    Asked,
    Turn,
    accepted,
    changes_topic,
    clean_rewrite,
    kind_resolved,
    next_rewrite,
    option_resolved,
    ordinal_resolved,
    points_back,
    read_question,
    recent_turns,
    turn_of,
    turns_of,
)
from iterretgen_tui.engine.loop.events import FinalAnswer, QueryFormed, QuestionRead, StopReason
from iterretgen_tui.engine.loop.grounding import CHECK, says_unsaid, unsaid
from iterretgen_tui.engine.loop.queries import EARLIER, QUESTION
from iterretgen_tui.engine.loop.question_kind import OPEN
from iterretgen_tui.engine.loop.trust import (
    Weakness,
    declined,
    reply_text,
    restates,
    unborrowed,
    weakness,
    weakness_message,
)
from iterretgen_tui.history import History, answer_markdown
from iterretgen_tui.models import EMBEDDED_LLM

from .fakes import ScriptedGenerator, paper_options
from .test_loop import default_retriever
from .tui_support import FakeSession, HeldGenerator

TURNS = (Turn("Who built the Eiffel Tower?", "Gustave Eiffel"),)
FOLLOW_UP = "Where was he born?"
REWRITE = "Where was Gustave Eiffel born?"


def by_kind(rewrite: str, draft: str = "Gustave Eiffel was born in Dijon. So the answer is Dijon.", check: str = "Yes"):
    """A reader that rewrites, drafts and checks as the prompt asks."""

    def reply(messages) -> str:
        if messages[0]["content"] == REWRITE_INSTRUCTION:
            return rewrite
        if messages[-1]["content"].endswith(CHECK):
            return check
        return draft

    return reply


def run(generator, question=FOLLOW_UP, turns=TURNS, **options):
    return list(
        iterretgen.run(
            question,
            retriever=default_retriever(),
            generator=generator,
            options=paper_options(**{"iterations": 1, "top_k": 2, **options}),
            turns=turns,
        )
    )


def test_a_follow_up_is_searched_and_read_as_its_standalone_question():
    generator = ScriptedGenerator(by_kind(REWRITE))
    events = run(generator)
    [read] = [e for e in events if isinstance(e, QuestionRead)]
    assert (read.standalone, read.turns) == (REWRITE, 1)
    formed = next(e for e in events if isinstance(e, QueryFormed))
    # The first search takes turns with the question after the turn before it.
    assert formed.query == REWRITE and formed.searches == (QUESTION, EARLIER)
    final = events[-1]
    assert final.question == FOLLOW_UP and final.standalone == REWRITE and final.answer == "Dijon"
    draft_prompt = generator.prompts[1][-1]["content"]
    # The reader sees the earlier turn and the standalone question; the passages are this turn's.
    assert "Earlier in this conversation:\nUser: Who built the Eiffel Tower?\nAssistant: Gustave Eiffel" in draft_prompt
    assert f"Question: {REWRITE}" in draft_prompt and "Gustave Eiffel was born in Dijon" in draft_prompt


def test_a_first_question_costs_nothing_and_a_change_of_topic_is_read_alone():
    generator = ScriptedGenerator(by_kind(REWRITE))
    events = run(generator, question="Where was Gustave Eiffel born?", turns=())
    assert not any(isinstance(e, QuestionRead) for e in events)
    assert len(generator.prompts) == 1  # the draft alone: nothing rewritten
    # A question the reader repeats stood alone: it is read as asked, without the turns.
    generator = ScriptedGenerator(by_kind("What is Dijon famous for?"))
    events = run(generator, question="What is Dijon famous for in France?")
    read = next(e for e in events if isinstance(e, QuestionRead))
    assert (read.standalone, read.shown) == ("", 0)
    assert events[-1].standalone == ""
    assert "Earlier in this conversation" not in generator.prompts[1][-1]["content"]
    # One that says it changes the topic is not rewritten at all, nor searched with the turns:
    # rewritten, it may take a name from them.
    generator = ScriptedGenerator(by_kind("What is Gustave Eiffel's Dijon famous for?"))
    events = run(generator, question="By the way, what is Dijon famous for?")
    read = next(e for e in events if isinstance(e, QuestionRead))
    assert (read.standalone, read.shown) == ("", 0)
    assert next(e for e in events if isinstance(e, QueryFormed)).searches == (QUESTION,)
    assert len(generator.prompts) == 1 and "Earlier in this conversation" not in generator.prompts[0][-1]["content"]
    # Pointing back, it is still read with the turns.
    assert changes_topic("Unrelated: what is a secret?") and not changes_topic("By the way, where was he born?")


def test_a_rewrite_that_answers_or_loops_is_not_taken():
    assert accepted(REWRITE, FOLLOW_UP, TURNS)
    # A short question may stand for a long phrase of the turn before.
    setting = (
        Turn("Which setting controls how many requests the s3 commands run at once?", "max_concurrent_requests"),
    )
    long_rewrite = (
        "What is the default value for the setting that controls how many requests the s3 commands run at once?"
    )
    assert accepted(long_rewrite, "What is its default?", setting)
    # A one-word turn after another is no room for a sentence about it.
    asteroids = (
        Turn(
            "asteroids",
            "Asteroids are small, rocky objects that orbit the Sun, similar to comets; most are in the belt.",
        ),
    )
    statement = "Meteoroid is a small, rocky object that orbits the Sun, similar to asteroids and comets, most of them in the belt."
    assert not accepted(statement, "meteoroid", asteroids)
    assert not accepted("", FOLLOW_UP, TURNS)
    assert not accepted("He was born in Dijon, a city famous for its mustard and its wine.", FOLLOW_UP, TURNS)
    assert not accepted("Where was he born? " * 6, FOLLOW_UP, TURNS)
    generator = ScriptedGenerator(
        by_kind("Gustave Eiffel was born in Dijon, in Burgundy, France, in 1832, son of a merchant.")
    )
    assert read_question(FOLLOW_UP, TURNS, generator, threading.Event()).searched == FOLLOW_UP
    assert clean_rewrite('Question: "Where was Gustave Eiffel born?"\nmore') == REWRITE
    assert clean_rewrite("By the way, where was Gustave Eiffel born?") == REWRITE
    assert clean_rewrite("Oh, where was Gustave Eiffel born?") == REWRITE
    assert clean_rewrite("Ohio's capital?") == "Ohio's capital?"


def test_the_second_one_of_a_listed_answer_is_named_without_the_reader():
    question = "Which binary names does the second one provide?"
    turns = (Turn("Which package managers does Corepack support?", "Yarn and pnpm"),)
    generator = ScriptedGenerator(by_kind("Which binary names does Yarn provide?"))
    assert read_question(question, turns, generator, threading.Event()).searched == (
        "Which binary names does pnpm provide?"
    )
    assert generator.prompts == []  # no rewrite was asked for
    assert ordinal_resolved("And the latter?", "`yarn`, `pnpm` or `npm`.") == "And `npm`?"
    assert ordinal_resolved("What does the first one cost?", "A monthly plan; a yearly plan") == (
        "What does A monthly plan cost?"
    )
    # No list to choose from: a sentence, one item, or too few items for the place named.
    sentence = "Corepack supports Yarn and pnpm, package managers that many projects use today for installs."
    assert ordinal_resolved("What does the second one cost?", sentence) == ""
    assert ordinal_resolved("What does the second one cost?", "Yarn") == ""
    assert ordinal_resolved("What about the third one?", "Yarn and pnpm") == ""
    assert ordinal_resolved("Which one is faster?", "Yarn and pnpm") == ""


def test_another_option_of_the_same_command_is_asked_without_the_reader():
    turns = (Turn("What does uniq -c do?", "It prefixes lines by the number of occurrences."),)
    generator = ScriptedGenerator(by_kind("The command uniq -d prints the duplicate lines."))
    assert read_question("And -d?", turns, generator, threading.Event()).searched == "What does uniq -d do?"
    assert generator.prompts == []  # no rewrite was asked for
    # It is read as a question of its own: shown the turn, the draft copied its answer.
    events = run(generator, question="And -d?", turns=turns)
    assert next(e for e in events if isinstance(e, QuestionRead)).standalone == "What does uniq -d do?"
    assert "Earlier in this conversation" not in generator.prompts[0][-1]["content"]
    # The full question is found behind earlier such follow-ups; a long option, or "the ... flag".
    turns += (Turn("And -d?", "It prints only duplicate lines."),)
    assert option_resolved("What about the --unique flag?", turns) == "What does uniq --unique do?"
    # Not such a follow-up, or no single option to replace: the reader rewrites it.
    assert option_resolved("And what does -d print?", turns) == ""
    assert option_resolved("And -d?", (Turn("Which options does uniq take?", "-c and -d"),)) == ""
    assert option_resolved("And -d?", (Turn("Is -c like -u?", "No"),)) == ""
    assert option_resolved("And 2?", (Turn("What does tmux -2 do?", "256 colours"),)) == ""


def test_and_which_one_asks_for_the_kind_the_last_which_question_asked_for():
    turns = (Turn("Which key re-indexes the folder?", "Ctrl+R"),)
    generator = ScriptedGenerator(by_kind("Which key re-indexes the folder? And which one starts a new conversation?"))
    asked = read_question("And which one starts a new conversation?", turns, generator, threading.Event())
    assert asked.searched == "Which key starts a new conversation?" and asked.alone
    assert generator.prompts == []  # no rewrite was asked for
    # Drafted alone, its support still scores the turn before with it, as a question left as typed.
    reading = iterretgen.Reading.of(asked, generator, paper_options())
    assert reading.as_typed and reading.context == f"{turns[0].question}\n{asked.searched}"
    assert not iterretgen.Reading.of(Asked("Which key quits?", turns), generator, paper_options()).as_typed
    # The kind ends before the verb, an adverb, an auxiliary or a joining word.
    assert kind_resolved("And which one keeps going?", (Turn("Which message mode stops it all?", "x"),)) == (
        "Which message mode keeps going?"
    )
    assert kind_resolved("Which one reads the proxy?", (Turn("Which class automatically retries?", "x"),)) == (
        "Which class reads the proxy?"
    )
    assert kind_resolved("And which one?", (Turn("Which part of the file does it?", "x"),)) == ""
    # What it still points back at keeps the turns before the draft.
    asked = read_question(
        "And which one removes its proxies?",
        (Turn("Which command turns Corepack on?", "x"),),
        generator,
        threading.Event(),
    )
    assert asked.searched == "Which command removes its proxies?" and not asked.alone
    # Behind an earlier such follow-up; not where the question names its choices or no "Which" came before.
    turns += (Turn("And which one starts a new conversation?", "Ctrl+N"),)
    assert kind_resolved("And which one quits?", turns) == "Which key quits?"
    assert kind_resolved("Which one do you recommend, a fixed or a variable rate?", turns) == ""
    assert kind_resolved("And which one is better?", (Turn("What is a bond?", "A loan"),)) == ""
    assert kind_resolved("And which one of them is faster?", turns) == ""
    assert kind_resolved("And which one is newer?", (Turn("Which is faster, Yarn or pnpm?", "pnpm"),)) == ""


def test_a_rewrite_that_drops_the_question_is_not_taken():
    turns = (Turn("What does console.clear do when stdout is not a TTY?", "it does nothing"),)
    # The question before it, written again: none of the question's own words are left.
    assert not accepted(turns[0].question, "And on most Linux systems, what does it work like?", turns)
    # A statement in place of a question.
    turns = (Turn("What does the debugger's pause command do?", "pauses running code"),)
    assert not accepted("And continues running code", "And cont?", turns)
    assert accepted("And what does the debugger's cont command do?", "And cont?", turns)
    # A word kept in another form is kept ("hunt" in "hunting").
    assert accepted(
        "Is there a daily limit to hunting deer?", "Is there a daily limit to hunt them?", (Turn("Deer?", "Yes"),)
    )


def test_a_follow_up_that_points_back_is_read_with_its_turns_though_the_reader_left_it():
    turns = (Turn("Which package managers does Corepack support?", "Yarn and pnpm"),)
    question = "Which binary names does that one provide?"
    generator = ScriptedGenerator(by_kind(question))  # the reader repeats it: "it stands alone"
    events = run(generator, question=question, turns=turns)
    assert events[-1].standalone == ""
    assert "Earlier in this conversation:\nUser: Which package managers" in generator.prompts[1][-1]["content"]
    # The pane says the reader saw the turn, not that the question needed none.
    [read] = [e for e in events if isinstance(e, QuestionRead)]
    assert (read.standalone, read.turns, read.shown) == ("", 1, 1)
    assert [points_back(q) for q in ("How do I reset it?", "Which method stops that timer?", "And cont?")] == [True] * 3
    assert [points_back(q) for q in ("I mean financial counselling", "No, I meant for the purchase loan")] == [True] * 2
    assert not points_back("No, thanks. Which key quits?")
    assert [points_back(q) for q in ("What does F5 open?", "Is there a limit?", "By the way, what is a secret?")] == [
        False
    ] * 3


def test_a_follow_up_left_as_typed_is_supported_by_its_context(monkeypatch):
    # "Where was he born?" alone is far from any sentence; after "Who built the Eiffel
    # Tower?" it is not. A rewrite stands alone and is scored alone.
    scored = []

    def choose(question, passages, embedder, answer="", around=None, draft="", context=""):
        scored.append(context)
        return real(question, passages, embedder, answer, around, draft, context)

    real = outcome.choose_evidence
    monkeypatch.setattr(outcome, "choose_evidence", choose)
    run(ScriptedGenerator(by_kind(FOLLOW_UP)))
    run(ScriptedGenerator(by_kind(REWRITE)))
    run(ScriptedGenerator(by_kind(REWRITE)), question=REWRITE, turns=())
    assert scored == [f"{TURNS[0].question}\n{FOLLOW_UP}", "", ""]


def test_a_draft_that_copies_the_last_answer_is_asked_again_without_the_turns():
    turns = (Turn("Which command turns Corepack on?", "corepack enable"),)
    question = "And which one removes its proxies again?"

    def reply(messages) -> str:
        if messages[0]["content"] == REWRITE_INSTRUCTION:
            return question  # left as it was: it still points back, so the draft sees the turns
        if "Earlier in this conversation" in messages[-1]["content"]:
            return "The turn before said so. So the answer is corepack enable."
        return "Corepack disable removes the proxies. So the answer is corepack disable."

    generator = ScriptedGenerator(reply)
    final = run(generator, question=question, turns=turns)[-1]
    assert final.answer == "corepack disable"

    # Drafted again, an answer in a sentence of its own is that sentence.
    def in_a_sentence(messages) -> str:
        text = reply(messages)
        return text if "Earlier in this conversation" in messages[-1]["content"] else text.split(" So the answer is")[0]

    final = run(ScriptedGenerator(in_a_sentence), question=question, turns=turns)[-1]
    assert final.answer == "Corepack disable removes the proxies"
    # A "yes" after a "yes" is no copy: nothing is drafted again.
    generator = ScriptedGenerator(by_kind(question, draft="Yes, it can. So the answer is yes."))
    assert run(generator, question="Can it stop there too?", turns=(Turn("Can it?", "yes"),))[-1].answer == "yes"
    assert len(generator.prompts) == 2  # the rewrite and one draft


def test_an_open_reply_that_copies_the_last_answer_is_drafted_again_without_the_turns():
    turns = (Turn("How do I start a new project with Cargo?", "Run `cargo new hello_cargo` in your projects folder."),)
    question = "And how do I build it?"

    def reply(messages) -> str:
        if messages[0]["content"] == REWRITE_INSTRUCTION:
            return "How do I build the project made with cargo new?"
        if "Earlier in this conversation" in messages[-1]["content"]:
            return "Run `cargo new hello_cargo` in your projects folder [1]."
        return "Run `cargo build` in the project's folder [1]."

    final = run(ScriptedGenerator(reply), question=question, turns=turns)[-1]
    assert final.kind == "open" and final.answer == final.draft == "Run `cargo build` in the project's folder [1]."


def test_a_draft_that_writes_out_a_demo_is_drafted_again_without_the_turns():
    turns = (Turn("Where is the cache on Windows?", "%LocalAppData%"),)
    question = "And on Posix?"
    demo = ""

    def reply(messages) -> str:
        nonlocal demo
        if messages[0]["content"] == REWRITE_INSTRUCTION:
            return question  # left as typed: it points back, so the draft sees the turns
        if "Earlier in this conversation" in messages[-1]["content"]:
            demo = next(m["content"] for m in messages if m["role"] == "assistant")  # the first demo's draft
            return demo
        return "On Posix the cache is in the home folder. So the answer is ~/.npm."

    final = run(ScriptedGenerator(reply), question=question, turns=turns)[-1]
    assert demo and final.answer == "~/.npm" and final.draft.startswith("On Posix")
    assert final.iterations[0].draft == final.draft  # the pane shows the draft the answer came from
    # A draft of this question's own words is kept, turns or not.
    generator = ScriptedGenerator(
        by_kind(
            question, draft="Posix systems keep the npm cache folder in the home directory. So the answer is ~/.npm."
        )
    )
    assert run(generator, question=question, turns=turns)[-1].answer == "~/.npm"
    assert len(generator.prompts) == 2  # the rewrite and one draft


def test_a_turn_whose_answer_restates_the_question_holds_the_draft_the_chat_showed():
    draft = "It starts a timer that measures an operation. So the answer is console.time()."
    generator = ScriptedGenerator(by_kind(REWRITE, draft=draft))
    final = run(generator, question="What does console.time do?", turns=())[-1]
    assert restates(final) and turn_of(final) == Turn("What does console.time do?", final.draft)
    final = run(ScriptedGenerator(by_kind(REWRITE)), question="Where was Gustave Eiffel born?", turns=())[-1]
    assert turn_of(final) == Turn("Where was Gustave Eiffel born?", "Dijon")


def test_recent_turns_fit_their_budget_newest_first():
    turns = (Turn("one two three", "four five"), Turn("six seven", "eight"))
    count = lambda text: len(text.split())  # noqa: E731
    assert recent_turns(turns, 1000, count) == turns
    assert recent_turns(turns, 6, count) == turns[1:]
    assert recent_turns(turns, 2, count) == ()


def test_documents_that_do_not_say_are_said_not_to():
    generator = ScriptedGenerator(by_kind(REWRITE, check="No."))
    final = run(generator, check_found=True)[-1]
    # The check takes the draft's place in its prompt: the same knowledge and question, no draft.
    checked, drafted = generator.prompts[-1][-1]["content"], generator.prompts[-2][-1]["content"]
    assert checked.endswith(f"Question: {REWRITE}\n{CHECK}") and checked[: -len(CHECK)] in drafted
    assert final.grounded == 0.0
    assert weakness(final) is Weakness.NOT_FOUND and declined(final)
    shown = answer_markdown(final)
    assert shown.startswith("_Read as: Where was Gustave Eiffel born?_\n\n⚠ Your documents don't seem to say")
    assert "Dijon. So the answer" not in shown and "**From your documents:**" in shown  # evidence, no guess
    assert reply_text(final).startswith("Your documents don't seem to say")
    # Where the reader says yes, the answer stands.
    final = run(ScriptedGenerator(by_kind(REWRITE, check="Yes, it does.")), check_found=True)[-1]
    assert final.grounded == 1.0 and weakness(final) is None and not declined(final)


class OddsGenerator(ScriptedGenerator):
    """A reader that gives the probability of yes, as llama.cpp's does."""

    def __init__(self, replies, odds: float) -> None:
        super().__init__(replies)
        self.odds = odds
        self.checked: list = []

    def yes_probability(self, messages) -> float:
        self.checked.append(messages)
        return self.odds


def test_the_check_takes_the_readers_probability_of_yes_where_it_gives_one():
    for odds, said in ((0.3, True), (0.7, False)):
        generator = OddsGenerator(by_kind(REWRITE), odds)
        final = run(generator, check_found=True)[-1]
        assert generator.checked[0][-1]["content"].endswith(CHECK)  # asked once, not as a reply
        assert final.grounded == odds and declined(final) is said
    # History written when the check was a yes or a no reads the same.
    assert declined(dataclasses.replace(final, grounded=False)) and not declined(
        dataclasses.replace(final, grounded=True)
    )


def test_a_continued_conversation_round_trips_through_the_history(tmp_path):
    history = History(tmp_path / "history.sqlite3")
    first = run(ScriptedGenerator(by_kind(REWRITE)), question="Who built the Eiffel Tower?", turns=())[-1]
    cid = history.start(first.question, "/docs")
    history.add_turn(cid, first)
    turns = turns_of(history.get(cid).turns)
    second = run(ScriptedGenerator(by_kind(REWRITE)), turns=turns)[-1]
    history.add_turn(cid, second)
    assert history.last_in("/docs") == cid and history.last_in("/elsewhere") is None
    reopened = history.get(cid).turns
    assert [t.question for t in reopened] == ["Who built the Eiffel Tower?", FOLLOW_UP]
    assert reopened[1].standalone == REWRITE and isinstance(reopened[1], FinalAnswer)


def ask(monkeypatch, tmp_path, capsys, question, *flags, folder="docs"):
    generator = HeldGenerator(by_kind(REWRITE))
    generator.release.set()
    monkeypatch.setenv("ITERRETGEN_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(session, "Session", lambda settings, **_: FakeSession(settings, generator=generator))
    (tmp_path / folder).mkdir(exist_ok=True)
    args = ["ask", question, "--folder", str(tmp_path / folder), "--llm", EMBEDDED_LLM, *flags]
    code = cli.main([*args, "--iterations", "1", "--query-mode", "draft"])
    return code, capsys.readouterr()


def test_ask_continue_reads_the_last_conversation_of_the_folder(monkeypatch, tmp_path, capsys):
    code, out = ask(monkeypatch, tmp_path, capsys, "Who built the Eiffel Tower?", "--json")
    first = json.loads(out.out)
    assert code == 0 and first["standalone"] == "" and first["conversation_id"] >= 1
    code, out = ask(monkeypatch, tmp_path, capsys, FOLLOW_UP, "--continue", "--json")
    second = json.loads(out.out)
    assert code == 0 and second["conversation_id"] == first["conversation_id"]
    assert second["standalone"] == REWRITE
    code, out = ask(monkeypatch, tmp_path, capsys, FOLLOW_UP, "--cid", "99", "--json")
    assert code == 2 and "no conversation 99" in out.err
    cid = str(first["conversation_id"])
    code, out = ask(monkeypatch, tmp_path, capsys, FOLLOW_UP, "--cid", cid, "--json", folder="other")
    assert code == 2 and f"is over {(tmp_path / 'docs').resolve()}: ask it with --folder" in out.err


def test_ask_says_how_a_follow_up_was_read_as_the_chat_does(monkeypatch, tmp_path, capsys):
    ask(monkeypatch, tmp_path, capsys, "Who built the Eiffel Tower?")
    code, said = ask(monkeypatch, tmp_path, capsys, FOLLOW_UP, "--continue")
    assert code == 0 and f"Read as: {REWRITE}\n" in said.err
    assert QuestionRead(1, "", 3).describe() == "Read as asked (it needs none of the 3 earlier turns)"
    assert (
        QuestionRead(1, "", 1, shown=1).describe()
        == "Read as asked, with the turn it points back to shown to the reader"
    )


def test_the_follow_up_hint_quotes_a_folder_with_a_space(monkeypatch, tmp_path, capsys):
    code, said = ask(monkeypatch, tmp_path, capsys, "Who built the Eiffel Tower?", folder="my docs")
    assert code == 0  # the hint pastes as one argument
    assert f"`ask QUESTION --folder '{tmp_path / 'my docs'}' --continue`" in said.out + said.err


CONVERSATION_SET = [
    {  # a follow-up the documents answer
        "_id": "c1",
        "turns": [
            {"role": "user", "text": "Who built the Eiffel Tower?"},
            {"role": "assistant", "text": "Gustave Eiffel built it."},
            {"role": "user", "text": FOLLOW_UP},
        ],
        "answers": ["He was born in Dijon."],
        "answerability": "ANSWERABLE",
        "gold_doc_ids": ["gustave"],
        "multi_turn": ["Follow-up"],
    },
    {  # nothing in the documents answers it
        "_id": "c2",
        "turns": [{"role": "user", "text": "How tall is the Eiffel Tower?"}],
        "answers": ["Sorry, I do not have that information."],
        "answerability": "UNANSWERABLE",
        "gold_doc_ids": [],
        "multi_turn": ["N/A"],
    },
    {  # ambiguous: which city?
        "_id": "c3",
        "turns": [{"role": "user", "text": "What is the city famous for?"}],
        "answers": ["Which city do you mean?"],
        "answerability": "UNDERSPECIFIED",
        "gold_doc_ids": [],
        "multi_turn": ["N/A"],
    },
]


def conversation_reader(messages) -> str:
    """Rewrites the follow-up, answers from its passages, says no to the height."""
    if messages[0]["content"] == REWRITE_INSTRUCTION:
        return REWRITE
    if messages[-1]["content"].endswith(CHECK):
        return "No" if "tall" in messages[-1]["content"] else "Yes"
    return "Gustave Eiffel was born in Dijon. So the answer is Dijon."


def test_eval_on_conversations_reports_every_key(monkeypatch, tmp_path, capsys):
    from iterretgen_tui.session import Session

    from .fakes import HashEmbedder
    from .test_loop import CORPUS

    root = tmp_path / "convs"
    root.mkdir()
    corpus = [{"_id": "gustave" if p.id == 3 else f"d{p.id}", "title": p.title, "text": p.text} for p in CORPUS]
    (root / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus))
    (root / "conversations.jsonl").write_text("".join(json.dumps(row) + "\n" for row in CONVERSATION_SET))

    def load_models(self, status=lambda message: None):
        self.embedder = HashEmbedder(dim=4096)
        self.generator = ScriptedGenerator(conversation_reader)

    monkeypatch.setattr(Session, "load_models", load_models)
    monkeypatch.setenv("ITERRETGEN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ITERRETGEN_CHECK_FOUND", "true")  # the check that makes "your documents don't say"
    out = tmp_path / "convs.json"
    args = ["eval", str(root), "--out", str(out), "--iterations", "1", "--retrieval", "dense", "--no-replay"]
    assert cli.main([*args, "--against-last-turn"]) == 0
    summary = json.loads(out.read_text())
    assert summary["n"] == 3
    for side in ("last_turn", "conversation"):
        assert set(summary["search"][side]) == {"n", "gold_recall_at_5", "ndcg_at_10"}
    assert summary["search"]["conversation"]["gold_recall_at_5"] == 1.0
    answerable = summary["answerable"]
    assert set(answerable) == {"n", "answer_recall", "rouge_l", "k_prec", "answered", "asked_back"}
    assert answerable["n"] == 1 and answerable["answered"] == 1.0 and answerable["answer_recall"] > 0
    assert 0 < answerable["k_prec"] <= 1 and 0 < answerable["rouge_l"] <= 1
    assert summary["unanswerable"] == {"n": 1, "abstained": 1.0}
    assert summary["underspecified"] == {"n": 1, "asked_back": 0.0}
    assert summary["seconds_median"] >= 0
    assert set(summary["by_multi_turn"]) == {"Follow-up", "N/A"}
    assert summary["by_multi_turn"]["Follow-up"]["answerable"]["n"] == 1
    assert set(summary["against_last_turn"]["answerable"]) == {"answer_recall", "rouge_l", "k_prec"}
    assert set(summary["search"]["last_two_turns"]) == {"n", "gold_recall_at_5", "ndcg_at_10"}
    assert "mean" in summary["search"]["differences"]["conversation vs last_turn"]["gold_recall_at_5"]
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()[1:]]
    assert records[0]["conversation"]["standalone"] == REWRITE and records[0]["last_turn"]["standalone"] == ""
    assert records[0]["conversation"]["iteration_answers"] == ["Dijon"]
    assert records[0]["conversation"]["stop_reason"] == StopReason.MAX_ITERATIONS.value
    assert "answerable (1): answer recall" in capsys.readouterr().out
    # The searches alone: read and searched with, nothing drafted; the same search scores.
    searched = tmp_path / "searched.json"
    assert cli.main(["eval", str(root), "--out", str(searched), "--retrieval", "dense", "--search-only"]) == 0
    assert json.loads(searched.read_text())["search"]["conversation"] == summary["search"]["conversation"]
    rows = [json.loads(line) for line in searched.with_suffix(".jsonl").read_text().splitlines()[1:]]
    assert set(rows[0]["conversation"]) == {"standalone", "search", "asked_back", "seconds"}
    assert rows[0]["conversation"]["standalone"] == REWRITE


def test_an_answer_that_restates_the_question_is_no_headline():
    reader = by_kind(REWRITE, draft="HAART therapy combines drugs [1]. So the answer is HAART therapy.")
    final = run(ScriptedGenerator(reader), question="What is HAART therapy and how does it differ from AZT?", turns=())[
        -1
    ]
    assert final.answer == "HAART therapy" and restates(final)
    shown = answer_markdown(final)
    assert "**Answer:**" not in shown and "HAART therapy combines drugs" in shown
    # Its closing sentence says nothing the reasoning did not: it is left out.
    assert reply_text(final) == "HAART therapy combines drugs [1]."
    assert not restates(run(ScriptedGenerator(by_kind(REWRITE)), turns=())[-1])  # "Dijon" is an answer
    # A possessive's "s" aside, the question's own subject is no answer either.
    assert only_restates("asn1Parser", "Which of the asn1Parser's options only checks the syntax?")
    assert not only_restates("asn1Parser", "Which tool's option only checks the syntax?")
    # A draft that is its answer, save the full stop, is said once; a restating answer's
    # draft is still the reply.
    said = dataclasses.replace(final, answer="Dijon is the answer", draft="Dijon is the answer.")
    assert reply_text(said) == "Dijon is the answer"
    assert answer_markdown(said).count("Dijon is the answer") == 1  # the chat says it once too
    assert reply_text(dataclasses.replace(final, draft="HAART therapy.")) == "HAART therapy."
    # ... and so is one that says it again in no word of its own
    again = dataclasses.replace(said, draft="That Dijon is the answer.")
    assert reply_text(again) == "Dijon is the answer"
    assert reply_text(dataclasses.replace(said, draft="Dijon is the answer, in Burgundy.")).count("Dijon") == 2


def test_a_sentence_borrowed_from_the_demos_is_not_shown():
    final = run(ScriptedGenerator(by_kind(REWRITE)), turns=())[-1]
    borrowed = "The author of On the Origin of Species knows. Dijon is the capital of Burgundy."
    shown = dataclasses.replace(final, draft=f"{borrowed} So the answer is Dijon.")
    assert reply_text(shown) == "Dijon\nDijon is the capital of Burgundy."
    # Where the passages read or the question name it, it is the answer's own.
    asked = dataclasses.replace(shown, question="Who wrote On the Origin of Species?")
    assert "On the Origin of Species" in reply_text(asked)
    assert unborrowed("Hubble studied at Christ's College, Cambridge.", ["Hubble"]) == ""


def test_a_sentence_naming_a_key_the_evidence_does_not_hold_is_not_shown():
    final = run(ScriptedGenerator(by_kind(REWRITE)), turns=())[-1]
    keyed = dataclasses.replace(final, draft="Dijon is in Burgundy. Press Ctrl+Q to see it. So the answer is Dijon.")
    assert reply_text(keyed) == "Dijon\nDijon is in Burgundy."
    asked = dataclasses.replace(keyed, question="Does Ctrl+Q show where Eiffel was born?")  # the user's own key
    assert "Press Ctrl+Q to see it." in reply_text(asked)
    opened = dataclasses.replace(keyed, kind=OPEN)  # an open reply is the draft, as written
    assert "Ctrl+Q" in reply_text(opened)


def test_evidence_far_from_the_question_says_the_documents_do_not_seem_to_say():
    def asked(below: float, **options):
        retriever = default_retriever()
        retriever.embedder.unsaid_below = below
        events = iterretgen.run(
            FOLLOW_UP,
            retriever=retriever,
            generator=ScriptedGenerator(by_kind(REWRITE)),
            options=paper_options(iterations=1, top_k=2, **options),
            turns=TURNS,
        )
        return list(events)[-1]

    final = asked(0.99)  # no sentence of a hashed bag of words comes that close
    assert final.evidence.support < 0.99 and final.unsaid == "evidence"
    assert weakness(final) is Weakness.NOT_FOUND and "Dijon. So the answer" not in answer_markdown(final)
    assert asked(0.0).unsaid == "" and asked(0.99, check_evidence=False).unsaid == ""
    # The reader's own check, where asked, speaks first.
    assert asked(0.99, check_found=True).unsaid == "evidence"  # it said yes
    # Only an embedder measured for it has a bound: the default one.
    assert models.unsaid_below("all-minilm-l6-v2") == 0.55 and models.unsaid_below(EMBEDDED_LLM) == 0.0


def test_an_option_no_page_of_its_command_defines_is_not_said():
    last = run(ScriptedGenerator(by_kind(REWRITE)))[-1].iterations[-1]
    near = dataclasses.replace(last, evidence=dataclasses.replace(last.evidence, support=0.9))
    undefined = dataclasses.replace(near, evidence=dataclasses.replace(near.evidence, option_undefined=True))
    assert unsaid(near, None, 0.55) == "" and unsaid(undefined, None, 0.55) == "evidence"
    assert unsaid(undefined, None, 0.0) == ""  # the evidence's check turned off
    # The decline says which option of which command the pages read do not define.
    final = dataclasses.replace(run(ScriptedGenerator(by_kind(REWRITE)))[-1], unsaid="evidence", standalone="")
    final = dataclasses.replace(final, question="What does rsync -a do?")
    told = weakness_message(final, Weakness.NOT_FOUND)
    assert told == Weakness.NOT_FOUND.message()  # declined for another reason
    final = dataclasses.replace(final, evidence=dataclasses.replace(final.evidence, option_undefined=True))
    told = weakness_message(final, Weakness.NOT_FOUND)
    assert told.startswith("Your documents don't seem to say what -a does for rsync:") and told in reply_text(final)


def test_a_draft_that_says_its_passages_do_not_mention_it_answers_no_yes_or_no():
    silent = (
        "The question asks if the park is open on holidays. The information provided does not mention any holidays."
    )
    final = run(ScriptedGenerator(by_kind(REWRITE, draft=f"{silent} So the answer is no.")))[-1]
    assert final.answer == "no" and final.unsaid == "reader"
    assert weakness(final) is Weakness.NOT_FOUND and declined(final)
    # Its answer is the saying itself.
    assert says_unsaid("The text does not directly address it.", "not directly stated in the given knowledge")
    assert says_unsaid("There is no information about fees in the passages.", "yes")
    # A yes or no with its grounds, or an answer drawn from what the passages do say, stands.
    said = run(ScriptedGenerator(by_kind(REWRITE)))[-1]
    assert said.unsaid == "" and not declined(said)
    assert not says_unsaid(f"{silent} The park closes at 9 pm.", "9 pm")
    assert not says_unsaid("The park is open every day of the year, holidays included.", "yes")
    # An open answer that only opens with "No" says more than a yes or no.
    assert not says_unsaid(silent, "No, the park closes at 9 pm on holidays [2].")
    # Only the reader's words for what it read: the user's documents, or a thing "not
    # mentioned as" something, are not a saying about the passages.
    assert not says_unsaid("If your documents do not include a signature, the form is returned.", "no")
    assert not says_unsaid("The other clinic is not mentioned as being open at night.", "yes")


def test_reading_ahead_evaluates_the_next_draft_then_the_rewrite_and_gives_way_to_a_question():
    from iterretgen_tui.config import Settings

    generator = HeldGenerator(["unused"])
    chat = FakeSession(Settings(), generator=generator)
    chat.load_models()
    chat.read_ahead(TURNS)
    draft, rewrite = generator.prefilled
    assert (
        draft[-1]["content"]
        == "Earlier in this conversation:\nUser: Who built the Eiffel Tower?\nAssistant: Gustave Eiffel\n\nKnowledge:"
    )
    assert rewrite == next_rewrite(TURNS)
    asked = threading.Event()

    def asked_meanwhile(messages, keep=False, disk=False) -> None:
        generator.prefilled.append(messages)
        asked.set()  # the user asks while the first step runs

    generator.prefill = asked_meanwhile
    chat.read_ahead(TURNS, asked)  # the second step is not taken
    assert generator.prefilled[2:] == [draft]
    chat.read_ahead((), None)  # a first question has nothing to read ahead
    assert len(generator.prefilled) == 3
    chat.read_ahead(TURNS, disk=True)  # saved for `ask --continue`: what it needs first, first
    assert generator.prefilled[3:] == [rewrite, draft]
