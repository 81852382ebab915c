"""Why each passage of an iteration is there: new, found again, or carried forward.

The loop records, for every passage it gives the model, the searches whose top k held
it (``found_by``; empty for a passage carried forward from an earlier iteration by
``keep_passages``). Everything else follows from the iterations before: a passage is
new the first time any iteration reads it, found again when a later search returns it.
The TUI and ``ask --json`` both derive their marks here, from the trace alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..passages import Passage
from .events import IterationTrace

NEW = "new"
AGAIN = "again"  # retrieved again by this iteration's searches
CARRIED = "carried"  # not retrieved again: kept from an earlier iteration (keep_passages)


@dataclass(frozen=True)
class Origin:
    kind: str  # NEW, AGAIN or CARRIED
    searches: tuple[str, ...]  # the searches that found it in this iteration; () when carried
    first_t: int  # the iteration that first read it (this one when new)

    def describe(self, words: Callable[[str], str] = str) -> str:
        """One short phrase for a passage's label, e.g. "found again (first in 1)";
        ``words`` names a search identifier (engine/loop/queries.py) for the reader."""
        if self.kind == CARRIED:
            return f"carried from iteration {self.first_t}"
        what = "new" if self.kind == NEW else f"found again (first in {self.first_t})"
        return f"{what} · via {' & '.join(map(words, self.searches))}" if self.searches else what


def found_by(
    passages: Sequence[Passage], rankings: Mapping[str, Sequence[Passage]], k: int
) -> tuple[tuple[str, ...], ...]:
    """For each retrieved passage, the named searches whose first ``k`` results hold it;
    failing that (fusion reads deeper than k), those whose ranking holds it at all."""
    tops = {name: {p.id for p in ranking[:k]} for name, ranking in rankings.items()}
    deep = {name: {p.id for p in ranking} for name, ranking in rankings.items()}

    def names(p: Passage) -> tuple[str, ...]:
        return tuple(n for n, ids in tops.items() if p.id in ids) or tuple(n for n, ids in deep.items() if p.id in ids)

    return tuple(map(names, passages))


def found_again(
    read: Sequence[Passage], rankings: Mapping[str, Sequence[Passage]], k: int
) -> dict[int, tuple[str, ...]]:
    """The passages of ``read`` that a search ranked in its first ``k`` again, and which."""
    tops = {name: {p.id for p in ranking[:k]} for name, ranking in rankings.items()}
    found = {p.id: tuple(n for n, ids in tops.items() if p.id in ids) for p in read}
    return {i: names for i, names in found.items() if names}


def origins(
    t: int,
    passages: Sequence[Passage],
    searched: Sequence[tuple[str, ...]],
    earlier: Sequence[tuple[int, Sequence[Passage]]],
) -> tuple[Origin, ...]:
    """The origin of each of iteration ``t``'s ``passages``, given what each search found
    (``searched``, aligned with ``passages``) and the (t, passages) of the iterations
    before. A trace saved before provenance was recorded has no ``searched``: ()."""
    if len(searched) != len(passages):
        return ()
    first: dict[int, int] = {}
    for earlier_t, earlier_passages in earlier:
        for p in earlier_passages:
            first.setdefault(p.id, earlier_t)
    marks = []
    for p, names in zip(passages, searched):
        seen = first.get(p.id)
        if not names and seen is not None:
            marks.append(Origin(CARRIED, (), seen))
        elif seen is not None:
            marks.append(Origin(AGAIN, names, seen))
        else:
            marks.append(Origin(NEW, names, t))
    return tuple(marks)


def trace_origins(traces: Sequence[IterationTrace]) -> list[tuple[Origin, ...]]:
    """``origins`` for every iteration of a finished answer, in order."""
    return [
        origins(trace.t, trace.passages, trace.found_by, [(e.t, e.passages) for e in traces[:n]])
        for n, trace in enumerate(traces)
    ]
