#!/usr/bin/env python
"""Which keyword index and which fusion make hybrid retrieval? Printed as JSON.

Every question of each dataset is ranked once by dense retrieval and once by keyword
(bm25) retrieval per tokenizer and title weight, 100 deep; each candidate then re-ranks
those lists exactly as ``HybridRetriever`` would, and is scored by eval's own
``retrieval_rows`` (t=1 answer and gold recall of the top k, recall@5/10/100, nDCG@10),
with paired differences against dense and their 95% intervals; "title bonus" rows are
also paired against the fusion without one. "postings budget" scores the
keyword retriever's budget against none ("vs_dense" there is against no budget). The candidates that were
measured and not shipped (reciprocal-rank fusion, plain or weighted; z-score and 3-sigma
normalisation instead of min-max) live here.

The dataset indexes are eval's own (cached in ITERRETGEN_HOME); the keyword index is
rebuilt in place for each tokenizer and left with the shipped one.

Usage: scripts/hybrid_fusion.py DATASET_DIR... [--embed-backend auto] [--top-k 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

from iterretgen_tui.commands.eval import open_dataset_index
from iterretgen_tui.config import Settings
from iterretgen_tui.engine.evaluation.datasets import load_dataset
from iterretgen_tui.engine.evaluation.evaluate import _mean, paired, retrieval_rows
from iterretgen_tui.engine.indexing import index as index_module
from iterretgen_tui.engine.retrieval import hybrid
from iterretgen_tui.engine.retrieval.lexical import MAX_TERMS, POSTINGS_BUDGET, TITLE_WEIGHT, LexicalRetriever
from iterretgen_tui.engine.retrieval.retriever import Retriever
from iterretgen_tui.session import Session

DEPTH = 100  # what each ranking is read to: retrieval_rows asks for recall@100
TOKENIZERS = {"plain": "unicode61 remove_diacritics 2", "porter": "porter unicode61 remove_diacritics 2"}
TITLE_WEIGHTS = (1.0, 2.0, 5.0)
RRF_K = 60


class Ranked:
    """Saved rankings answered as a retriever would: the first k of each."""

    def __init__(self, rankings: dict[str, list]) -> None:
        self.rankings = rankings

    def retrieve_many(self, queries, k):
        return [self.rankings[q][:k] for q in queries]


def rank(retriever, texts: list[str]) -> dict[str, list]:
    return dict(zip(texts, retriever.retrieve_many(texts, DEPTH)))


class WeightedRRF:
    """Not shipped: reciprocal rank fusion with the keyword ranking's votes weighted."""

    def __init__(self, dense, lexical, *, depth: int, lexical_weight: float) -> None:
        self.dense, self.lexical, self.depth, self.lexical_weight = dense, lexical, depth, lexical_weight

    def retrieve_many(self, queries, k):
        depth = max(k, self.depth)
        out = []
        for d, lex in zip(self.dense.retrieve_many(queries, depth), self.lexical.retrieve_many(queries, depth)):
            fused, passages = {}, {}
            for weight, ranking in ((1.0, d), (self.lexical_weight, lex)):
                for r, p in enumerate(ranking):
                    fused[p.id] = fused.get(p.id, 0.0) + weight / (RRF_K + r + 1)
                    passages.setdefault(p.id, p)
            out.append([passages[i] for i in sorted(passages, key=lambda i: -fused[i])[:k]])
        return out


def z_scores(ranking) -> dict[int, float]:
    """Not shipped: scores in standard deviations of the ranking read, its worst at 0."""
    scores = [p.score for p in ranking]
    low, spread = (min(scores), statistics.pstdev(scores)) if scores else (0.0, 0.0)
    return {p.id: (p.score - low) / spread if spread > 0 else 1.0 for p in ranking}


def three_sigma(ranking) -> dict[int, float]:
    """Not shipped: distribution-based normalisation, the ranking's mean -/+ 3 standard
    deviations mapped to 0 and 1 (Qdrant's "DBSF")."""
    scores = [p.score for p in ranking]
    mean, spread = (statistics.fmean(scores), statistics.pstdev(scores)) if scores else (0.0, 0.0)
    if spread == 0:
        return {p.id: 1.0 for p in ranking}
    return {p.id: min(1.0, max(0.0, (p.score - mean + 3 * spread) / (6 * spread))) for p in ranking}


def scored(questions, retriever, top_k: int, base_rows: list[dict] | None) -> dict:
    rows = retrieval_rows(questions, retriever, top_k=top_k)
    result = {"mean": _mean(rows)}
    if base_rows is not None:
        result["vs_dense"] = differences(rows, base_rows)
    return result


def differences(rows: list[dict], base_rows: list[dict]) -> dict:
    return {m: paired([a[m] - b[m] for a, b in zip(rows, base_rows)]) for m in rows[0]}


