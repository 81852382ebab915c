from iterretgen_tui.engine.loop.answers import normalize_answer, stems, token_f1
from iterretgen_tui.engine.loop.prompts import (
    CHOICE_DEMOS,
    DEMOS,
    build_prompt,
    demo_messages,
    every_demo_prefix,
    extract_answer,
    knowledge_line,
    reasoning,
)
from iterretgen_tui.engine.loop.stopping import answers_converge


def test_extracts_last_so_the_answer_is():
    assert extract_answer("Step. So the answer is Paris. Wait, so the answer is Lyon.") == "Lyon"
    assert extract_answer("So the answer is the Danube.") == "the Danube"
    assert extract_answer("So the answer is 3.5 million.") == "3.5 million"
    assert extract_answer("so the answer is: **U.S.A.**") == "U.S.A"
    assert extract_answer("So the answer is 1505.\nExtra text") == "1505"
    assert extract_answer("So the answer is Craig v. Boren. It came first.") == "Craig v. Boren"
    assert extract_answer("So the answer is St. Louis, Missouri.") == "St. Louis, Missouri"
    assert extract_answer("So the answer is J. M. Barrie.") == "J. M. Barrie"
    assert extract_answer("So the answer is `/`.") == "/"
    # Punctuation that is the whole answer keeps its quotes: stripped, nothing was left.
    assert extract_answer("So the answer is `'.'`.") == "'.'"
    assert extract_answer("It returns '.', the current directory. So the answer is `'..'`.") == "'..'"
    assert extract_answer('So the answer is ocr = "off".') == 'ocr = "off"'  # a closing quote of its own
    assert extract_answer('So the answer is `ocr = "off"`.') == 'ocr = "off"'
    assert extract_answer('So the answer is "off" in config.toml.') == '"off" in config.toml'
    # Quotes at both ends that open and close spans inside the answer are its own.
    assert extract_answer("So the answer is `'jwk'` and `'raw'`.") == "`'jwk'` and `'raw'`"
    assert extract_answer("So the answer is 'A' or 'B'.") == "'A' or 'B'"
    assert extract_answer("So the answer is `a` and `b`.") == "`a` and `b`"


def test_falls_back_to_last_sentence():
    assert extract_answer("He was born in Dijon. It is in France.") == "It is in France"
    assert extract_answer("") == ""
    # A follow-up reply without the marker: abbreviations do not end its last sentence.
    assert extract_answer("St. Louis, Missouri.") == "St. Louis, Missouri"
    assert extract_answer("It came first. Craig v. Boren.") == "Craig v. Boren"
    assert extract_answer("Is it Lyon? It is Dijon!") == "It is Dijon!"


def test_an_acronym_ends_the_answer_and_an_initial_does_not():
    from iterretgen_tui.engine.loop.prompts import answer_end

    assert extract_answer("So the answer is NASA. It launched Apollo.") == "NASA"
    assert answer_end("So the answer is NASA. ") is not None
    assert answer_end("So the answer is J. ") is None
    assert answer_end("So the answer is U.S.") is None
    assert extract_answer("So the answer is Ctrl+Q. It quits.") == "Ctrl+Q"


def test_demos_follow_the_paper_layout():
    messages = demo_messages()
    assert len(DEMOS) == 3
    for user, assistant in zip(messages[1::2], messages[2::2]):
        assert user["content"].startswith("Knowledge:\nTitle: ")
        assert "\nQuestion: " in user["content"]
        assert user["content"].endswith("Let's think step by step.")
        assert extract_answer(assistant["content"])
    assert knowledge_line("T", "a  b\nc") == "Title: T Context: a b c"


def test_demos_answer_from_their_own_knowledge():
    """A demo whose answer its passages do not hold teaches the reader to answer from
    memory; yes/no is the one answer a passage need not spell out."""
    for knowledge, _question, thought in DEMOS + CHOICE_DEMOS:
        answer = extract_answer(thought)
        text = " ".join(context for _title, context in knowledge)
        assert answer in {"yes", "no"} or answer.removeprefix("the ") in text


def test_normalisation_and_f1():
    assert normalize_answer("The  Danube!") == "danube"
    assert token_f1("the Danube river", "Danube") == 2 * (1 / 2 * 1) / (1 / 2 + 1)
    assert token_f1("", "") == 1.0
    assert token_f1("Paris", "") == 0.0
    # An option keeps its dashes: "-a" is no article, "--all" no stopword.
    assert normalize_answer("Use the `-A` option, not --all.") == "use dasha option not dashdashall"
    assert normalize_answer("e-mail at -40 degrees") == "email at 40 degrees"
    assert answers_converge("-A", "-A", "Which option forwards the agent?")


def test_a_words_forms_share_a_stem():
    assert stems("closes closed closing") == stems("close") == {"clos"}
    assert stems("running stopped") == stems("run stop")  # a doubled consonant is one
    assert stems("falling passed added") == {"fall", "pass", "add"}  # these letters end plain words doubled


