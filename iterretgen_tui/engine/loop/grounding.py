"""Whether the passages read state an answer at all, so the chat can say "your documents
don't seem to say" instead of a guess.

A small reader asked a question its passages cannot answer writes an answer anyway, from
the nearest passage. Two signals catch it (docs/conversations.md measures both):
- the evidence's support: no sentence read comes near the question, nor near the
  question with its stated answer (the embedder's measured bound); free, and on by default;
- the reader's own check, asked as a yes/no turn in place of its draft's instruction (the
  text before it is what llama.cpp has just evaluated, so only the check's words are new),
  read as the probability of "yes" in its first token.
The chat then shows the nearest evidence instead of the answer (engine/loop/trust.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .answers import yes_or_no
from .drafting import short_reply
from .evidence import Evidence
from .generator import Generator, Message

CHECK = "Does the knowledge above answer this question? Reply with yes or no."
MAX_TOKENS = 3  # the verdict is the reply's first word
# The least probability of yes that counts as found (docs/conversations.md measures it).
FOUND_AT_LEAST = 0.5


def check_messages(messages: Sequence[Message]) -> list[Message]:
    """The draft's prompt with the check in place of the draft's instruction: everything
    up to the question is the same text, which llama.cpp keeps evaluated, so only the
    check's words are new. The draft is not shown: with its own answer before it, the
    reader says yes to nearly everything."""
    last = messages[-1]["content"]
    asked = last[: last.rindex("\n") + 1] if "\n" in last else f"{last}\n"
    return [*messages[:-1], {"role": "user", "content": asked + CHECK}]


def found_probability(generator: Generator, messages: Sequence[Message], cancel: threading.Event) -> float | None:
    """How likely the reader says its passages state the answer: yes's share of its first
    token where the reader gives probabilities (llama.cpp), else its verdict as 1 or 0;
    None when it gives none."""
    check = check_messages(messages)
    probability = getattr(generator, "yes_probability", None)  # a served reader has none
    if probability is not None:
        return probability(check)
    verdict = yes_or_no(short_reply(generator, check, MAX_TOKENS, cancel, lambda text: yes_or_no(text) is not None))
    return None if verdict is None else float(verdict)


def unsaid(evidence: Evidence | None, grounded: float | None, below: float) -> str:
    """Why the passages read seem not to state the answer: "reader" where its check said
    no, "evidence" where even the sentence nearest the question scores under ``below``;
    "" where neither."""
    if grounded is not None and grounded < FOUND_AT_LEAST:
        return "reader"
    if evidence is not None and evidence.support < below:
        return "evidence"
    return ""
