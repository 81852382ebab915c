#!/usr/bin/env python
"""What of each passage the reader reads (engine/loop/compression.py), settings side by
side: per setting, prompt tokens evaluated per iteration and per question (as llama.cpp
counts them), seconds per question, seconds to the first stated answer, and the quality
figures, with the CPU. Printed as JSON.

Every question is asked once per setting before the next question, the settings' order
turning with each question, so a noisy machine weighs on all of them alike. One session:
the models load once, and every ask starts from the saved demo states alone, as a new
question in the chat does (not from the same question's prompt under the setting before).

  PYTHONPATH=.:scripts scripts/bench_reading.py --settings whole,budget:300 --sample 24
  PYTHONPATH=.:scripts scripts/bench_reading.py --dataset ../shared/data/hotpotqa-dev200 --limit 40

Without --dataset: the real-documents set (scripts/score_realdocs.py's questions and
scores: key fact, loops, right file). With --dataset: a QA set, Acc and F1 at the adaptive
stop, and each setting's paired differences from the first with their 95% intervals.
A setting is a read mode, with a token budget for "budget" (budget:300), or one for the first
iteration and one for those after it (budget:300/450).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from statistics import fmean, median

import llama_cpp
from score_realdocs import DATA, cpu_name, first_answer_seconds, first_answers, rates, score, summary, work_between

from iterretgen_tui import config
from iterretgen_tui.engine.evaluation import evaluate, metrics
from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.events import FinalAnswer, IterationStarted
from iterretgen_tui.engine.loop.options import LoopOptions
from iterretgen_tui.session import Session


def setting(text: str) -> tuple[str, dict]:
    """ "budget:300" reads 300 tokens at every iteration, "budget:300/450" 300 at the first
    and 450 at those that check it."""
    mode, _, tokens = text.partition(":")
    first, _, later = tokens.partition("/")
    budgets = {"read_tokens": int(first), "check_read_tokens": int(later or first)} if first else {}
    return text, {"read": mode, **budgets}


def asked(question: str, retriever, generator, options: LoopOptions) -> tuple[FinalAnswer, float, list[int], dict]:
    """The final answer, its seconds, the prompt tokens evaluated at each iteration (the
    question's reading and the turns after a draft count with their iteration), and what
    llama.cpp evaluated and decoded in all, with its seconds (``Work``'s fields)."""
    marks: list[int] = []
    before = generator.evaluated()
    started = time.perf_counter()
    for event in iterretgen.run(question, retriever=retriever, generator=generator, options=options):
        if isinstance(event, IterationStarted):
            marks.append(generator.evaluated().prompt_tokens)
        elif isinstance(event, FinalAnswer):
            final = event
    seconds = time.perf_counter() - started
    after = generator.evaluated()
    marks.append(after.prompt_tokens)
    return final, seconds, [b - a for a, b in zip(marks, marks[1:])], work_between(before, after)


def costs(rows: list[dict]) -> dict:
    per_iteration = [n for r in rows for n in r["evaluated"]]
    return {
        "tokens_evaluated_per_iteration_mean": round(fmean(per_iteration), 1),
        "tokens_evaluated_per_question_mean": round(fmean(sum(r["evaluated"]) for r in rows), 1),
        "tokens_evaluated_by_iteration": [
            round(fmean(r["evaluated"][t] for r in rows if len(r["evaluated"]) > t), 1)
            for t in range(max(len(r["evaluated"]) for r in rows))
        ],
        "seconds_per_question_median": round(median(r["seconds"] for r in rows), 2),
        **first_answers(rows),
        **rates(rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--settings", default="whole,budget:300", help="comma-separated, e.g. whole,budget:300,sentences"
    )
    parser.add_argument("--llm", help="chat model (default: the app's)")
    parser.add_argument("--dataset", type=Path, help="a QA set folder; default: the real-documents set")
    parser.add_argument("--sample", type=int, help="real documents: N questions spread evenly over the set")
    parser.add_argument("--limit", type=int, help="QA set: the first N questions")
    parser.add_argument("--skip", type=int, default=0, help="QA set: start after the first N questions")
    parser.add_argument("--records", type=Path, help="one JSON line per question and setting, appended as they end")
    args = parser.parse_args()
    settings = config.load({"llm": args.llm})
    chosen = dict(map(setting, args.settings.split(",")))
    session = Session(settings)
    session.load_models(status=lambda message: print(message, file=sys.stderr))
    if args.dataset:
        from iterretgen_tui.commands.eval import open_dataset_retriever
        from iterretgen_tui.engine.evaluation.datasets import load_dataset

        dataset = load_dataset(args.dataset)
        retriever = open_dataset_retriever(dataset, session.embedder, lambda m: None, settings.retrieval)
        questions = dataset.questions[args.skip : args.skip + args.limit if args.limit else None]
        items = [{"id": q.id, "question": q.text, "answers": list(q.answers)} for q in questions]
    else:
        session.open_folder(DATA / "realdocs")
        retriever = session.retriever
        items = [json.loads(line) for line in (DATA / "realdocs-questions.jsonl").read_text("utf-8").splitlines()]
        if args.sample and args.sample < len(items):
            items = [items[i * len(items) // args.sample] for i in range(args.sample)]
    session.warm_reader()
    names = list(chosen)
    rows: dict[str, list[dict]] = {name: [] for name in names}
    for k, item in enumerate(items):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            options = replace(settings.loop, **chosen[name])
            session.generator.reset()
            final, seconds, evaluated, work = asked(item["question"], retriever, session.generator, options)
            if args.dataset:
                row = {
                    "id": item["id"],
                    "acc": metrics.accuracy(final.answer, item["answers"]),
                    "f1": metrics.f1(final.answer, item["answers"]),
                    "answer": final.answer,
                    "first_answer_seconds": first_answer_seconds(final),
                }
            else:
                row = score(final, item, seconds)
            row.update(
                setting=name,
                seconds=round(seconds, 2),
                evaluated=evaluated,
                work=work,
            )
            rows[name].append(row)
            if args.records:
                with args.records.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{k + 1}/{len(items)}", file=sys.stderr)
    report = {
        "cpu": cpu_name(),
        "llama_cpp_build": llama_cpp.llama_print_system_info().decode().strip(),  # AVX-512 or AVX2 only
        "llm": session.info()["llm"],
        "set": str(args.dataset or "realdocs"),
        "n": len(items),
        "settings": {},
    }
    base = names[0]
    for name in names:
        quality = (
            {
                "acc": round(100 * fmean(r["acc"] for r in rows[name]), 1),
                "f1": round(100 * fmean(r["f1"] for r in rows[name]), 1),
            }
            if args.dataset
            else summary(rows[name])
        )
        report["settings"][name] = {**quality, **costs(rows[name])}
        if args.dataset and name != base:
            report["settings"][name][f"vs {base}"] = {
                metric: evaluate.paired([100 * (a[metric] - b[metric]) for a, b in zip(rows[name], rows[base])])
                for metric in ("acc", "f1")
            }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