def budget_effect(questions, index, dense, texts, top_k: int) -> dict:
    """The shipped fusion with the keyword retriever's postings budget as shipped, and
    scaled down by the set's size to what it drops at 100,000 passages, each against no
    budget at all (docs/performance.md, "Hybrid retrieval")."""
    passages = len(index)

    def fused(budget: int) -> hybrid.HybridRetriever:
        return hybrid.HybridRetriever(dense, Ranked(rank(LexicalRetriever(index, postings_budget=budget), texts)))

    unbounded = retrieval_rows(questions, fused(passages * MAX_TERMS), top_k=top_k)
    scaled = POSTINGS_BUDGET * passages // 100_000
    return {
        f"{name} ({budget})": scored(questions, fused(budget), top_k, unbounded)
        for name, budget in (("shipped", POSTINGS_BUDGET), ("scaled to 100,000 passages", scaled))
    }


def measure(dataset, embedder, top_k: int, say) -> dict:
    index = open_dataset_index(dataset, embedder, say)
    questions = list(dataset.questions)
    texts = [q.text for q in questions]
    dense = Ranked(rank(Retriever(embedder, index), texts))
    base = retrieval_rows(questions, dense, top_k=top_k)
    report = {"dense": {"mean": _mean(base)}}
    lexical_by = {}
    try:
        for name, tokenizer in TOKENIZERS.items():
            index_module.LEXICAL_TOKENIZER = tokenizer
            with index.lock():
                index.build_lexical()
            for weight in TITLE_WEIGHTS:
                lexical = Ranked(rank(LexicalRetriever(index, title_weight=weight), texts))
                lexical_by[name, weight] = lexical
                report[f"lexical {name} title x{weight:g}"] = scored(questions, lexical, top_k, base)
                shipped = hybrid.HybridRetriever(dense, lexical)
                report[f"hybrid (shipped fusion) {name} title x{weight:g}"] = scored(questions, shipped, top_k, base)
    finally:
        index_module.LEXICAL_TOKENIZER = TOKENIZERS["plain"]
        with index.lock():
            index.build_lexical()
    report["postings budget"] = budget_effect(questions, index, dense, texts, top_k)
    lexical = lexical_by["plain", TITLE_WEIGHT]
    no_bonus = retrieval_rows(questions, hybrid.HybridRetriever(dense, lexical, title_bonus=0.0), top_k=top_k)
    for bonus in (0.1, 0.2, 0.3):
        rows = retrieval_rows(questions, hybrid.HybridRetriever(dense, lexical, title_bonus=bonus), top_k=top_k)
        report[f"title bonus {bonus:g}"] = {
            "mean": _mean(rows),
            "vs_dense": differences(rows, base),
            "vs_no_bonus": differences(rows, no_bonus),
        }
    report["title bonus 0"] = {"mean": _mean(no_bonus), "vs_dense": differences(no_bonus, base)}
    shipped = retrieval_rows(questions, hybrid.HybridRetriever(dense, lexical), top_k=top_k)
    no_code = retrieval_rows(questions, hybrid.HybridRetriever(dense, lexical, code_bonus=0.0), top_k=top_k)
    report["code bonus 0"] = {"mean": _mean(no_code), "shipped vs none": differences(shipped, no_code)}
    for depth in (20, 50, 100):
        for weight in (0.5, 0.6, 0.7, 0.8, 0.9):
            fused = hybrid.HybridRetriever(dense, lexical, depth=depth, dense_weight=weight)
            report[f"convex dense {weight:g} depth {depth}"] = scored(questions, fused, top_k, base)
        for name, normalise in (("z-score", z_scores), ("3-sigma", three_sigma)):
            for weight in (0.5, 0.6, 0.7):
                for bonus in (0.2, 0.5):
                    fused = hybrid.HybridRetriever(
                        dense, lexical, depth=depth, dense_weight=weight, title_bonus=bonus, normalise=normalise
                    )
                    report[f"{name} dense {weight:g} title bonus {bonus:g} depth {depth}"] = scored(
                        questions, fused, top_k, base
                    )
        for weight in (1.0, 0.5, 0.3):
            fused = WeightedRRF(dense, lexical, depth=depth, lexical_weight=weight)
            report[f"rrf lexical x{weight:g} depth {depth}"] = scored(questions, fused, top_k, base)
    index.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--embed-backend", default="auto")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    session = Session(replace(Settings(), embed_backend=args.embed_backend, device="cpu"))
    session.load_embedder(say)
    report = {"embedder": session.embedder.identity, "top_k": args.top_k, "datasets": {}}
    for directory in args.datasets:
        dataset = load_dataset(directory)
        report["datasets"][dataset.name] = measure(dataset, session.embedder, args.top_k, say)
        if args.out:
            args.out.write_text(json.dumps(report, indent=2) + "\n", "utf-8")
        say(f"{dataset.name} done")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
