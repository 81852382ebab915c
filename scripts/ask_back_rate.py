#!/usr/bin/env python
"""How often the chat would ask back on first questions, where it should not. Printed as JSON.

Asking back (engine/loop/ambiguity.py) is decided from the question and its first search
alone, before any draft, so it is measured over whole sets without the reader: each
question alone, its first search as the loop makes it, the rule. Per set: the questions,
how many it asks back on, and each question with its question back. For conversations,
`iterretgen-chat eval SET --search-only` measures it on every task.
Usage: scripts/ask_back_rate.py [DATASET_DIR ...] [--top-k 5]
(the real-documents questions, tests/data/realdocs-questions.jsonl, always come first)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from iterretgen_tui import config
from iterretgen_tui.commands.eval import open_dataset_retriever
from iterretgen_tui.engine.evaluation.datasets import load_dataset
from iterretgen_tui.engine.loop.ambiguity import ambiguity
from iterretgen_tui.engine.loop.conversation import Asked
from iterretgen_tui.engine.loop.queries import first_searches, search_first
from iterretgen_tui.session import Session

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def asked_back(questions: list[str], retriever, top_k: int) -> dict:
    fired = {}
    for question in questions:
        back = ambiguity(Asked(question), search_first(first_searches(question, ""), retriever, top_k)[1])
        if back:
            fired[question] = back
    return {"questions": len(questions), "asked_back": len(fired), "which": fired}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("datasets", nargs="*")
    parser.add_argument("--top-k", type=int, default=5)
    args = parser.parse_args()
    settings = config.load()
    session = Session(settings)
    session.load_models(status=lambda message: None)
    session.open_folder(DATA / "realdocs")
    items = [json.loads(line) for line in (DATA / "realdocs-questions.jsonl").read_text("utf-8").splitlines()]
    report = {"realdocs": asked_back([item["question"] for item in items], session.retriever, args.top_k)}
    for directory in args.datasets:
        dataset = load_dataset(directory)
        retriever = open_dataset_retriever(dataset, session.embedder, lambda message: None, settings.retrieval)
        report[dataset.name] = asked_back([q.text for q in dataset.questions], retriever, args.top_k)
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
