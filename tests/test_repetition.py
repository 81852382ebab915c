"""The loop guard on scripted repeating streams (engine/loop/repetition.py)."""

from __future__ import annotations

import threading

from iterretgen_tui.engine.loop.repetition import LoopGuard, loop_start, stutters, trim_loop

from .fakes import ScriptedGenerator

LOOP = "It is a window that is shared among all the scripts. "


def guarded(reply: str) -> tuple[LoopGuard, ScriptedGenerator]:
    """Stream ``reply`` word by word through a guard, stopping where the loop does."""
    generator = ScriptedGenerator([reply])
    guard = LoopGuard()
    for piece in generator.stream([], max_tokens=10_000, cancel=threading.Event()):
        if guard.feed(piece):
            break
    return guard, generator


def test_a_repeated_sentence_stops_the_stream_at_its_second_copy():
    reply = "The settings live in config.toml. " + LOOP * 20
    guard, generator = guarded(reply)
    assert guard.looped
    assert guard.kept == "The settings live in config.toml. " + LOOP.strip()
    # Stopped at once: within the second copy (its 10-gram repeats), not the twentieth.
    assert generator.tokens_emitted <= len(("The settings live in config.toml. " + LOOP * 2).split())


def test_a_loop_without_sentence_ends_is_caught_by_its_long_ngram():
    cycle = "the loop ends when the loop ends and then again when "
    guard, generator = guarded("Answer: " + cycle * 10)
    assert guard.looped
    assert guard.kept == "Answer: " + cycle.strip()
    assert generator.tokens_emitted < len((cycle * 3).split())


def test_one_word_repeated_keeps_one_copy():
    guard, _ = guarded("Dijon " + "the " * 50)
    assert guard.looped and guard.kept == "Dijon the"


def test_short_sentences_may_repeat_twice_but_not_three_times():
    assert loop_start("Yes. It is. Yes. It is.") is None
    text = "Yes. It is. Yes. It is. Yes."
    assert loop_start(text) == text.rindex("Yes.")


def test_a_draft_that_does_not_repeat_itself_passes_whole():
    draft = (
        "Gustave Eiffel built the tower. Gustave Eiffel was born in Dijon in 1832. "
        "The tower stands in Paris. So the answer is Dijon."
    )
    guard, generator = guarded(draft)
    assert not guard.looped and guard.kept == draft
    assert generator.tokens_emitted == len(draft.split())
    assert trim_loop(draft) == draft


def test_repetition_is_judged_ignoring_case_and_punctuation():
    text = "The loop ends when the loop ends. the loop ends, when the loop ends!"
    assert trim_loop(text) == "The loop ends when the loop ends."


def test_a_whole_reply_in_one_piece_is_trimmed_too():
    # A replayed generation (the eval's memo) arrives as one piece.
    guard = LoopGuard()
    assert guard.feed("First. " + LOOP * 3)
    assert guard.kept == "First. " + LOOP.strip()


def test_a_sentence_broken_off_by_the_loop_is_dropped_after_a_whole_one():
    cycle = "the method builds an absolute path from its segments and then "
    assert trim_loop("It is documented. So " + cycle * 3) == "It is documented."
    assert trim_loop("So " + cycle * 3) == "So " + cycle.strip()  # nothing whole before it


def test_a_markdown_table_is_not_a_loop():
    table = "| key | value |\n| --- | --- |\n" + "".join(f"| k{i} | v{i} |\n" for i in range(12))
    assert loop_start(table) is None


def test_a_short_reply_stutters_when_a_phrase_comes_three_times_in_a_row():
    assert stutters("The answer is: The answer is: The answer is:")
    assert stutters("Benson Context: Benson Context: Benson Context:")
    assert not stutters("New York, New York")
    assert not stutters("Walla Walla, Washington")
    assert not stutters("Charles Babbage")


def test_a_piece_of_a_word_repeated_without_spaces_is_a_loop():
    # The 1.5B over Node.js docs: no sentence ends and no word recurs.
    guard = LoopGuard()
    pieces = ["The settings live in config.toml.", " Based on the context, the file `"] + ["path", "."] * 100
    fed = 0
    for piece in pieces:
        fed += 1
        if guard.feed(piece):
            break
    assert guard.looped and guard.kept == "The settings live in config.toml."
    assert fed <= 2 + 2 * 6  # stopped at the sixth copy, not the hundredth
    assert trim_loop("So the answer is " + "ab" * 10) == "So the answer is"


def test_long_words_and_rules_are_not_loops():
    for text in (
        "Underline it with `--------------------` as a setext heading.",
        "It costs 1000000000000 dollars; the id is 0x00000000000000ff.",
        "See https://example.com/docs/api/v2/index.html and the Mississippi.",
        "He laughed: haha.",
    ):
        assert loop_start(text) is None, text
