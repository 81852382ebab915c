#!/usr/bin/env python
"""What a follow-up costs, with and without the conversation read ahead: per task, the
seconds from the question to its rewrite (engine/loop/conversation.py), to the first
stated answer and to the final one, the prompt tokens llama.cpp evaluated meanwhile, and
the seconds the read-ahead took before the question. Printed as JSON, with the CPU.

Three ways: ``cold``, nothing read ahead (`ask --continue` with read_ahead off);
``read_ahead``, the conversation read ahead in this process, as the chat does while the
user reads an answer (Session.read_ahead); ``saved``, read ahead and saved to disk, then
everything in memory forgotten and taken up from the files, as `ask --continue` does after
`ask`'s read-ahead process (read_ahead.py; the files' reading counts in the question).
Each task's last turn is answered once per way after its conversation as given, the order
turning with each task, from the reader's saved demo states alone (the context emptied
first), so a noisy machine weighs on all alike; the answers should be the same.

  PYTHONPATH=.:scripts scripts/bench_follow_up.py ../shared/data/mtrag-govt-fiqa --sample 40
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import median, quantiles

import llama_cpp
from bench_common import print_report
from score_realdocs import rates, work_between

from iterretgen_tui import config
from iterretgen_tui.commands.eval import open_dataset_index
from iterretgen_tui.engine.evaluation.conversations import load_tasks
from iterretgen_tui.engine.evaluation.datasets import Dataset
from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.events import FinalAnswer, QuestionRead
from iterretgen_tui.engine.retrieval.modes import build_retriever
from iterretgen_tui.session import Session

WAYS = ("cold", "read_ahead", "saved")


def followed_up(task, session: Session, retriever, way: str) -> dict:
    """One task's last turn answered the given way, from an empty context."""
    generator = session.generator
    generator.reset()
    read_ahead = 0.0
    if way != "cold":
        started = time.perf_counter()
        session.read_ahead(task.turns, disk=way == "saved")
        read_ahead = time.perf_counter() - started
    if way == "saved":
        generator.reset()  # a new process: nothing evaluated, nothing in memory
    before = generator.evaluated()
    started = time.perf_counter()
    if way == "saved":
        session.recall_ahead(task.turns)
    rewrite = 0.0
    events = iterretgen.run(
        task.question, retriever=retriever, generator=generator, options=session.settings.loop, turns=task.turns
    )
    for event in events:
        if isinstance(event, QuestionRead):
            rewrite = time.perf_counter() - started
        elif isinstance(event, FinalAnswer):
            final = event
    return {
        "rewrite_seconds": round(rewrite, 3),
        "first_answer_seconds": final.first_answer_seconds,
        "seconds": round(time.perf_counter() - started, 3),
        "read_ahead_seconds": round(read_ahead, 3),
        "standalone": final.standalone,
        "answer": final.answer,
        "work": work_between(before, generator.evaluated()),
    }


def summary(rows: list[dict]) -> dict:
    def middle(key: str) -> float:
        return round(median(row[key] for row in rows if row[key] is not None), 2)

    rewrites = [row["rewrite_seconds"] for row in rows]
    return {
        "rewrite_seconds_median": middle("rewrite_seconds"),
        "rewrite_seconds_p90": round(quantiles(rewrites, n=10)[-1], 2) if len(rewrites) > 1 else rewrites[0],
        "first_answer_seconds_median": middle("first_answer_seconds"),
        "seconds_median": middle("seconds"),
        "prompt_tokens_median": median(row["work"]["prompt_tokens"] for row in rows),
        "read_ahead_seconds_median": middle("read_ahead_seconds"),
        **rates(rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path, help="a set with conversations.jsonl")
    parser.add_argument("--sample", type=int, help="N follow-ups spread evenly over the set")
    parser.add_argument("--llm", help="chat model (default: the app's)")
    args = parser.parse_args()
    settings = config.load({"llm": args.llm})
    session = Session(settings)
    session.load_models(status=lambda message: print(message, file=sys.stderr))
    index = open_dataset_index(Dataset(args.dataset.resolve(), ()), session.embedder, lambda message: None)
    retriever = build_retriever(settings.retrieval, session.embedder, index)
    session.warm_reader()
    tasks = [task for task in load_tasks(args.dataset) if task.turns]
    if args.sample and args.sample < len(tasks):
        tasks = [tasks[i * len(tasks) // args.sample] for i in range(args.sample)]
    rows: dict[str, list[dict]] = {way: [] for way in WAYS}
    for k, task in enumerate(tasks):
        for way in WAYS[k % 3 :] + WAYS[: k % 3]:
            rows[way].append({"id": task.id, **followed_up(task, session, retriever, way)})
        print(f"{k + 1}/{len(tasks)}", file=sys.stderr)
    cold = rows["cold"]
    print_report(
        {
            "llama_cpp_build": llama_cpp.llama_print_system_info().decode().strip(),
            "llm": session.info()["llm"],
            "set": str(args.dataset),
            "n": len(tasks),
            **{
                f"same_{what}s_as_cold": {
                    way: sum(a[key] == b[key] for a, b in zip(cold, rows[way])) for way in WAYS[1:]
                }
                for what, key in (("rewrite", "standalone"), ("answer", "answer"))
            },
            **{way: summary(rows[way]) for way in WAYS},
        }
    )


if __name__ == "__main__":
    main()
