"""Merging several rankings of passages into one."""

from __future__ import annotations

from collections.abc import Sequence

from ..passages import Passage

RRF_K = 60  # reciprocal rank fusion's usual damping constant


def fuse(rankings: Sequence[Sequence[Passage]], k: int) -> list[Passage]:
    """Reciprocal rank fusion; a passage keeps its best similarity score for display."""
    fused: dict[int, float] = {}
    best: dict[int, Passage] = {}
    for ranking in rankings:
        for rank, passage in enumerate(ranking):
            fused[passage.id] = fused.get(passage.id, 0.0) + 1.0 / (RRF_K + rank + 1)
            if passage.id not in best or passage.score > best[passage.id].score:
                best[passage.id] = passage
    order = sorted(fused, key=lambda i: -fused[i])  # stable: ties keep first-seen order
    return [best[i] for i in order[:k]]


def interleave(rankings: Sequence[Sequence[Passage]], k: int) -> list[Passage]:
    """The rankings' passages in turn, rank by rank, each passage once."""
    taken: dict[int, Passage] = {}
    for tier in zip(*rankings):
        for passage in tier:
            taken.setdefault(passage.id, passage)
    return list(taken.values())[:k]
