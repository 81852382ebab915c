#!/usr/bin/env python
"""The served reader against the in-process one, printed as JSON with the CPU it ran on.

One GGUF, loaded here (LlamaGenerator) and served on localhost by llama-cpp-python's
server (ServedGenerator over `python -m llama_cpp.server`), both with the same threads for
the prompt and decoding and no saved demo states. Iteration-1 prompts of questions of the
real-documents set (tests/data/realdocs, retrieved through the app's session) are drafted
greedily by each, in alternating order; each keeps its previous prompt evaluated, as in the
app. Reported: seconds to the first piece and per generation (median each), the ratio
served / in-process, and whether the greedy texts were identical.

Usage:
  PYTHONPATH=.:scripts scripts/bench_served.py --llm qwen2.5-coder-1.5b-instruct --n 10
  PYTHONPATH=.:scripts scripts/bench_served.py --llm smollm2-135m --n 2 --max-tokens 32
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from bench_common import print_report

from tests.llama_server import llama_cpp_server

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def questions(args) -> list[tuple[str, str, str, list]]:
    """(id, question, kind, top-k passages) of ``args.n`` questions spread over the set,
    retrieved as the app's first iteration does."""
    from iterretgen_tui import config
    from iterretgen_tui.session import Session

    items = [json.loads(line) for line in (DATA / "realdocs-questions.jsonl").read_text("utf-8").splitlines()]
    items = [items[i * len(items) // args.n] for i in range(args.n)]
    session = Session(config.load({"device": "cpu"}))
    session.load_embedder(lambda message: print(message, file=sys.stderr))
    session.open_folder(DATA / "realdocs")
    return [
        (item["id"], item["question"], item["kind"], session.retriever.retrieve(item["question"], args.top_k))
        for item in items
    ]


def draft(generator, messages: list[dict], max_tokens: int) -> tuple[str, float, float]:
    """The greedy draft; seconds to its first piece and to its end."""
    started, first, pieces = time.perf_counter(), None, []
    for piece in generator.stream(messages, max_tokens=max_tokens, cancel=threading.Event()):
        first = first or time.perf_counter() - started
        pieces.append(piece)
    return "".join(pieces), first or 0.0, time.perf_counter() - started


def main() -> None:
    from iterretgen_tui import models
    from iterretgen_tui.engine.loop.generator import LlamaGenerator
    from iterretgen_tui.engine.loop.llama_load import amx_built_in
    from iterretgen_tui.engine.loop.options import LoopOptions
    from iterretgen_tui.engine.loop.prompts import build_prompt
    from iterretgen_tui.engine.loop.served import ServedGenerator

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", default=models.DEFAULT_LLM, help="catalogue name, pulled name or GGUF path")
    parser.add_argument("--n", type=int, default=10, help="questions of the real-documents set")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="prompt and decoding threads, both")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--top-k", type=int, default=LoopOptions.top_k)
    parser.add_argument("--max-tokens", type=int, default=LoopOptions.max_tokens)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()

    gguf = models.resolve_llm(args.llm)
    asked = questions(args)
    here = LlamaGenerator(gguf, n_ctx=args.n_ctx, device="cpu", n_threads=args.threads)
    with llama_cpp_server(gguf, n_ctx=args.n_ctx, threads=args.threads) as url:
        there = ServedGenerator(url, str(gguf), n_ctx=args.n_ctx)
        readers = {"in_process": here, "served": there}
        warm_up = [{"role": "user", "content": "Say hello."}]
        for reader in readers.values():  # the weights paged in, the first request's setup paid
            draft(reader, warm_up, 4)
        rows = []
        for n, (qid, question, kind, passages) in enumerate(asked):
            prompt = build_prompt(
                question, passages, count_tokens=here.count_tokens, budget=args.n_ctx - args.max_tokens, kind=kind
            )
            row = {"id": qid, "prompt_tokens": prompt.tokens}
            for name in list(readers) if n % 2 == 0 else list(readers)[::-1]:
                text, first, total = draft(readers[name], prompt.messages, args.max_tokens)
                row[name] = {"first_piece": round(first, 3), "seconds": round(total, 3), "text": text}
            row["identical"] = row["served"]["text"] == row["in_process"]["text"]
            rows.append(row)
            print(f"{qid}: {json.dumps({k: v for k, v in row.items() if k != 'id'})[:200]}", file=sys.stderr)

    def median(name: str, key: str) -> float:
        return round(statistics.median(row[name][key] for row in rows), 3)

    report = {
        "llm": gguf.name,
        "threads": args.threads,
        "max_tokens": args.max_tokens,
        "questions": len(rows),
        # llama.cpp's AMX kernels: off here where built in (engine/loop/llama_load.py), on in the server.
        "amx_built_in": amx_built_in(),
        "median_seconds": {name: median(name, "seconds") for name in ("in_process", "served")},
        "median_first_piece": {name: median(name, "first_piece") for name in ("in_process", "served")},
        "identical": all(row["identical"] for row in rows),
        "differing": [row["id"] for row in rows if not row["identical"]],
        "rows": rows,
    }
    report["served_over_in_process"] = round(
        report["median_seconds"]["served"] / report["median_seconds"]["in_process"], 3
    )
    print_report(report, args.out)


if __name__ == "__main__":
    main()
