#!/usr/bin/env python
"""Generation benchmarks, printed as JSON:

- prefix caching: time to first token of an iteration whose prompt shares the demo
  prefix with the previous call (warm) against the same prompt evaluated from scratch
  (cold), at equal prompt length; goal warm <= 0.6x cold;
- token rate through the engine loop against raw llama-cpp-python on the same prompt.

Prompts are built from real passages (hotpotqa-dev200) with the app's own prompt code.
Usage: scripts/bench_generation.py [--llm NAME_OR_PATH] [--repeats 5] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path

from bench_common import print_report

from iterretgen_tui import models
from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.events import Token
from iterretgen_tui.engine.loop.generator import LlamaGenerator
from iterretgen_tui.engine.loop.options import LoopOptions
from iterretgen_tui.engine.loop.prompts import build_prompt
from iterretgen_tui.engine.passages import Passage

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa-dev200"


def load_questions(n: int) -> list[tuple[str, list[Passage]]]:
    corpus = {}
    with open(DATA / "corpus.jsonl") as fh:
        for i, line in enumerate(fh):
            doc = json.loads(line)
            corpus[doc["_id"]] = Passage(i, doc["text"], doc["title"], doc["_id"])
    out = []
    with open(DATA / "queries.jsonl") as fh:
        for line in list(fh)[:n]:
            q = json.loads(line)
            out.append((q["text"], [corpus[d] for d in q["gold_doc_ids"]]))
    return out


def first_token_seconds(gen: LlamaGenerator, messages) -> float:
    started = time.perf_counter()
    for _ in gen.stream(messages, max_tokens=1, cancel=threading.Event()):
        break
    return time.perf_counter() - started


def token_rate(stream) -> float:
    stamps = [time.perf_counter() for _ in stream]
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0


class FixedRetriever:
    embedder = None  # measuring generation only: no evidence sentence is scored

    def __init__(self, passages):
        self.passages = passages

    def retrieve(self, query, k):
        return self.passages[:k]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--llm", default=models.EMBEDDED_LLM)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    gen = LlamaGenerator(models.resolve_llm(args.llm), n_ctx=4096, device=args.device, n_threads=args.threads)
    questions = load_questions(args.repeats + 1)
    prompts = [
        build_prompt(q, passages, count_tokens=gen.count_tokens, budget=gen.n_ctx - 256) for q, passages in questions
    ]
    cold, warm, lengths = [], [], []
    for previous, prompt in zip(prompts, prompts[1:]):
        gen.reset()
        cold.append(first_token_seconds(gen, prompt.messages))
        gen.reset()
        first_token_seconds(gen, previous.messages)  # leaves the shared demo prefix evaluated
        warm.append(first_token_seconds(gen, prompt.messages))
        lengths.append(prompt.tokens)

    raw_rates, loop_rates = [], []
    question, passages = questions[0]
    prompt = prompts[0]
    for _ in range(args.repeats):
        gen.reset()
        raw = gen._llm.create_chat_completion(
            messages=prompt.messages, max_tokens=128, temperature=0.0, top_k=1, stream=True
        )
        raw_rates.append(token_rate(c for c in raw if c["choices"][0]["delta"].get("content")))
        gen.reset()
        events = iterretgen.run(
            question,
            retriever=FixedRetriever(passages),
            generator=gen,
            options=LoopOptions(iterations=1, top_k=len(passages), max_tokens=128),
        )
        loop_rates.append(token_rate(e for e in events if isinstance(e, Token)))

    med = statistics.median
    print_report(
        {
            "llm": gen.name,
            "threads": gen.n_threads,
            "prompt_tokens_median": med(lengths),
            "ttft_cold_s_median": round(med(cold), 4),
            "ttft_warm_prefix_s_median": round(med(warm), 4),
            "ttft_warm_over_cold": round(med(warm) / med(cold), 3),
            "raw_tokens_per_s_median": round(med(raw_rates), 1),
            "loop_tokens_per_s_median": round(med(loop_rates), 1),
            "loop_over_raw": round(med(loop_rates) / med(raw_rates), 3),
            "repeats": args.repeats,
        }
    )


if __name__ == "__main__":
    main()
