#!/usr/bin/env python
"""Issue 6: which retrieval for iteration 2 uses a draft best? Printed as JSON.

Iteration 2's retrieval depends only on the question and the iteration-1 draft, so the
drafts saved by one `iterretgen-chat eval DATASET --iterations 1` run score every query
mode without another LLM call. Each mode goes through the loop's own
``retrieve_with_draft``; retrieval with the question alone is iteration 1.
Usage: scripts/query_formation.py DATASET_DIR RECORDS.jsonl [--top-k 5] [--embed-backend torch]
       [--draft-source model|gold]
(use the embed backend the records were made with, so iteration 1 is comparable;
``--draft-source gold`` puts the gold answer in the draft's place, as eval's diagnostic
does: how each mode uses a perfect draft).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from statistics import fmean

from iterretgen_tui import config
from iterretgen_tui.commands.eval import open_dataset_retriever
from iterretgen_tui.engine.datasets import load_dataset
from iterretgen_tui.engine.evaluate import retrieval_scores
from iterretgen_tui.engine.iterretgen import QUERY_MODES, form_query, retrieve_with_draft
from iterretgen_tui.session import Session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("records")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--embed-backend", default="torch")
    parser.add_argument("--draft-source", choices=("model", "gold"), default="model")
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    session = Session(replace(config.load(), embed_backend=args.embed_backend, device="cpu"))
    session.load_embedder()
    retriever = open_dataset_retriever(dataset, session.embedder, say=lambda message: None)
    questions = {q.id: q for q in dataset.questions}
    with open(args.records, encoding="utf-8") as fh:
        records = [r for r in map(json.loads, fh) if r.get("id") in questions]

    scores: dict[str, list[dict]] = {"question (t=1)": []}
    scores.update({f"{mode} (t=2)": [] for mode in QUERY_MODES})
    for record in records:
        question = questions[record["id"]]
        draft = question.answers[0] if args.draft_source == "gold" else record["iterations"][0]["draft"]
        scores["question (t=1)"].append(retrieval_scores(retriever.retrieve(question.text, args.top_k), question))
        query = form_query(question.text, draft)
        for mode in QUERY_MODES:
            passages = retrieve_with_draft(question.text, query, retriever, args.top_k, mode)
            scores[f"{mode} (t=2)"].append(retrieval_scores(passages, question))
    print(json.dumps({
        "dataset": dataset.name,
        "n": len(records),
        "top_k": args.top_k,
        "draft_source": args.draft_source,
        "embedder": session.embedder.identity,
        "retrieval": {
            name: {metric: round(fmean(row[metric] for row in rows), 4) for metric in rows[0]}
            for name, rows in scores.items()
        },
    }, indent=2))


if __name__ == "__main__":
    main()
