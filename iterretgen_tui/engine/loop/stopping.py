"""The adaptive stop's two rules, shared by the loop and by the evaluation that replays it."""

from __future__ import annotations

from collections.abc import Sequence, Set

from ..passages import Passage
from .answers import normalize_answer, token_f1

CONVERGENCE_F1 = 0.8  # token-F1 between consecutive answers that counts as "the same"


def answers_converge(previous: str, current: str) -> bool:
    if not normalize_answer(current):
        return False
    return normalize_answer(previous) == normalize_answer(current) or token_f1(previous, current) >= CONVERGENCE_F1


def no_new_passages(retrieved: Sequence[Passage], weighed: Set[int]) -> bool:
    """The searches found nothing the reader has not weighed already (``weighed``: the ids
    of the passages the last prompt was chosen from, read whole, in part, or not at all for
    its budget): another draft would choose from the same passages."""
    return {p.id for p in retrieved} <= weighed
