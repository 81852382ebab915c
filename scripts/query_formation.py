#!/usr/bin/env python
"""Which retrieval for iteration 2 uses a draft best? Printed as JSON.

Iteration 2's retrieval depends only on the question, its own top passage and the
iteration-1 draft, so the drafts saved by one `iterretgen-chat eval DATASET` run score
every query mode without another LLM call. The shipped modes go through the loop's own ``searches`` and ``search_again``;
the candidates below were tried and not shipped (their figures are in the issue's note).
Retrieval with the question alone is iteration 1. Each shipped mode is scored twice at
t=2: its search alone, and what the loop reads with ``keep_passages`` (the default):
iteration 1's passages and the search's best k not among them (``search_again``; the
prompt budget, which may trim, is not applied). "question, top 2k" reads as many passages
by the question alone: whether iteration 2 adds more than a wider first search would.
Usage: scripts/query_formation.py DATASET_DIR RECORDS.jsonl [--top-k 5]
       [--embed-backend auto] [--draft-source model|gold] [--retrieval dense|hybrid|lexical]
(use the embed backend the records were made with, so iteration 1 is comparable;
``--draft-source gold`` puts the gold answer in the draft's place, as eval's diagnostic
does: how each mode uses a perfect draft; ``--retrieval`` is the ranking every search
reads, as the setting of that name; the unshipped candidates need dense's embedder and
run with it alone).

And what a looping or empty draft should be replaced by (records of drafts made
without the loop guard): ``trimmed`` cuts each draft before its repetition;
``evidence`` replaces a looping or empty draft by the evidence sentence of iteration 1's
passages; ``trimmed-or-evidence`` (what the loop does) trims, and falls back to the
evidence sentence only when nothing is left.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from statistics import fmean

import numpy as np

from iterretgen_tui import config
from iterretgen_tui.commands.eval import open_dataset_retriever
from iterretgen_tui.engine.evaluation.datasets import load_dataset
from iterretgen_tui.engine.evaluation.evaluate import paired, retrieval_scores
from iterretgen_tui.engine.loop.evidence import choose_evidence
from iterretgen_tui.engine.loop.options import QUERY_MODES
from iterretgen_tui.engine.loop.prompts import extract_answer
from iterretgen_tui.engine.loop.queries import FUSION_DEPTH, form_query, merge_rankings, search_again, searches
from iterretgen_tui.engine.loop.repetition import loop_start, trim_loop
from iterretgen_tui.engine.retrieval.fusion import fuse, interleave
from iterretgen_tui.engine.retrieval.modes import RETRIEVAL_MODES
from iterretgen_tui.session import Session


def weighted_fusion(question, draft, retriever, k):
    """Reciprocal rank fusion with the question's ranking counted twice."""
    by_question, by_draft = retriever.retrieve_many([question, form_query(question, draft)], FUSION_DEPTH)
    return fuse([by_question, by_question, by_draft], k)


def answer_only(question, draft, retriever, k):
    """Only the draft's extracted answer before the question."""
    return retriever.retrieve(form_query(question, extract_answer(draft)), k)


def embedding_sum(question, draft, retriever, k):
    """One query vector: the normalised sum of q's and y || q's embeddings."""
    vectors = retriever.embedder.embed_queries([question, form_query(question, draft)])
    combined = vectors.sum(axis=0)
    combined /= np.linalg.norm(combined)
    return retriever.index.search(combined[None, :].astype(np.float32), k)[0]


def anchored(question, draft, retriever, k):
    """The question's top 3, then the draft query's best passages not among them."""
    by_question, by_draft = retriever.retrieve_many([question, form_query(question, draft)], k)
    kept = by_question[:3]
    seen = {p.id for p in kept}
    return (kept + [p for p in by_draft if p.id not in seen])[:k]


def top_passage_feedback(question, draft, retriever, k):
    """No draft: the question's ranking in turn with that of its top passage's text || q
    (pseudo-relevance feedback: the bridge entity of a two-hop question is often in it)."""
    by_question = retriever.retrieve(question, k)
    return interleave([by_question, retriever.retrieve(form_query(question, by_question[0].text), k)], k)


def draft_and_top_passage(question, draft, retriever, k):
    """The question's ranking in turn with that of y || top passage || q."""
    by_question = retriever.retrieve(question, k)
    return interleave([by_question, retriever.retrieve(form_query(question, f"{draft}\n{by_question[0].text}"), k)], k)


