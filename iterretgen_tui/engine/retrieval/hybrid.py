"""Hybrid retrieval: every search ranked by the dense and the keyword retriever, fused.

Fusion is a convex combination of each ranking's min-max normalised scores, read to a
depth below the k asked for. Dense retrieval carries most of the weight: keyword search
finds the names, codes and rare terms an embedding blurs, but loses to it where a
question paraphrases its passages, and the weight keeps such questions' dense ranking
on top (plain reciprocal-rank fusion lost to dense on MuSiQue; the comparison of fusions,
depths and weights is in docs/evaluation.md, "Hybrid retrieval"). A passage whose whole
title the search text names (a person, a place, a document's heading) gets a bonus: bm25
counts a title's words one by one, and neither ranking knows that they were named together.
A passage that defines a command-line option the search names, on the page the search
ranks first, gets a bonus too: neither ranking sees options ("-S" is the word "s" to bm25).

``HybridRetriever`` has the interface of ``Retriever``, so the loop's searches (the question
at t=1, each of feedback mode's searches at t >= 2) are all fused without the loop
knowing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Protocol

from ..indexing.chunking import SECTION, heading_of
from ..loop.answers import named_options, stems
from ..loop.evidence import defines_option
from ..passages import Passage

FUSION_DEPTH = 50  # ranks read from each retriever before fusing
DENSE_WEIGHT = 0.7  # the dense ranking's share of the fused score
TITLE_BONUS = 0.2  # added to the fused score of a passage whose title the search names
# ... and this where its title holds a code the search names: a code names one page, as
# surely as the embedding's best match. A code that titles more files than this among
# the passages found names a topic ("p53" in a dozen papers' titles), not a page; two
# allow a page and a copy of it (a book's print-all page).
CODE_BONUS = DENSE_WEIGHT
CODE_FILES = 2
# ... and this where it defines an option the search names on the page ranked first: "What
# does ls -S do?" found ls's page, its sort options first, "-S: sort by file size" 16th.
OPTION_BONUS = DENSE_WEIGHT
MIN_TITLE_CHARS = 4  # shorter titles ("A", "Go") occur inside too many texts by chance
# A one-word heading ("Usage", "Options") is named by too many questions.
MIN_HEADING_WORDS = 2
_WORDS = re.compile(r"\w+")
# A code: a word of letters and two or more digits ("E0382", "sha256", "401k"), which
# names one thing where the embedding only sees "an error code" or "a hash"; an ordinal
# ("17th") is none, nor a version ("v20" of "Node.js v20.20.2 Documentation", which
# titles every page of a set and was named by a search made of such a page).
_CODE = re.compile(r"(?!\d+(?:st|nd|rd|th)\b|v\d+\b)(?=\w*[^\W\d_])(?=(?:\w*\d){2})\w+")


class RankedRetrieval(Protocol):
    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]: ...


class HybridRetriever:
    def __init__(
        self,
        dense: RankedRetrieval,
        lexical: RankedRetrieval,
        *,
        depth: int = FUSION_DEPTH,
        dense_weight: float = DENSE_WEIGHT,
        title_bonus: float = TITLE_BONUS,
        code_bonus: float = CODE_BONUS,
        normalise: Callable[[Sequence[Passage]], dict[int, float]] | None = None,
    ) -> None:
        self.dense = dense
        self.embedder = getattr(dense, "embedder", None)  # the loop scores evidence sentences with it
        self.index = getattr(dense, "index", None)  # ... and completes them from the passages beside them
        self.lexical = lexical
        self.depth = depth
        self.dense_weight = dense_weight
        self.title_bonus = title_bonus
        self.code_bonus = code_bonus
        self.normalise = normalise or normalised
        # The keyword search runs beside the query's encoding: SQLite and the encoder both
        # release the GIL, so a search costs about the slower of the two, not their sum.
        self._beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="keyword-search")

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]:
        if not queries:
            return []
        depth = max(k, self.depth)
        lexical_future = self._beside.submit(self.lexical.retrieve_many, queries, depth)
        dense = self.dense.retrieve_many(queries, depth)
        lexical = lexical_future.result()
        return [
            fuse(
                by_dense,
                by_lexical,
                k,
                dense_weight=self.dense_weight,
                named=_named(query),
                asked=stems(query),
                options=named_options(query),
                title_bonus=self.title_bonus,
                code_bonus=self.code_bonus,
                normalise=self.normalise,
            )
            for query, by_dense, by_lexical in zip(queries, dense, lexical)
        ]

    def retrieve(self, query: str, k: int) -> list[Passage]:
        return self.retrieve_many([query], k)[0]


def normalised(ranking: Sequence[Passage]) -> dict[int, float]:
    """Scores mapped to [0, 1] within the ranking (best 1, worst read 0); bm25 and cosine
    live on different scales, so they are only comparable after this."""
    if not ranking:
        return {}
    scores = [p.score for p in ranking]
    low, high = min(scores), max(scores)
    span = high - low
    return {p.id: (p.score - low) / span if span > 0 else 1.0 for p in ranking}


def _named(text: str) -> str:
    """``text``'s words, lower-cased, each between spaces: a title's own ``_named`` occurs in
    it exactly where the text names the whole title, word for word."""
    return " " + " ".join(_WORDS.findall(text.lower())) + " "


def fuse(
    dense: Sequence[Passage],
    lexical: Sequence[Passage],
    k: int,
    *,
    dense_weight: float,
    named: str = "",
    asked: set[str] | None = None,
    options: set[str] | None = None,
    title_bonus: float = TITLE_BONUS,
    code_bonus: float = CODE_BONUS,
    normalise: Callable[[Sequence[Passage]], dict[int, float]] = normalised,
) -> list[Passage]:
    """The top k by ``dense_weight`` x dense score + the rest x keyword score (each
    ``normalise``d; a passage one ranking did not return scores 0 there), plus ``code_bonus``
    where ``named`` (the search text's ``_named``) names a code its title holds that
    titles few files (``_page_codes``), else ``title_bonus`` where it names the passage's
    whole title, or ``asked`` (its ``stems``) every word of its section's heading; and
    ``OPTION_BONUS`` where it defines one of ``options`` on the first passage's page; ties
    kept in dense order.
    Each passage says which ranking found it (``ranker``) and carries the fused score."""
    by_dense, by_lexical = normalise(dense), normalise(lexical)
    passages = {p.id: p for p in dense}  # dense first: ties keep its order
    for p in lexical:
        passages.setdefault(p.id, p)
    titles = {i: _named(p.title) for i, p in passages.items()}
    # The codes of each title that the search names, read once for the count of files
    # and the bonus.
    named_codes = {i: {code for code in _CODE.findall(title) if f" {code} " in named} for i, title in titles.items()}
    codes = _page_codes(named_codes, passages)

    def score(i: int) -> float:
        title = titles[i]
        said = len(title) - 2 >= MIN_TITLE_CHARS and title in named
        if named_codes[i] & codes:
            bonus = code_bonus
        elif said or _heading_named(passages[i].title, asked):
            bonus = title_bonus
        else:
            bonus = 0.0
        return dense_weight * by_dense.get(i, 0.0) + (1 - dense_weight) * by_lexical.get(i, 0.0) + bonus

    fused = {i: score(i) for i in passages}
    if options and fused:
        page = passages[max(fused, key=fused.get)].source
        for i, p in passages.items():
            if p.source == page and defines_option(p, options):
                fused[i] += OPTION_BONUS
    order = sorted(passages, key=lambda i: -fused[i])[:k]
    tops = {p.id for p in dense[:k]}, {p.id for p in lexical[:k]}
    return [replace(passages[i], score=fused[i], ranker=_finder(i, tops, (by_dense, by_lexical))) for i in order]


def _heading_named(title: str, asked: set[str] | None) -> bool:
    """Every word of the title's section heading, its number aside ("5.2.1. Running
    Cachegrind"), is among the ``asked`` stems, and it has ``MIN_HEADING_WORDS`` or more."""
    if not asked or SECTION not in title:
        return False
    heading = {word for word in stems(heading_of(title)) if not word.isdigit()}
    return len(heading) >= MIN_HEADING_WORDS and heading <= asked


def _page_codes(named_codes: dict[int, set[str]], passages: dict[int, Passage]) -> set[str]:
    """Of the codes the search names in the passages' titles (``named_codes``, by passage
    id), those that title passages of at most ``CODE_FILES`` files: "What does error E0382
    mean?" and the page titled "E0382 - Error codes index", which keyword search ranks
    first and the embedding does not find among 500 pages alike."""
    files: dict[str, set[str]] = {}
    for i, held in named_codes.items():
        for code in held:
            files.setdefault(code, set()).add(passages[i].source)
    return {code for code, sources in files.items() if len(sources) <= CODE_FILES}


def _finder(passage_id: int, tops: tuple[set, set], returned: tuple[dict, dict]) -> str:
    """Which ranker found a passage: the one(s) that had it in their own top k, else the one(s)
    that returned it at all (a passage both ranked just below k can rise by their agreement)."""
    dense, lexical = (passage_id in ids for ids in tops)
    if not (dense or lexical):
        dense, lexical = (passage_id in ids for ids in returned)
    return "both" if dense and lexical else "dense" if dense else "lexical"
