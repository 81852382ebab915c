"""Asking for the answer a draft did not state.

Small models often reason without ever writing "So the answer is X.", or loop before they
get there; the answer is then a guess from the draft's last sentence. One short follow-up
turn in the same conversation ("what is the answer, in a few words?") makes them state
one. llama.cpp reuses the evaluated prompt and draft as the prefix, so the follow-up costs
only its own few tokens.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from .answers import content_words
from .generator import Generator, Message
from .prompts import extract_answer
from .repetition import stutters

QUESTION = "What is the answer, in a few words? Reply with the answer only."
MAX_TOKENS = 24
_QUESTION_WORDS = content_words(QUESTION)
_LEAD = re.compile(r"^\W*(?:so\s+)?(?:the\s+)?(?:final\s+)?answer\b(?:\s+is)?\s*:?\s*", re.IGNORECASE)


def follow_up_messages(messages: Sequence[Message], draft: str) -> list[Message]:
    return [*messages, {"role": "assistant", "content": draft}, {"role": "user", "content": QUESTION}]


def ask_for_answer(generator: Generator, messages: Sequence[Message], draft: str, cancel: threading.Event) -> str:
    """The answer the model states when asked outright; "" when it states none."""
    pieces: list[str] = []
    stream = generator.stream(follow_up_messages(messages, draft), max_tokens=MAX_TOKENS, cancel=cancel)
    try:
        for piece in stream:
            pieces.append(piece)
            if answer_line("".join(pieces))[1]:
                break
    finally:
        stream.close()
    reply = "".join(pieces)
    line = answer_line(reply)[0]
    if not line or stutters(reply) or echoes_question(line):  # a loop or our own words state nothing
        return ""
    return extract_answer(line)


def echoes_question(line: str) -> bool:
    """The reply only repeats the follow-up's own words ("Reply with the answer only.",
    seen with SmolLM2); an answer of no content words ("yes") is not such an echo."""
    words = content_words(line)
    return bool(words) and words <= _QUESTION_WORDS


def answer_line(reply: str) -> tuple[str, bool]:
    """The reply's first line past an "The answer is:" label, which small models often
    put on a line of its own with the answer below; and whether that line is finished."""
    line, newline, _ = _LEAD.sub("", reply.lstrip(), count=1).partition("\n")
    return line.strip(), bool(newline and line.strip())
