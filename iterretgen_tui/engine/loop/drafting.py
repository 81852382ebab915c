"""A draft streamed from the model: stopped as soon as it states its answer (small models
otherwise ramble to the token limit) or repeats itself (the loop guard). And the short
replies around drafts (the answer asked for, the question rewritten, the yes/no check),
read only as far as they are needed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

from .generator import Generator, Message
from .prompts import answer_end, turn_echo
from .repetition import LoopGuard, stutters


def stream_draft(
    generator: Generator,
    messages: Sequence[Message],
    kind: str,
    max_tokens: int,
    guard: LoopGuard,
    cancel: threading.Event,
) -> Iterator[str]:
    """The draft's pieces as they come; ``guard`` holds the draft, cut where it began to
    repeat itself, to write a question's turn of its own, or where its stated answer's
    sentence ends."""
    stream = generator.stream(messages, max_tokens=max_tokens, cancel=cancel)
    try:
        for piece in stream:
            yield piece
            if guard.feed(piece):
                break  # looping: nothing more of use will come
            echo = turn_echo(guard.text)
            if echo is not None:  # copying its passages on into the prompt's next lines
                guard.text = guard.text[:echo].rstrip()
                break
            end = answer_end(guard.text, kind)
            if end is not None:  # the answer is stated: whatever follows would be discarded
                guard.text = guard.text[:end]
                break
    finally:
        stream.close()  # stops decoding at once


def short_reply(
    generator: Generator,
    messages: Sequence[Message],
    max_tokens: int,
    cancel: threading.Event,
    done: Callable[[str], bool],
) -> str:
    """The model's short reply, read until ``done`` says what is wanted is in it, or until
    it stutters (a loop states nothing, so nothing more is worth waiting for)."""
    pieces: list[str] = []
    stream = generator.stream(messages, max_tokens=max_tokens, cancel=cancel)
    try:
        for piece in stream:
            pieces.append(piece)
            text = "".join(pieces)
            if done(text) or stutters(text):
                break
    finally:
        stream.close()
    return "".join(pieces)