def test_bare_the_answer_is_line_and_next_line():
    assert extract_answer("Reasoning here.\nThe answer is:\n\nThe Danube.\n") == "The Danube"
    assert extract_answer("I think the answer is hidden. He was born in Dijon.") == "He was born in Dijon"


def test_the_answer_ends_only_once_it_is_stated():
    from iterretgen_tui.engine.loop.prompts import answer_end

    assert answer_end("Eiffel built it. So the answer") is None
    assert answer_end("Eiffel built it. So the answer is Dij") is None
    assert answer_end("Eiffel built it. So the answer is Dijon.") is not None
    assert answer_end("So the answer is Dijon\n") is not None
    assert answer_end("The answer is:\n\n") is None
    assert answer_end("The answer is:\n\nDijon.") is not None
    assert answer_end("So the answer is 3.5") is None
    assert answer_end("So the answer is Craig v. ") is None  # the case's name goes on
    assert answer_end("So the answer is Craig v. Boren. ") is not None
    assert answer_end("Finding the answer is hard. Next") is None


def test_a_full_stop_in_a_code_span_ends_nothing():
    """Streamed, "`~/.npm`" arrives as "`~/." then "npm`": the stop once cut the answer to "~/"."""
    from iterretgen_tui.engine.loop.prompts import answer_end, stated_answer

    assert answer_end("So the answer is `~/.") is None
    # Bare, a path streams as "~/." then "vimrc": the stop after a symbol waits too.
    assert answer_end("So the answer is ~/.") is None
    assert answer_end("So the answer is ~/.vimrc.") is not None
    assert answer_end('So the answer is "vimdiff".') is not None
    whole = "So the answer is `~/.npm`."
    assert answer_end(whole) == len(whole)
    assert stated_answer(whole[: answer_end(whole)]) == "~/.npm"
    assert answer_end("It reads `.npmrc`. So the answer is yes.") is not None


def test_a_backtick_never_closed_holds_back_no_stop():
    """A stray backtick once kept the answer going to the end of its line."""
    from iterretgen_tui.engine.loop.prompts import answer_end

    text = "So the answer is `npm cache clean. It removes the cache"
    assert answer_end(text) == text.index(". ") + 1


def test_a_number_s_full_stop_waits_for_the_next_token():
    """Streamed, "4.23" arrives as "4." then "23": the stop once cut the answer to "4"."""
    from iterretgen_tui.engine.loop.prompts import answer_end

    assert answer_end("So the answer is 4.") is None
    assert answer_end("So the answer is 4.23") is None
    assert answer_end("So the answer is 1987.") is None  # a year: complete at the next token
    text = "It costs more. So the answer is 4.23. It was measured."
    assert text[: answer_end(text)] == "It costs more. So the answer is 4.23."
    assert answer_end("So the answer is 1987.\n") == len("So the answer is 1987.")
    assert answer_end("So the answer is Dijon. It") == len("So the answer is Dijon.")


def test_answer_colon_line_is_an_answer_marker():
    from iterretgen_tui.engine.loop.prompts import answer_end

    assert extract_answer("The key is Esc.\n\nAnswer: **Esc**") == "Esc"
    assert extract_answer("Answer: Ctrl+Q quits the app. More.") == "Ctrl+Q quits the app"
    assert answer_end("Reasoning.\n\nAnswer:") is None
    assert answer_end("Reasoning.\n\nAnswer: Esc.") is not None


def test_a_question_that_chooses_gets_the_demos_that_choose():
    def demos(question: str, kind: str = "factoid") -> list[dict[str, str]]:
        return build_prompt(question, [], count_tokens=lambda t: len(t.split()), budget=4000, kind=kind).messages[:-1]

    for choosing in (
        "Who lived to an older age, Elia Kazan or Moustapha Akkad?",
        "Are Sutera and Rhodotypos both types of shrub?",
        "Were the Commodore 16 and Prologica CP-400 from the same country?",
        "Is Muskegon County Airport or John Wayne Airport further west?",
        "Does the WASI implementation provide secure sandboxing?",
    ):
        assert demos(choosing) == demo_messages(choice=True), choosing
    for other in ("Which file holds the settings?", "Where is the magazine headquartered that he writes for?"):
        assert demos(other) == demo_messages(), other
    assert demos("How does Orchestra tune, A or B?", kind="open") == demo_messages("open")
    assert len(CHOICE_DEMOS) == 5
    assert demo_messages(choice=True)[:3] == demo_messages()[:3]  # the instruction and first demo shared
    assert len({str(prefix) for prefix in every_demo_prefix()}) == 3


def test_the_reasoning_shown_under_the_answer_leaves_out_the_sentence_that_states_it():
    assert reasoning("Jellyfin runs on port 8096. So the answer is 8096.") == "Jellyfin runs on port 8096."
    assert reasoning("So the answer is 8096.") == ""
    assert reasoning("It is on the NAS.\nAnswer: /volume1/backups") == "It is on the NAS."
    # Only a sentence that ends the draft: text after it, or no such sentence, stays.
    after = "So the answer is 8096. It was changed in May."
    assert reasoning(after) == after
    assert reasoning("Jellyfin runs on port 8096.") == "Jellyfin runs on port 8096."
