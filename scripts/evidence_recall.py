#!/usr/bin/env python
"""Issue 17: does the evidence sentence hold a gold answer? Printed as JSON.

The evidence of iteration 1 depends only on the question and the passages retrieved with
it, so it is scored over whole QA sets without the LLM: ``evidence_recall`` is the share
of questions whose evidence sentence contains a gold answer; ``answer_recall`` (a gold
answer anywhere in the top-k passages) is its ceiling. ``eval`` reports the same metric
per iteration of real runs.
Usage: scripts/evidence_recall.py DATASET_DIR [DATASET_DIR ...] [--top-k 5] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import time
from statistics import fmean

from iterretgen_tui import config
from iterretgen_tui.commands.eval import open_dataset_retriever
from iterretgen_tui.engine.evaluation import metrics
from iterretgen_tui.engine.evaluation.datasets import load_dataset
from iterretgen_tui.engine.evaluation.evaluate import retrieval_scores
from iterretgen_tui.engine.loop.evidence import choose_evidence
from iterretgen_tui.session import Session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, help="only the first N questions of each set")
    args = parser.parse_args()
    session = Session(config.load())
    session.load_embedder()
    report = {"embedder": session.embedder.identity, "top_k": args.top_k, "sets": {}}
    for directory in args.datasets:
        dataset = load_dataset(directory)
        retriever = open_dataset_retriever(dataset, session.embedder, say=lambda message: None)
        questions = dataset.questions[: args.limit]
        rows = []
        started = time.perf_counter()
        for question, passages in zip(questions, retriever.retrieve_many([q.text for q in questions], args.top_k)):
            evidence = choose_evidence(question.text, passages, session.embedder)
            rows.append(
                {
                    "evidence_recall": metrics.answer_recall([evidence.text] if evidence else [], question.answers),
                    "answer_recall": retrieval_scores(passages, question)["answer_recall"],
                }
            )
        report["sets"][dataset.name] = {
            "n": len(rows),
            **{key: round(fmean(r[key] for r in rows), 4) for key in rows[0]},
            "seconds_per_question": round((time.perf_counter() - started) / len(rows), 3),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
