"""Saved prompt prefixes with the real embedded GGUF: a kind switch or a new process
starts from the demos' state instead of evaluating them, and answers the same."""

from __future__ import annotations

import logging
import threading

import pytest

from iterretgen_tui import models
from iterretgen_tui.engine.loop.conversation import Turn, conversation_text, next_rewrite, read_question, rewrite_prefix
from iterretgen_tui.engine.loop.generator import AHEAD_KEEP, LlamaGenerator
from iterretgen_tui.engine.loop.iterretgen import next_draft_start, shown_turns
from iterretgen_tui.engine.loop.options import LoopOptions
from iterretgen_tui.engine.loop.prompts import build_prompt, demo_messages
from iterretgen_tui.engine.loop.question_kind import FACTOID, OPEN
from iterretgen_tui.engine.passages import Passage

PASSAGES = [Passage(1, "Gustave Eiffel was born in Dijon in 1832.", "Gustave Eiffel", "docs/eiffel.md", "p. 2")]
PREFIXES = [demo_messages(FACTOID), demo_messages(OPEN)]


def make(state_dir=None, prefixes=PREFIXES) -> LlamaGenerator:
    return LlamaGenerator(
        models.resolve_llm(models.EMBEDDED_LLM),
        n_ctx=2048,
        device="cpu",
        n_threads=2,
        prefixes=prefixes,
        state_dir=state_dir,
    )


def counting(generator: LlamaGenerator) -> list[int]:
    """Tokens llama.cpp evaluates per call, from now on."""
    evaluated: list[int] = []
    llm = generator._llm
    eval_tokens = llm.eval

    def count(tokens):
        evaluated.append(len(tokens))
        return eval_tokens(tokens)

    llm.eval = count
    return evaluated


def prompt(generator: LlamaGenerator, question: str, kind: str):
    return build_prompt(question, PASSAGES, count_tokens=generator.count_tokens, budget=1500, kind=kind)


def answer(generator: LlamaGenerator, messages) -> str:
    return "".join(generator.stream(messages, max_tokens=16, cancel=threading.Event()))


@pytest.fixture(scope="module")
def plain() -> LlamaGenerator:
    return make(prefixes=())


def test_a_new_process_starts_from_the_saved_demos_and_answers_the_same(tmp_path, plain):
    factoid = prompt(plain, "Where was Gustave Eiffel born?", FACTOID)
    expected = answer(plain, factoid.messages)

    first = make(tmp_path)
    assert answer(first, factoid.messages) == expected
    assert len(list(tmp_path.glob("*.state"))) == 1  # the factoid demos; the open ones are not used yet
    del first

    second = make(tmp_path)
    evaluated = counting(second)
    assert answer(second, factoid.messages) == expected
    demos = second.count_tokens("".join(m["content"] for m in PREFIXES[0]))
    assert demos > 300
    assert sum(evaluated) < factoid.tokens + 64 - demos  # the demos came from the file


def test_switching_kinds_restores_the_other_demos(plain):
    generator = make()  # states in memory only
    factoid = prompt(generator, "Where was Gustave Eiffel born?", FACTOID).messages
    open_ = prompt(generator, "How did Gustave Eiffel's birthplace shape his work?", OPEN).messages
    answer(generator, factoid)
    answer(generator, open_)
    evaluated = counting(generator)
    back = answer(generator, factoid)
    assert sum(evaluated) < 200  # the question and passage only, not the factoid demos again
    assert back == answer(plain, factoid)


def test_warming_up_saves_every_prefix_until_a_question_comes(tmp_path):
    generator = make(tmp_path)
    generator.warm()
    assert len(list(tmp_path.glob("*.state"))) == 2

    asked = make(tmp_path / "asked")
    answer(asked, [{"role": "user", "content": "Hello"}])  # no registered prefix
    asked.warm()
    assert not (tmp_path / "asked").exists()


