"""The adaptive stop's two rules, shared by the loop and by the evaluation that replays it."""

from __future__ import annotations

from collections.abc import Sequence

from ..passages import Passage
from .answers import normalize_answer, token_f1

CONVERGENCE_F1 = 0.8  # token-F1 between consecutive answers that counts as "the same"


def answers_converge(previous: str, current: str) -> bool:
    if not normalize_answer(current):
        return False
    return normalize_answer(previous) == normalize_answer(current) or token_f1(previous, current) >= CONVERGENCE_F1


def no_new_passages(retrieved: Sequence[Passage], previous: Sequence[Passage]) -> bool:
    """Greedy decoding over the same passages would repeat the last draft."""
    return {p.id for p in retrieved} <= {p.id for p in previous}
