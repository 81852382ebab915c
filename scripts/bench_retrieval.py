#!/usr/bin/env python
"""Retrieval benchmark (issue 8), printed as JSON:

- end to end at ``--passages`` (100,000): a real ``PassageIndex`` (SQLite + FAISS) of
  synthetic vectors (scripts/synthetic_index.py), real scifact questions encoded one at
  a time by each embedding backend, then ``index.search`` for the top 5 passages with
  their texts: p50/p95 of encode, search and both (goal: p50 < 25 ms). Backends run
  interleaved per question, so each sees the same machine load.
- ANN at ``--ann-vectors`` (1,000,000): exact inner-product search (the naive path) against
  the IVF index ``engine/index.py`` builds above ``ANN_THRESHOLD``, one query at a time,
  recall@10 of IVF against exact search and the latency ratio, per ``nprobe``
  (goal: recall@10 >= 0.95 at >= 10x lower latency).

Usage: scripts/bench_retrieval.py [--passages 100000] [--ann-vectors 1000000] [--queries 200] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from synthetic_index import SCIFACT, fill_index, realish_vectors, seed_texts


def percentiles(seconds: list[float]) -> dict:
    ms = np.array(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - started


def end_to_end(embedders: dict, seeds: np.ndarray, questions: list[str], n: int, home: Path) -> dict:
    from iterretgen_tui.engine.index import PassageIndex

    started = time.perf_counter()
    any_embedder = next(iter(embedders.values()))
    index = PassageIndex.open(home / "index", embedder_identity="bench", dim=any_embedder.dim)
    fill_index(index, realish_vectors(seeds, n))
    build_seconds = time.perf_counter() - started
    times = {name: {"encode": [], "search": [], "total": []} for name in embedders}
    for question in questions:
        for name, embedder in embedders.items():
            vector, encode = timed(embedder.embed_queries, [question])
            found, search = timed(index.search, vector, 5)
            assert len(found[0]) == 5
            for part, seconds in (("encode", encode), ("search", search), ("total", encode + search)):
                times[name][part].append(seconds)
    index.close()
    return {
        "passages": n,
        "build_seconds": round(build_seconds, 1),
        "backends": {name: {part: percentiles(s) for part, s in parts.items()} for name, parts in times.items()},
        "goal_p50_ms": 25,
    }


def ann(seeds: np.ndarray, queries: np.ndarray, n: int, nprobes: list[int]) -> dict:
    import faiss

    from iterretgen_tui.engine import index as index_module

    vectors = realish_vectors(seeds, n, seed=1)
    ids = np.arange(n, dtype=np.int64) * 3 + 7  # explicit, non-contiguous ids, as passage ids are
    exact = faiss.IndexIDMap2(faiss.IndexFlatIP(vectors.shape[1]))
    exact.add_with_ids(vectors, ids)
    ivf, build = timed(index_module.build_vectors, vectors, ids)
    del vectors

    def run(index) -> tuple[np.ndarray, list[float]]:
        rows, seconds = [], []
        for q in queries:
            (_, found), t = timed(index.search, q[None, :], 10)
            rows.append(found[0])
            seconds.append(t)
        return np.array(rows), seconds

    truth, _ = run(exact)  # warm-up pass that also gives the exact answers
    result = {"vectors": n, "dim": int(queries.shape[1]), "lists": int(ivf.nlist), "ivf_build_seconds": round(build, 1),
              "kind_chosen": type(ivf).__name__, "default_nprobe": index_module.NPROBE, "nprobe": {}}
    for nprobe in nprobes:
        ivf.nprobe = nprobe
        exact_seconds, ivf_seconds = [], []
        for _ in range(3):  # interleaved repeats: exact and IVF see the same load
            exact_seconds += run(exact)[1]
            found, seconds = run(ivf)
            ivf_seconds += seconds
        recall = statistics.fmean(len(set(a) & set(b)) / 10 for a, b in zip(found.tolist(), truth.tolist()))
        e, i = percentiles(exact_seconds), percentiles(ivf_seconds)
        result["nprobe"][nprobe] = {"recall@10": round(recall, 4), "exact": e, "ivf": i,
                                    "speedup_p50": round(e["p50_ms"] / i["p50_ms"], 1)}
    result["goal"] = {"recall@10": 0.95, "speedup": 10}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--ann-vectors", type=int, default=1_000_000)
    parser.add_argument("--nprobe", default="8,16,32,64", help="comma-separated nprobe values to measure")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=1000, help="real passages the synthetic vectors are shaped on")
    parser.add_argument("--embedder", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bench-retrieval-"))
    os.environ.setdefault("ITERRETGEN_HOME", str(home / "home"))
    import faiss
    import torch

    from iterretgen_tui import models
    from iterretgen_tui.engine.datasets import load_dataset
    from iterretgen_tui.engine.embedder import SentenceEmbedder
    from iterretgen_tui.engine.onnx_embedder import OnnxEmbedder

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    path = models.resolve_embedder(args.embedder)
    embedders = {
        "torch": SentenceEmbedder(path, device="cpu", name=args.embedder),
        "onnx-fp32": OnnxEmbedder(path, name=args.embedder, threads=args.threads),
        "onnx-int8": OnnxEmbedder(path, variant="int8", name=args.embedder, threads=args.threads),
    }
    questions = [q.text for q in load_dataset(SCIFACT).questions][: args.queries]
    seeds = embedders["onnx-fp32"].embed_batch(seed_texts(SCIFACT, args.seeds))
    for embedder in embedders.values():
        embedder.embed_queries(questions[:4])  # warm up
    report = {"threads": args.threads, "queries": len(questions), "seed_passages": len(seeds)}
    report["end_to_end"] = end_to_end(embedders, seeds, questions, args.passages, home)
    query_vectors = embedders["onnx-fp32"].embed_queries(questions)
    report["ann"] = ann(seeds, query_vectors, args.ann_vectors, [int(x) for x in args.nprobe.split(",")])

    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
