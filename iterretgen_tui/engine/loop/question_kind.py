"""Which prompt a question gets: a factoid (who, when, which file, how many) is answered
in the paper's chain of thought ending "So the answer is X."; an open question (how does
X work, why, summarise Y, what did we decide about Z) gets a few cited sentences.

Rules, not a model: they run before anything is loaded and a user can predict them.
"""

from __future__ import annotations

import re

FACTOID = "factoid"
OPEN = "open"

# Openings that ask for an account rather than a name, date or number. "how many/much/
# long/old/often" ask for a quantity and stay factoid.
_OPEN_START = re.compile(
    r"^\s*(?:"
    r"how\b(?!\s+(?:many|much|long|old|often|far|big|large|tall)\b)"
    r"|why\b|explain\b|describe\b|summari[sz]e\b|summary\b|outline\b|compare\b|discuss\b"
    r"|tell me\b|give (?:me )?an? (?:overview|summary|explanation)\b"
    r"|what (?:did|do|does|should|can|could|would|are the|were the) (?:we|i|you|they)\b"
    r"|what (?:happens|is the (?:difference|purpose|role|idea|point|process)|are the (?:steps|differences|options|ways))\b"
    r"|in what way"
    r")",
    re.IGNORECASE,
)


# A question that chooses: between options it names ("A or B?"), or yes or no ("Are both
# ...?"). As a factoid it gets demos that compare and answer "no" (prompts.CHOICE_DEMOS).
_ASKS_YES_NO = re.compile(
    r"^\s*(?:are|is|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.IGNORECASE
)
_CHOOSES = re.compile(rf"{_ASKS_YES_NO.pattern}|\bor\b", re.IGNORECASE)
# A reply that opens with a yes or no and goes on ("Yes, the file is kept ...").
_YES_NO_LEAD = re.compile(r"^\W*(yes|no)\b(?:\s*[,.;:!]|\s*$)", re.IGNORECASE)


# "What is X?" of a short X related to nothing else asks for a definition, which a name
# cannot give: as a factoid the 1.5B answered "What is EBT?" with "EBT". "What is the
# capital of Hungary?" names a relation ("of") and stays a factoid.
_DEFINITION = re.compile(r"^\s*what\s+(?:is|are|was|were)\s+(?:an?\s+|the\s+)?(?P<x>[^?]+?)\s*\?\s*$", re.IGNORECASE)
_RELATIONS = frozenset(
    "of for in on at to from by with about between during after before under over into than "
    "that which who whose where when".split()
)
DEFINED_WORDS = 4  # "the Window Preservation Standards Collaborative" is still one thing


def defines(question: str) -> bool:
    match = _DEFINITION.match(question)
    words = match.group("x").lower().split() if match else []
    return 0 < len(words) <= DEFINED_WORDS and _RELATIONS.isdisjoint(words)


def question_kind(question: str) -> str:
    return OPEN if _OPEN_START.match(question) or defines(question) else FACTOID


def chooses(question: str) -> bool:
    return _CHOOSES.search(question) is not None


def yes_no_answer(question: str, answer: str) -> str:
    """The yes or no a yes-or-no question's answer opens with ("Yes, the file is kept
    with ..." -> "Yes"), as the demos state theirs: the rest is the draft's to say, under
    it, where the checks of what it names apply to it. Any other answer as it is."""
    lead = _YES_NO_LEAD.match(answer) if _ASKS_YES_NO.match(question) else None
    return lead.group(1) if lead else answer
