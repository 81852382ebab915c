"""Passages read in part. On a laptop CPU the reader's cost is the prompt tokens it
evaluates (about 40 a second on two AVX2 cores; docs/performance.md), and whole passages
make an iteration's prompt 1,000 to 1,500 of them. So each passage gives the reader the
sentences that bear on what this iteration asks (the question, and after the first
iteration the draft-plus-question query), scored by the embedder that ranks the passages,
with what makes a sentence understood: the lead-in of a list item, what a colon
introduces. Kept sentences stay in their passage's order under its title; a gap between
them shows as "…".

Modes (``LoopOptions.read``): ``budget``, the best sentences of all the passages first
until the knowledge holds ``read_tokens`` tokens (a passage none of whose sentences makes
it is left out of the prompt); ``sentences``, the best ``PER_PASSAGE`` of every passage;
``whole``, the passages as they are. The evidence, the panes and the citations keep the
whole passages: only what the reader evaluates changes.

A passage kept from an earlier iteration is read as it was then, and the budget of the
iterations after the first (``check_read_tokens``) goes to the new passages alone: the
prompt then starts as the last one did, and llama.cpp evaluates only what is new
(docs/performance.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..passages import Passage
from .evidence import DRAWN_BULLET, SentenceEmbedder, definitions_first, drawn_together, sentences, under_heading
from .prompts import knowledge_line

PER_PASSAGE = 2  # the ``sentences`` mode's best sentences of each passage
GAP = "…"


class SentenceMemo:
    """The embedder, remembering each sentence's vector: every iteration reads the kept
    passages again and the evidence scores the same sentences, so each is embedded once
    a question."""

    def __init__(self, embedder: SentenceEmbedder) -> None:
        self.embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.embed_queries(texts)

    def embed_batch(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        if queries:
            return self.embedder.embed_batch(texts, queries=True)
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.embedder.embed_batch(missing)))
        return np.stack([self._vectors[text] for text in texts])


def read_parts(
    passages: Sequence[Passage],
    asked: Sequence[str],
    embedder: SentenceEmbedder | None,
    *,
    mode: str,
    tokens: int,
    count_tokens: Callable[[str], int],
    read_before: Mapping[int, str] = {},
) -> list[str | None]:
    """Per passage, the text the reader gets: the sentences that bear on ``asked`` (the
    question, the iteration's query; an option's own statement first where the question
    names the option), in the passage's order; None for a passage left out. Without an
    embedder, or in ``whole`` mode, the passages as they are.
    ``read_before``: by passage id, what an earlier iteration read of a kept passage,
    given again as it was and outside ``tokens``."""
    if mode == "whole" or embedder is None or not passages:
        return [p.text for p in passages]
    split = [[] if p.id in read_before else sentences(p.text) for p in passages]
    candidates = [(n, i) for n, own in enumerate(split) for i in range(len(own))]
    if not candidates:
        return [read_before.get(p.id, p.text) for p in passages]
    queries = embedder.embed_queries(list(asked))
    vectors = embedder.embed_batch([under_heading(passages[n], split[n][i]) for n, i in candidates])
    scores = (vectors @ np.asarray(queries).T).max(axis=1)
    scores = scores + definitions_first(
        asked[0], [split[n][i] for n, i in candidates], [passages[n] for n, _ in candidates]
    )
    best_first = [candidates[k] for k in np.argsort(-scores, kind="stable")]
    chosen: list[set[int]] = [set() for _ in passages]
    if mode == "sentences":
        picked = [0] * len(passages)
        for n, i in best_first:
            if picked[n] < PER_PASSAGE:
                picked[n] += 1
                chosen[n] |= understood(split[n], i)
    else:
        room = tokens
        for n, i in best_first:
            unit = understood(split[n], i) - chosen[n]
            # As the prompt has it: a code block's lines run together (prompts.knowledge_line).
            cost = sum(count_tokens(" ".join(split[n][j].split())) + 1 for j in unit)
            if not chosen[n]:  # the passage's title and layout come with its first sentence
                cost += count_tokens(knowledge_line(passages[n].title, ""))
            if unit and cost <= room:
                chosen[n] |= unit
                room -= cost
    return [
        read_before.get(passages[n].id) or (joined(split[n], chosen[n]) if chosen[n] else None)
        for n in range(len(passages))
    ]


def understood(own: Sequence[str], i: int) -> set[int]:
    """Sentence ``i`` of a passage with what it needs to be understood: a list item's
    lead-in (the sentence before the list), and what a sentence ending in a colon
    introduces."""
    unit = {i}
    if own[i].startswith(DRAWN_BULLET):
        lead = i - 1
        while lead >= 0 and own[lead].startswith(DRAWN_BULLET):
            lead -= 1
        if lead >= 0:
            unit.add(lead)
    if own[i].endswith(":") and i + 1 < len(own):
        unit.add(i + 1)
    return unit


def joined(own: Sequence[str], chosen: set[int]) -> str:
    """The chosen sentences in order, drawn as the page does (a table's rows a line each),
    "…" where sentences between them were left out."""
    runs: list[list[str]] = []
    for i in sorted(chosen):
        if runs and i - 1 in chosen:
            runs[-1].append(own[i])
        else:
            runs.append([own[i]])
    return f" {GAP} ".join(drawn_together(run) for run in runs)