def test_a_damaged_state_file_is_ignored_and_replaced(tmp_path, plain, caplog):
    factoid = prompt(plain, "Where was Gustave Eiffel born?", FACTOID).messages
    make(tmp_path).warm()
    for path in tmp_path.glob("*.state"):
        path.write_bytes(path.read_bytes()[:1000])  # cut short, as by a full disk
    generator = make(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert answer(generator, factoid) == answer(plain, factoid)
    assert "damaged prompt state" in caplog.text
    restored = make(tmp_path)
    evaluated = counting(restored)
    answer(restored, factoid)
    assert sum(evaluated) < 300  # the file was written again, whole


def test_a_template_that_cannot_render_the_prefix_alone_turns_saving_off(tmp_path, plain, caplog, monkeypatch):
    generator = make(tmp_path)
    render = generator._llm.create_chat_completion

    refused = []

    def refuse_empty_turn(messages, **kwargs):
        if messages[-1]["content"] == "":
            refused.append(1)
            raise ValueError("template needs a question")
        return render(messages=messages, **kwargs)

    monkeypatch.setattr(generator._llm, "create_chat_completion", refuse_empty_turn)
    factoid = prompt(plain, "Where was Gustave Eiffel born?", FACTOID).messages
    with caplog.at_level(logging.WARNING):
        generator.warm()
        assert len(refused) == 1  # the first refusal ends the warm-up: the other prefix is not tried
        assert answer(generator, factoid) == answer(plain, factoid)
    assert generator.prefixes == [] and "not saving prefixes" in caplog.text
    assert not list(tmp_path.glob("*.state"))


TURNS = [
    Turn("Who designed the Eiffel Tower's structure?", "Maurice Koechlin and Emile Nouguier, for Gustave Eiffel."),
    Turn("Where was Gustave Eiffel born?", "Gustave Eiffel was born in Dijon in 1832."),
]
FOLLOW_UP = "When did he move to Paris?"


def test_the_next_rewrite_read_ahead_leaves_only_the_question_to_evaluate(plain):
    generator = make(prefixes=[rewrite_prefix()])
    generator.prefill(next_rewrite(TURNS))
    evaluated = counting(generator)
    read = read_question(FOLLOW_UP, TURNS, generator, threading.Event())
    assert generator.count_tokens(conversation_text(TURNS)) > 40
    assert evaluated[0] < generator.count_tokens(FOLLOW_UP) + 16  # the question and the turn's end only
    assert read == read_question(FOLLOW_UP, TURNS, plain, threading.Event())  # the same rewrite without it


def test_a_follow_up_s_draft_starts_from_its_turns_read_ahead_though_the_rewrite_came_between(plain):
    generator = make(prefixes=[*PREFIXES, rewrite_prefix()])
    options = LoopOptions()
    generator.prefill(next_draft_start(TURNS, generator, options), keep=True)
    generator.prefill(next_rewrite(TURNS))
    read_question(FOLLOW_UP, TURNS, generator, threading.Event())
    earlier = conversation_text(shown_turns(TURNS, generator, options))
    draft = build_prompt(FOLLOW_UP, PASSAGES, count_tokens=generator.count_tokens, budget=1500, earlier=earlier)
    evaluated = counting(generator)
    assert answer(generator, draft.messages) == answer(plain, draft.messages)
    own = draft.tokens - generator.count_tokens("".join(m["content"] for m in draft.messages[:-1]))
    assert generator.count_tokens(earlier) > 40
    assert evaluated[0] < own - generator.count_tokens(earlier) + 16  # its passages and question only
    # A question that does not lean on the turns starts from its demos, as before.
    alone = prompt(generator, "Where was Gustave Eiffel born?", FACTOID).messages
    assert answer(generator, alone) == answer(plain, alone)


def test_a_new_process_starts_a_follow_up_from_the_turns_another_process_read_ahead(tmp_path, plain):
    prefixes = [*PREFIXES, rewrite_prefix()]
    options = LoopOptions()
    reader = make(tmp_path, prefixes)
    starts = [next_draft_start(TURNS, reader, options), next_rewrite(TURNS)]
    for messages in starts:
        reader.prefill(messages, keep=True, disk=True)
    del reader

    follow_up = make(tmp_path, prefixes)
    assert [follow_up.recall(messages) for messages in starts] == [True, True]
    assert not follow_up.recall(next_rewrite(TURNS[:1]))  # nothing saved for another conversation
    evaluated = counting(follow_up)
    assert read_question(FOLLOW_UP, TURNS, follow_up, threading.Event()) == read_question(
        FOLLOW_UP, TURNS, plain, threading.Event()
    )
    assert evaluated[0] < follow_up.count_tokens(FOLLOW_UP) + 16  # the question and the turn's end only
    earlier = conversation_text(shown_turns(TURNS, follow_up, options))
    draft = build_prompt(FOLLOW_UP, PASSAGES, count_tokens=follow_up.count_tokens, budget=1500, earlier=earlier)
    evaluated.clear()
    assert answer(follow_up, draft.messages) == answer(plain, draft.messages)
    own = draft.tokens - follow_up.count_tokens("".join(m["content"] for m in draft.messages[:-1]))
    assert evaluated[0] < own - follow_up.count_tokens(earlier) + 16  # its passages and question only


def test_only_the_last_read_ahead_states_are_kept(tmp_path):
    reader = make(tmp_path, [rewrite_prefix()])
    for k in range(1, 4):
        reader.prefill(next_rewrite(TURNS[:k] if k < 3 else TURNS[1:]), keep=True, disk=True)
    assert len(list((tmp_path / "ahead").glob("*.state"))) == AHEAD_KEEP == len(reader.ahead.held())
    assert len(list(tmp_path.glob("*.state"))) == 1  # the demos' state is not pushed out by them
