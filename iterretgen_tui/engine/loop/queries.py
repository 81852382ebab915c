"""Generation-augmented retrieval: what iteration t >= 2 searches with, and how the
searches' rankings are merged.

"draft" is the paper's y(t-1) || q alone; "fusion" merges the rankings of q and
y(t-1) || q by reciprocal rank; "interleave" takes their passages in turn (q's best, the
draft's best, q's second, ...), so a weak draft cannot push the question's best passages
out and a good one always gets slots; "feedback" interleaves three rankings: q's, that of
the previous iteration's top passage || q (what a two-hop question's first hop found
names its bridge), and the draft's. How each mode measures: docs/evaluation.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from typing import Protocol

from ..passages import Passage
from ..retrieval.fusion import fuse, interleave
from .events import IterationTrace
from .evidence import SentenceEmbedder
from .options import QUERY_MODES
from .outcome import query_draft
from .stopping import no_new_passages

# The searches an iteration may merge, by identifier (the UI words them). EARLIER: the
# question after the user's turn before it, beside the question at t = 1 of a follow-up.
QUESTION, LEAD, DRAFT, EARLIER = "question", "lead", "draft", "earlier"
FUSION_DEPTH = 50  # ranks read from each list before fusing


class PassageRetriever(Protocol):
    embedder: SentenceEmbedder | None  # also scores the evidence sentences (None: no evidence)

    def retrieve(self, query: str, k: int) -> list[Passage]: ...

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]: ...


# The text that stands for the previous output in the next query; eval's gold-draft
# diagnostic supplies its own.
QueryFormer = Callable[[str, IterationTrace], str]


def form_query(question: str, text: str) -> str:
    """The paper's generation-augmented query layout: the generated text, then the question."""
    return f"{text}\n{question}"


def paper_query(question: str, previous: IterationTrace) -> str:
    """y(t-1) || q, with y(t-1) cut before any repetition (or the evidence sentence when
    nothing of it is left: engine/loop/outcome.query_draft)."""
    return form_query(question, query_draft(previous))


def first_searches(question: str, context: str = "") -> dict[str, str]:
    """Iteration 1's search texts by identifier: the question, and in a conversation the
    question after the turn before it (engine/loop/conversation.context_search)."""
    return {QUESTION: question, EARLIER: context} if context else {QUESTION: question}


def search_first(
    named: dict[str, str], retriever: PassageRetriever, k: int
) -> tuple[dict[str, list[Passage]], list[Passage]]:
    """Iteration 1's searches, each ranking, and their passages taken in turn."""
    rankings = rank_searches(named, retriever, k, "interleave")
    return rankings, merge_rankings(rankings, k, "interleave")


def searches(question: str, query: str, mode: str, lead: Passage | None = None) -> dict[str, str]:
    """Iteration t >= 2's search texts by identifier, in the order their rankings are
    merged; ``lead`` is the previous iteration's top passage ("feedback" mode)."""
    if mode not in QUERY_MODES:
        raise ValueError(f"query mode must be one of {', '.join(QUERY_MODES)}, not {mode!r}")
    if mode == "draft":
        return {DRAFT: query}
    named = {QUESTION: question}
    if mode == "feedback" and lead is not None:
        named[LEAD] = form_query(question, lead.searched_text)
    named[DRAFT] = query
    return named


def rank_searches(
    named: dict[str, str], retriever: PassageRetriever, k: int, mode: str, extra: int = 0
) -> dict[str, list[Passage]]:
    """Each named search's ranking, as deep as ``mode`` merges them, plus ``extra`` ranks."""
    return dict(zip(named, retriever.retrieve_many(list(named.values()), merge_depth(k, mode) + extra)))


def merge_depth(k: int, mode: str) -> int:
    """How deep ``mode`` reads each ranking to merge k passages."""
    return max(k, FUSION_DEPTH) if mode == "fusion" else k


def merge_rankings(rankings: dict[str, list[Passage]], k: int, mode: str) -> list[Passage]:
    lists = list(rankings.values())
    return fuse(lists, k) if mode == "fusion" else interleave(lists, k)


@dataclass(frozen=True)
class SearchedAgain:
    """What iteration t >= 2's searches found."""

    rankings: dict[str, list[Passage]]  # each search's own ranking, as deep as the merge reads
    unread: dict[str, list[Passage]]  # the same without the passages skipped, as merged into ``passages``
    passages: list[Passage]
    repeats: bool  # the searches' own best k held nothing the reader had not weighed


def search_again(
    named: dict[str, str],
    retriever: PassageRetriever,
    k: int,
    mode: str,
    read: Sequence[Passage],
    skip_read: bool,
    weighed: Set[int] = frozenset(),
) -> SearchedAgain:
    """Run iteration t >= 2's searches. ``read`` is the last prompt's passages. With
    ``skip_read`` (earlier passages are kept, so the reader has them anyway) the k slots
    go to the best passages not among them: the question's own ranking otherwise spends
    them on what iteration 1 already read (docs/evaluation.md, "New passages at t >= 2").
    ``repeats`` is judged on the searches' own top k either way, so the adaptive stop
    stops where it did before, against ``read`` and ``weighed`` (the ids of the passages
    the last prompt was chosen from: read in part, a passage may give the reader nothing)."""
    seen = {p.id for p in read}
    deep = rank_searches(named, retriever, k, mode, extra=len(seen) if skip_read else 0)
    depth = merge_depth(k, mode)
    own = {name: ranking[:depth] for name, ranking in deep.items()}
    merged = merge_rankings(own, k, mode)
    repeats = no_new_passages(merged, seen | weighed)
    if not skip_read:
        return SearchedAgain(own, own, merged, repeats)
    unread = {name: [p for p in ranking if p.id not in seen][:depth] for name, ranking in deep.items()}
    return SearchedAgain(own, unread, merge_rankings(unread, k, mode), repeats)
