#!/usr/bin/env python
"""Does the evidence sentence hold a gold answer? Printed as JSON.

The evidence of iteration 1 depends only on the question, the passages retrieved with
it and the answer the model stated, so it is scored over whole QA sets without the LLM:
``evidence_recall`` is the share of questions whose evidence sentence contains a gold
answer, chosen without an answer; ``answer_recall`` (a gold answer anywhere in the top-k
passages) is its ceiling. With ``--records`` (an ``eval`` run's .jsonl per set), the
questions it holds are also scored with iteration 1's stated answer, as the loop
chooses (``evidence_recall_with_answer``, beside ``evidence_recall`` on the same
questions). ``eval`` reports the metric per iteration of real runs.
Usage: scripts/evidence_recall.py DATASET_DIR [DATASET_DIR ...] [--top-k 5] [--limit N]
       [--records RECORDS.jsonl ...]
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
    parser.add_argument("--records", nargs="*", default=[], help="eval records (.jsonl): their stated answers")
    args = parser.parse_args()
    stated = stated_answers(args.records)
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
            row = {
                "evidence_recall": recall(question, passages, session.embedder),
                "answer_recall": retrieval_scores(passages, question)["answer_recall"],
            }
            if (dataset.name, question.id) in stated:
                answer = stated[(dataset.name, question.id)]
                row["with_answer"] = recall(question, passages, session.embedder, answer)
            rows.append(row)
        seconds = (time.perf_counter() - started) / len(rows)
        report["sets"][dataset.name] = {
            "n": len(rows),
            **{key: round(fmean(r[key] for r in rows), 4) for key in ("evidence_recall", "answer_recall")},
            "seconds_per_question": round(seconds, 3),
        }
        paired = [r for r in rows if "with_answer" in r]
        if paired:
            report["sets"][dataset.name]["records"] = {
                "n": len(paired),
                "evidence_recall": round(fmean(r["evidence_recall"] for r in paired), 4),
                "evidence_recall_with_answer": round(fmean(r["with_answer"] for r in paired), 4),
            }
    print(json.dumps(report, indent=2))


def recall(question, passages, embedder, answer: str = "") -> float:
    evidence = choose_evidence(question.text, passages, embedder, answer)
    return metrics.answer_recall([evidence.text] if evidence else [], question.answers)


def stated_answers(paths) -> dict[tuple[str, str], str]:
    """(set, question id) -> the answer iteration 1 stated ("" when it stated none)."""
    stated = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            lines = [json.loads(line) for line in fh]
        name = lines[0]["config"]["dataset"]  # the first line is the run's settings
        for record in lines[1:]:
            first = record["iterations"][0]
            stated[(name, record["id"])] = first["answer"] if first["stated"] else ""
    return stated


if __name__ == "__main__":
    main()
