#!/usr/bin/env python
"""The chat model's threads, printed as JSON: half the cores (the old default)
against all of them (the default while nothing is indexing), on one loaded model whose
live context is switched between the two, interleaved:

- prompt processing and decoding tokens/s, on prompts the app builds from hotpotqa
  passages (cold: the KV cache emptied first);
- seconds per question at the default settings, timed by the eval harness itself
  (``evaluate_question``: all iterations, as `eval` runs them) on the first N
  hotpotqa-dev200 questions; each question runs once per setting, in alternating order,
  with the KV cache emptied before each run so neither inherits the other's prompt; also
  the time from a question to the first token of its iteration 1.

``--corpus N`` retrieves from the first N corpus documents plus the questions' gold ones
instead of the whole corpus, for a machine too slow to embed it in the time there is.
Three settings: "half" and "all" fixed, and "auto", the app's own (all the cores that other
runnable tasks leave free, engine/cores.py).
Usage: scripts/bench_threads.py [--questions 20] [--repeats 5] [--token-rates-only] [--corpus N] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_common import print_report

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa-dev200"


class FirstToken:
    """Wraps the generator: when did the first token of the first prompt after ``start`` arrive."""

    def __init__(self, generator) -> None:
        self.generator = generator
        self.started = self.first = None

    def __getattr__(self, name):
        return getattr(self.generator, name)

    def start(self) -> None:
        self.started, self.first = time.perf_counter(), None

    def stream(self, messages, **kwargs):
        for piece in self.generator.stream(messages, **kwargs):
            if self.first is None:
                self.first = time.perf_counter() - self.started
            yield piece


def token_rates(generator, messages, prompt_tokens: int, decode_tokens: int) -> tuple[float, float]:
    """(prompt tokens/s, decode tokens/s) of one cold run."""
    generator.reset()
    started = time.perf_counter()
    stamps = []
    for _ in generator.stream(messages, max_tokens=decode_tokens, cancel=threading.Event()):
        stamps.append(time.perf_counter())
    prompt = prompt_tokens / (stamps[0] - started)
    decode = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    return prompt, decode


def subset_retriever(dataset, questions, first: int, embedder):
    from iterretgen_tui.engine.indexing.index import PassageIndex
    from iterretgen_tui.engine.indexing.indexer import sync_corpus
    from iterretgen_tui.engine.retrieval.retriever import Retriever

    gold = {doc for q in questions for doc in q.relevant}
    docs = [d for n, d in enumerate(dataset.corpus()) if n < first or d[0] in gold]
    index = PassageIndex.open(
        Path(tempfile.mkdtemp(prefix="bench-threads-index-")), embedder_identity=embedder.identity, dim=embedder.dim
    )
    sync_corpus(index, docs, embedder)
    return Retriever(embedder, index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATA)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5, help="cold prompts per setting for the token rates")
    parser.add_argument("--token-rates-only", action="store_true", help="no eval questions")
    parser.add_argument("--corpus", type=int, help="only the first N documents and the gold ones")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("ITERRETGEN_HOME", tempfile.mkdtemp(prefix="bench-threads-"))

    from iterretgen_tui.commands.eval import open_dataset_retriever
    from iterretgen_tui.config import Settings
    from iterretgen_tui.engine.cores import half_the_cores
    from iterretgen_tui.engine.evaluation import evaluate
    from iterretgen_tui.engine.evaluation.datasets import load_dataset
    from iterretgen_tui.engine.loop.prompts import build_prompt
    from iterretgen_tui.engine.machine import usable_cores
    from iterretgen_tui.session import Session

    settings = Settings(device="cpu")
    session = Session(settings)
    session.load_models(status=lambda message: print(message, file=sys.stderr))
    dataset = load_dataset(args.dataset)
    questions = dataset.questions[: args.questions]
    if args.corpus:
        retriever = subset_retriever(dataset, questions, args.corpus, session.embedder)
    else:
        retriever = open_dataset_retriever(dataset, session.embedder, lambda message: print(message, file=sys.stderr))
    generator = session.generator
    generator.prefixes = []  # cold means cold: no saved demos restored (engine/loop/prefix_states.py)
    share = generator.cores
    # Fixed counts, and "auto": what the app does (all the cores other programs leave free).
    modes = {"half": half_the_cores(), "all": usable_cores(), "auto": None}

    def use(mode: str) -> None:
        generator.cores = share if modes[mode] is None else None
        if modes[mode] is not None:
            generator.set_threads(modes[mode])

    rates = {mode: {"prompt": [], "decode": []} for mode in modes}
    for n, question in enumerate(questions[: args.repeats]):
        passages = retriever.retrieve(question.text, settings.top_k)
        prompt = build_prompt(
            question.text, passages, count_tokens=generator.count_tokens, budget=generator.n_ctx - settings.max_tokens
        )
        for mode in list(modes) if n % 2 == 0 else list(modes)[::-1]:
            use(mode)
            prompt_rate, decode_rate = token_rates(generator, prompt.messages, prompt.tokens, 64)
            rates[mode]["prompt"].append(prompt_rate)
            rates[mode]["decode"].append(decode_rate)
            print(
                f"{mode} ({generator.n_threads} threads): prompt {prompt_rate:.1f} tokens/s, "
                f"decode {decode_rate:.1f} tokens/s",
                file=sys.stderr,
            )

    if args.token_rates_only:
        questions = []
    timed = FirstToken(generator)
    seconds = {mode: [] for mode in modes}
    first_token = {mode: [] for mode in modes}
    for n, question in enumerate(questions):
        for mode in list(modes) if n % 2 == 0 else list(modes)[::-1]:
            use(mode)
            generator.reset()
            timed.start()
            record = evaluate.evaluate_question(
                question,
                retriever=retriever,
                generator=timed,
                options=settings.loop,
            )
            seconds[mode].append(record["seconds"])
            first_token[mode].append(timed.first)
        print(
            f"question {n + 1}/{len(questions)}: " + ", ".join(f"{mode} {seconds[mode][-1]:.1f} s" for mode in modes),
            file=sys.stderr,
        )

    med = statistics.median
    report = {
        "llm": generator.name,
        "threads": modes,
        "dataset": dataset.name,
        "questions": len(questions),
        "corpus_documents": len(retriever.index) if args.corpus else "all",
        "settings": {
            "iterations": settings.iterations,
            "top_k": settings.top_k,
            "max_tokens": settings.max_tokens,
            "keep_passages": settings.keep_passages,
        },
        "modes": {},
    }
    for mode in modes:
        report["modes"][mode] = {
            "prompt_tokens_per_s": [round(r, 1) for r in rates[mode]["prompt"]],
            "decode_tokens_per_s": [round(r, 1) for r in rates[mode]["decode"]],
            "prompt_tokens_per_s_median": round(med(rates[mode]["prompt"]), 1),
            "decode_tokens_per_s_median": round(med(rates[mode]["decode"]), 1),
        }
        if questions:
            report["modes"][mode].update(
                seconds_per_question_median=round(med(seconds[mode]), 2),
                seconds_per_question_mean=round(statistics.fmean(seconds[mode]), 2),
                first_token_of_iteration_1_s_median=round(med(first_token[mode]), 3),
                seconds_per_question=[round(s, 2) for s in seconds[mode]],
            )
    half = report["modes"]["half"]
    for mode in ("all", "auto"):
        report[f"{mode}_over_half"] = {
            key: round(report["modes"][mode][key] / value, 3) for key, value in half.items() if key.endswith("median")
        }
    print_report(report, args.out)


if __name__ == "__main__":
    main()
