#!/usr/bin/env python
"""What a follow-up's rewrite costs (engine/loop/conversation.py), with and without the
conversation read ahead: per task, the seconds from the question to its rewrite, the
prompt tokens llama.cpp evaluated meanwhile, and the seconds the read-ahead took before
the question (the chat reads ahead while the user reads an answer; `ask --continue`
starts a new process and cannot). Printed as JSON, with the CPU.

Each task is rewritten once per way, the order turning with each task, from the reader's
saved demo state alone (the context emptied first), so a noisy machine weighs on both
alike; the two rewrites must be the same text.

  PYTHONPATH=.:scripts scripts/bench_rewrite.py ../shared/data/mtrag-govt-fiqa --sample 60
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from statistics import median, quantiles

import llama_cpp
from bench_common import print_report
from score_realdocs import rates, work_between

from iterretgen_tui import config
from iterretgen_tui.engine.evaluation.conversations import load_tasks
from iterretgen_tui.engine.loop.conversation import next_rewrite, read_question
from iterretgen_tui.session import Session

WAYS = ("cold", "read_ahead")


def rewritten(task, generator, way: str) -> dict:
    """One task's rewrite the given way, from an empty context."""
    generator.reset()
    read_ahead = 0.0
    if way == "read_ahead":
        started = time.perf_counter()
        generator.prefill(next_rewrite(task.turns))
        read_ahead = time.perf_counter() - started
    before = generator.evaluated()
    started = time.perf_counter()
    asked = read_question(task.question, task.turns, generator, threading.Event())
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 3),
        "read_ahead_seconds": round(read_ahead, 3),
        "standalone": asked.standalone,
        "work": work_between(before, generator.evaluated()),
    }


def summary(rows: list[dict]) -> dict:
    seconds = [row["seconds"] for row in rows]
    return {
        "seconds_median": round(median(seconds), 2),
        "seconds_p90": round(quantiles(seconds, n=10)[-1], 2) if len(seconds) > 1 else seconds[0],
        "prompt_tokens_median": median(row["work"]["prompt_tokens"] for row in rows),
        "decoded_median": median(row["work"]["decoded"] for row in rows),
        "read_ahead_seconds_median": round(median(row["read_ahead_seconds"] for row in rows), 2),
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
    session.warm_reader()
    tasks = [task for task in load_tasks(args.dataset) if task.turns]
    if args.sample and args.sample < len(tasks):
        tasks = [tasks[i * len(tasks) // args.sample] for i in range(args.sample)]
    rows: dict[str, list[dict]] = {way: [] for way in WAYS}
    for k, task in enumerate(tasks):
        for way in WAYS[k % 2 :] + WAYS[: k % 2]:
            rows[way].append({"id": task.id, **rewritten(task, session.generator, way)})
        print(f"{k + 1}/{len(tasks)}", file=sys.stderr)
    print_report(
        {
            "llama_cpp_build": llama_cpp.llama_print_system_info().decode().strip(),
            "llm": session.info()["llm"],
            "set": str(args.dataset),
            "n": len(tasks),
            "same_rewrites": sum(
                cold["standalone"] == ahead["standalone"] for cold, ahead in zip(rows["cold"], rows["read_ahead"])
            ),
            **{way: summary(rows[way]) for way in WAYS},
        }
    )


if __name__ == "__main__":
    main()
