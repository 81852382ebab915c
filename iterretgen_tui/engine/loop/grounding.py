"""Whether the passages read state an answer at all, so the chat can say "your documents
don't seem to say" instead of a guess.

A small reader asked a question its passages cannot answer writes an answer anyway, from
the nearest passage. Three signals catch it (docs/conversations.md measures them):
- the evidence's support: no sentence read comes near the question, nor near the
  question with its stated answer (the embedder's measured bound), or the question asks
  what a command's option does and no page of that command read defines it; free, and on
  by default;
- the draft saying so itself ("The information provided does not mention any holidays.")
  while its answer is only a yes or no read from that silence; free, and always on;
- the reader's own check, asked as a yes/no turn in place of its draft's instruction (the
  text before it is what llama.cpp has just evaluated, so only the check's words are new),
  read as the probability of "yes" in its first token.
The chat then shows the nearest evidence instead of the answer (engine/loop/trust.py).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from .answers import normalize_answer, yes_or_no
from .drafting import short_reply
from .events import IterationTrace
from .generator import Generator, Message

CHECK = "Does the knowledge above answer this question? Reply with yes or no."
MAX_TOKENS = 3  # the verdict is the reply's first word
# The least probability of yes that counts as found (docs/conversations.md measures it).
FOUND_AT_LEAST = 0.5

# What the reader read, as it names it; "the documents" or "the information you provide"
# would also be the user's own subject ("If your documents do not include ..."), so only
# the reader's words for its knowledge count.
_READ = r"the\s+(?:given\s+|provided\s+)?(?:information|text|passages?|context|knowledge)"
_SAYS_NOT_SAID = re.compile(
    rf"\b{_READ}(?:\s+(?:provided|given|above))?\s+(?:does|do|did)\s*(?:not|n't)\s+(?:\w+ly\s+)?"
    r"(?:mention|say|state|specify|provide|contain|include|indicate|address|discuss|give)\b"
    rf"|\bnot\s+(?:\w+ly\s+)?(?:mentioned|stated|specified|provided|given)\s+in\s+{_READ}\b"
    r"|\bthere\s+is\s+no\s+(?:information|mention)\s+(?:of|about|on|regarding)\b",
    re.IGNORECASE,
)


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


def says_unsaid(draft: str, answer: str) -> bool:
    """The draft says that what the reader read does not hold the answer, and the answer
    is only what follows from that: a yes or no read from silence ("The information
    provided does not mention any holidays." -> "no"), or the saying itself ("not directly
    stated in the given knowledge"). A draft that says so of one part and answers from
    another ("... does not mention the fee, but the form is due in May") keeps its answer."""
    if not _SAYS_NOT_SAID.search(draft):
        return False
    return normalize_answer(answer) in ("yes", "no") or bool(_SAYS_NOT_SAID.search(answer))


def unsaid(last: IterationTrace, grounded: float | None, below: float) -> str:
    """Why the passages the last iteration read seem not to state the answer: "reader"
    where its check said no or its draft says so (``says_unsaid``), "evidence" where even
    the sentence nearest the question scores under ``below`` (0: the check is off) or the
    question's option is defined nowhere on its command's page; "" where neither."""
    if (grounded is not None and grounded < FOUND_AT_LEAST) or says_unsaid(last.draft, last.answer):
        return "reader"
    if below and last.evidence is not None and (last.evidence.support < below or last.evidence.option_undefined):
        return "evidence"
    return ""
