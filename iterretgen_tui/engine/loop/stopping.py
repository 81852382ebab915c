"""The adaptive stop's two rules, shared by the loop and by the evaluation that replays it."""

from __future__ import annotations

from collections.abc import Sequence, Set

from ..passages import Passage
from .answers import answer_numbers, code_spans, mentions, normalize_answer, stems, token_f1, unglued

CONVERGENCE_F1 = 0.8  # token-F1 between consecutive answers that counts as "the same"


def answers_converge(previous: str, current: str, question: str) -> bool:
    """The two answers say the same, as written or with what glues words read as spaces
    ("MIT-licensed" is "MIT", asked "Which license does it use?"): the same words, nearly
    (token F1), or one is the other with words of ``question`` around it. Never where their
    numbers differ ("3.1.0" and "3.10" normalise alike, "version 3" and "version 4" are
    nearly the same words), the question's own numbers aside ("1.18" and "OCR reads 1.18
    pages a second on the Zen 3", asked about the Zen 3). Nor where each names code the
    other does not say ("... by running `cargo build` in your projects directory" and "...
    by running `cargo new hello_cargo` in your projects directory" are nearly the same
    words); one that only adds code to the other says more of the same."""
    asked = answer_numbers(question)
    if not normalize_answer(current) or answer_numbers(previous) - asked != answer_numbers(current) - asked:
        return False
    if not (says_its_code(previous, current, question) or says_its_code(current, previous, question)):
        return False
    return _said_alike(previous, current, question) or _said_alike(
        unglued(previous), unglued(current), unglued(question)
    )


def says_its_code(answer: str, other: str, question: str) -> bool:
    """Every code span of ``answer`` (in backquotes) that the question does not hold is
    said in ``other``, quoted or not."""
    return all(mentions(other, code) or mentions(question, code) for code in code_spans(answer))


def _said_alike(previous: str, current: str, question: str) -> bool:
    return (
        normalize_answer(previous) == normalize_answer(current)
        or token_f1(previous, current) >= CONVERGENCE_F1
        or restated(previous, current, question)
        or restated(current, previous, question)
    )


def restated(answer: str, longer: str, question: str) -> bool:
    """``longer`` is ``answer`` said with the question's words around it: "The office closes
    on 24 December" is "24 December", asked "When does the office close?"."""
    return mentions(longer, answer) and stems(longer) - stems(answer) <= stems(question)


def no_new_passages(retrieved: Sequence[Passage], weighed: Set[int]) -> bool:
    """The searches found nothing the reader has not weighed already (``weighed``: the ids
    of the passages the last prompt was chosen from, read whole, in part, or not at all for
    its budget): another draft would choose from the same passages."""
    return {p.id for p in retrieved} <= weighed