def two_passages_feedback(question, draft, retriever, k):
    """The question's ranking in turn with those of its top two passages, each || q."""
    by_question = retriever.retrieve(question, k)
    queries = [form_query(question, p.text) for p in by_question[:2]]
    return interleave([by_question, *retriever.retrieve_many(queries, k)], k)


def passage_neighbours(question, draft, retriever, k):
    """No draft: the question's ranking in turn with its top two passages' own rankings."""
    by_question = retriever.retrieve(question, k)
    return interleave([by_question, *retriever.retrieve_many([p.text for p in by_question[:2]], k)], k)


DRAFT_SOURCES = ("model", "gold", "trimmed", "evidence", "trimmed-or-evidence")


def draft_from(source: str, draft: str, question, first, embedder) -> str:
    """The text iteration 2's query is formed from, per ``--draft-source``."""
    if source == "gold":
        return question.answers[0]
    if source == "model":
        return draft
    if source == "trimmed":
        return trim_loop(draft)
    evidence = choose_evidence(question.text, first, embedder)
    fallback = evidence.text if evidence else ""
    if source == "evidence":
        return fallback if loop_start(draft) is not None or not draft.strip() else draft
    return trim_loop(draft).strip() or fallback


CANDIDATES = {
    "top passage || q, interleaved (not shipped)": top_passage_feedback,
    "top-2 passage neighbours, interleaved (not shipped)": passage_neighbours,
    "y || top passage || q, interleaved (not shipped)": draft_and_top_passage,
    "top-2 passages || q, interleaved (not shipped)": two_passages_feedback,
    "fusion 2:1 (not shipped)": weighted_fusion,
    "answer || q (not shipped)": answer_only,
    "embedding sum (not shipped)": embedding_sum,
    "question top 3 + draft (not shipped)": anchored,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("records")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--embed-backend", default="auto")
    parser.add_argument("--draft-source", choices=DRAFT_SOURCES, default="model")
    parser.add_argument("--retrieval", choices=RETRIEVAL_MODES, default="dense")
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    session = Session(replace(config.load(), embed_backend=args.embed_backend, device="cpu"))
    session.load_embedder()
    retriever = open_dataset_retriever(dataset, session.embedder, lambda message: None, args.retrieval)
    candidates = CANDIDATES if args.retrieval == "dense" else {}
    questions = {q.id: q for q in dataset.questions}
    with open(args.records, encoding="utf-8") as fh:
        records = [r for r in map(json.loads, fh) if r.get("id") in questions]

    base = "question (t=1)"
    scores: dict[str, list[dict]] = {base: [], f"question, top {2 * args.top_k} (t=1)": []}
    looping = 0
    for record in records:
        question = questions[record["id"]]
        first = retriever.retrieve(question.text, args.top_k)
        model_draft = record["iterations"][0]["draft"]
        looping += loop_start(model_draft) is not None
        draft = draft_from(args.draft_source, model_draft, question, first, session.embedder)
        scores[base].append(retrieval_scores(first, question))
        wider = retriever.retrieve(question.text, 2 * args.top_k)  # as many passages as t=2 reads
        scores[f"question, top {2 * args.top_k} (t=1)"].append(retrieval_scores(wider, question))
        query = form_query(question.text, draft)
        for mode in QUERY_MODES:
            named = searches(question.text, query, mode, first[0])
            again = search_again(named, retriever, args.top_k, mode, first, skip_read=True)
            alone = merge_rankings(again.rankings, args.top_k, mode)  # the searches' own rankings, unskipped
            scores.setdefault(f"{mode} (t=2, search alone)", []).append(retrieval_scores(alone, question))
            read = first + again.passages
            scores.setdefault(f"{mode} (t=2, kept + new)", []).append(retrieval_scores(read, question))
        for name, retrieve in candidates.items():
            passages = retrieve(question.text, draft, retriever, args.top_k)
            scores.setdefault(name, []).append(retrieval_scores(passages, question))
    print(
        json.dumps(
            {
                "dataset": dataset.name,
                "n": len(records),
                "looping_drafts": looping,
                "top_k": args.top_k,
                "draft_source": args.draft_source,
                "retrieval_setting": args.retrieval,
                "embedder": session.embedder.identity,
                "retrieval": {
                    name: {metric: round(fmean(row[metric] for row in rows), 4) for metric in rows[0]}
                    for name, rows in scores.items()
                },
                f"differences from {base}": {
                    name: {
                        metric: paired([a[metric] - b[metric] for a, b in zip(rows, scores[base])])
                        for metric in rows[0]
                    }
                    for name, rows in scores.items()
                    if name != base
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
