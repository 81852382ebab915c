"""Keyword retrieval: any text -> a safe FTS5 query -> passages ranked by bm25.

FTS5's query language gives meaning to quotes, AND/OR/NOT/NEAR, ``*``, ``^``, parentheses,
``-`` and ``column:``, and a question or a model's draft may hold any of them. So a text is
never passed through: its words are taken out, each is double-quoted (inside quotes all
of that is literal; a hyphenated word such as ``XQ-4471`` becomes a phrase of its parts),
and they are joined by OR. A disjunction ranks the long draft + question searches of
iteration 2 and later by the rare terms a passage shares with them, where a phrase or a
conjunction of a whole draft would match nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from ..passages import Passage

# Terms per query: bm25 reads one posting list per term, so a 10,000-character draft must
# not become thousands of them. The loop puts the question last (form_query), so the
# last distinct terms are the ones kept.
MAX_TERMS = 64
MAX_TERM_CHARS = 64  # longer "words" are noise (hashes, runs of hyphenated tokens)
# bm25 scores every passage that holds any query term (FTS5 has no top-k pruning), so a
# query's cost is the length of its terms' posting lists. Past this many postings the
# commonest terms are left out, rarest kept first: they weigh least in bm25 and cost most.
# Small folders never reach it; at 100,000 passages it keeps a search under the latency
# goal (docs/performance.md, "Hybrid retrieval").
POSTINGS_BUDGET = 7_500
# The title's terms count this many times a text term's in bm25 (docs/evaluation.md).
TITLE_WEIGHT = 2.0

_WORD = re.compile(r"\w+(?:-\w+)*")  # \w never matches a double quote: quoting is safe
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)


class KeywordSearch(Protocol):
    def lexical_search(self, match: str, k: int, *, title_weight: float = 1.0) -> list[Passage]: ...

    def term_frequencies(self, terms: Sequence[str]) -> dict[str, int]: ...


def query_terms(text: str) -> list[str]:
    """``text``'s distinct non-stop-word terms, lower-cased, the last ``MAX_TERMS`` of them in
    text order; empty when nothing is left to search for (punctuation, emoji, stop words)."""
    kept: dict[str, None] = {}
    for word in reversed(_WORD.findall(text)):
        term = word.lower()
        if term in STOP_WORDS or term in kept or len(term) > MAX_TERM_CHARS:
            continue
        kept[term] = None
        if len(kept) == MAX_TERMS:
            break
    return list(reversed(kept))


def match_expression(terms: Sequence[str]) -> str | None:
    """The terms as a safe FTS5 query: each quoted, joined by OR; None for no terms."""
    return " OR ".join(f'"{term}"' for term in terms) or None


def within_budget(terms: Sequence[str], frequencies: dict[str, int], budget: int = POSTINGS_BUDGET) -> list[str]:
    """The terms whose posting lists fit ``budget`` together, rarest first, in their query
    order. The rarest term the index holds is kept whatever its length, and so is every term
    it has no count for (a hyphenated code is a phrase of its parts, an accented word is
    folded): those cost nothing to keep."""
    total, kept = 0, set()
    for term in sorted(terms, key=lambda t: frequencies.get(t, 0)):
        count = frequencies.get(term, 0)
        if total and total + count > budget:
            break
        total += count
        kept.add(term)
    return [t for t in terms if t in kept]


class LexicalRetriever:
    """bm25 over the passages' titles and texts; the interface of ``Retriever``."""

    embedder = None  # no embedder: answers from keyword search alone carry no evidence sentence

    def __init__(
        self, index: KeywordSearch, *, title_weight: float = TITLE_WEIGHT, postings_budget: int = POSTINGS_BUDGET
    ) -> None:
        self.index = index
        self.title_weight = title_weight
        self.postings_budget = postings_budget

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]:
        return [self.retrieve(query, k) for query in queries]

    def retrieve(self, query: str, k: int) -> list[Passage]:
        terms = query_terms(query)
        if not terms or k < 1:
            return []
        match = match_expression(within_budget(terms, self.index.term_frequencies(terms), self.postings_budget))
        found = self.index.lexical_search(match, k, title_weight=self.title_weight)
        return [replace(p, ranker="lexical") for p in found]
