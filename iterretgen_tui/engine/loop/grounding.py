"""Whether the passages read hold an answer at all: the reader's own say, asked as a
yes/no turn after its last draft.

A small reader asked a question its passages cannot answer writes an answer anyway,
from the nearest passage. Asked afterwards, in one short turn over the prompt and draft
it has just evaluated (llama.cpp reuses them, so only this turn's tokens are new),
whether the passages state the answer, it says no far more often than it declines in
its draft. The chat then says the documents do not hold it and shows the nearest
evidence instead of the guess (engine/loop/trust.py); docs/conversations.md measures
how often on questions that have no answer in the documents, and what it costs the ones
that have one.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .answers import yes_or_no
from .drafting import short_reply
from .generator import Generator, Message

CHECK = (
    "Look at the knowledge again. Does it state the answer to the question, not only something "
    "related to it? Reply with yes or no."
)
MAX_TOKENS = 3  # the verdict is the reply's first word


def check_messages(messages: Sequence[Message], draft: str) -> list[Message]:
    return [*messages, {"role": "assistant", "content": draft}, {"role": "user", "content": CHECK}]


def passages_answer(
    generator: Generator, messages: Sequence[Message], draft: str, cancel: threading.Event
) -> bool | None:
    """The reader's verdict on its own prompt and draft; None when it gives none."""
    reply = short_reply(
        generator, check_messages(messages, draft), MAX_TOKENS, cancel, lambda text: yes_or_no(text) is not None
    )
    return yes_or_no(reply)
