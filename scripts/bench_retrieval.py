#!/usr/bin/env python
"""Retrieval benchmark, printed as JSON:

- end to end at ``--passages`` (100,000): a real ``PassageIndex`` (SQLite + FAISS) of
  synthetic vectors (scripts/bench_common.py), real scifact questions encoded one at
  a time by each embedding backend, then ``index.search`` for the top 5 passages with
  their texts: p50/p95 of encode, search and both (goal: p50 < 25 ms), and of the CPU
  time both take (what they cost on an idle machine). Backends run
  interleaved per question, so each sees the same machine load. Hybrid retrieval
  is timed beside it on the same questions: ``HybridRetriever.retrieve`` (encode, dense
  and keyword search 50 deep, fusion, texts), and the keyword search alone, as shipped and with
  every query term kept (no postings budget, engine/retrieval/lexical.py); the passages'
  texts are real-vocabulary blends (``realish_texts``) so bm25 reads realistic posting lists.
- ANN at ``--ann-vectors`` (1,000,000): exact inner-product search (the naive path) against
  the IVF index ``engine/indexing/index.py`` builds above ``ANN_THRESHOLD``, one query at a time,
  recall@10 of IVF against exact search and the latency ratio, per ``nprobe``
  (goal: recall@10 >= 0.95 at >= 10x lower latency).

Usage: scripts/bench_retrieval.py [--passages 100000] [--ann-vectors 1000000] [--queries 100] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_common import SCIFACT, fill_index, print_report, realish_texts, realish_vectors, seed_texts


def percentiles(seconds: list[float]) -> dict:
    ms = np.array(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - started


def cpu_timed(fn, *args):
    """Wall seconds and this process's CPU seconds: on a shared machine the wall time is
    mostly waiting for a core, the CPU time is what the work costs an idle one."""
    cpu = time.process_time()
    result, wall = timed(fn, *args)
    return result, wall, time.process_time() - cpu


def size_on_disk(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())


def compacted_size(directory: Path, *, drop_keywords: bool = False) -> int:
    """Bytes on disk once compacted; ``drop_keywords``: as the index was before keyword search."""
    import sqlite3

    from iterretgen_tui.engine.indexing.index import _LEXICAL_DROP

    db = sqlite3.connect(directory / "index.sqlite3", isolation_level=None)
    for statement in _LEXICAL_DROP if drop_keywords else ():
        db.execute(statement)
    db.execute("VACUUM")
    db.close()
    return size_on_disk(directory)


def end_to_end(embedders: dict, seeds: np.ndarray, texts: list[str], questions: list[str], n: int, home: Path) -> dict:
    import faiss

    from iterretgen_tui.engine.indexing.index import ANN_THRESHOLD, PassageIndex
    from iterretgen_tui.engine.retrieval.hybrid import FUSION_DEPTH, HybridRetriever
    from iterretgen_tui.engine.retrieval.lexical import MAX_TERMS, LexicalRetriever
    from iterretgen_tui.engine.retrieval.retriever import Retriever

    started = time.perf_counter()
    vectors = realish_vectors(seeds, n)
    index = PassageIndex.open(home / "index", embedder_identity="bench", dim=vectors.shape[1])
    fill_index(index, vectors, texts=realish_texts(texts, n))
    build_seconds = time.perf_counter() - started
    exact = faiss.IndexFlatIP(vectors.shape[1])  # the naive search, for comparison
    exact.add(vectors)
    del vectors
    faiss.omp_set_num_threads(1)
    times = {
        name: {"encode": [], "search": [], "total": [], "total_cpu": [], "hybrid_total": [], "hybrid_total_cpu": []}
        for name in embedders
    }
    hybrids = {
        name: HybridRetriever(Retriever(embedder, index), LexicalRetriever(index))
        for name, embedder in embedders.items()
    }
    exact_seconds, keyword_seconds, every_term_seconds = [], [], []
    every_term = LexicalRetriever(index, postings_budget=len(index) * MAX_TERMS)  # no term left out
    for question in questions:
        for name, embedder in embedders.items():
            vector, encode, encode_cpu = cpu_timed(embedder.embed_queries, [question])
            found, search, search_cpu = cpu_timed(index.search, vector, 5)
            assert len(found[0]) == 5
            parts = (
                ("encode", encode),
                ("search", search),
                ("total", encode + search),
                ("total_cpu", encode_cpu + search_cpu),
            )
            found, hybrid, hybrid_cpu = cpu_timed(hybrids[name].retrieve, question, 5)
            assert len(found) == 5
            parts += ("hybrid_total", hybrid), ("hybrid_total_cpu", hybrid_cpu)
            for part, seconds in parts:
                times[name][part].append(seconds)
        exact_seconds.append(timed(exact.search, vector, 5)[1])
        keyword_seconds.append(timed(LexicalRetriever(index).retrieve, question, FUSION_DEPTH)[1])
        every_term_seconds.append(timed(every_term.retrieve, question, FUSION_DEPTH)[1])
    index.close()
    sizes = {"hybrid": compacted_size(index.directory)}
    sizes["dense_only"] = compacted_size(index.directory, drop_keywords=True)
    return {
        "passages": n,
        "faiss_index": "IVF" if n >= ANN_THRESHOLD else "exact",
        "build_seconds": round(build_seconds, 1),
        "exact_flat_search_without_texts": percentiles(exact_seconds),
        "keyword_search_50_deep": percentiles(keyword_seconds),
        "keyword_search_50_deep_every_term": percentiles(every_term_seconds),
        "bytes_on_disk": {**sizes, "ratio": round(sizes["hybrid"] / sizes["dense_only"], 3), "goal_ratio_at_most": 1.4},
        "backends": {name: {part: percentiles(s) for part, s in parts.items()} for name, parts in times.items()},
        "goal_p50_ms": 25,
    }


def ann(seeds: np.ndarray, queries: np.ndarray, n: int, nprobes: list[int]) -> dict:
    import faiss

    from iterretgen_tui.engine.indexing import index as index_module

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

    faiss.omp_set_num_threads(1)  # as PassageIndex.search runs a single query
    truth, _ = run(exact)  # warm-up pass that also gives the exact answers
    result = {
        "vectors": n,
        "dim": int(queries.shape[1]),
        "lists": int(ivf.nlist),
        "ivf_build_seconds": round(build, 1),
        "kind_chosen": type(ivf).__name__,
        "default_nprobe": index_module.NPROBE,
        "search_threads": 1,
    }
    exact_seconds, ivf_seconds, found = [], {p: [] for p in nprobes}, {}
    for _ in range(3):  # interleaved repeats: exact and IVF see the same load
        exact_seconds += run(exact)[1]
        for nprobe in nprobes:
            ivf.nprobe = nprobe
            found[nprobe], seconds = run(ivf)
            ivf_seconds[nprobe] += seconds
    result["exact"] = percentiles(exact_seconds)
    result["ivf_by_nprobe"] = {}
    for nprobe in nprobes:
        recall = statistics.fmean(len(set(a) & set(b)) / 10 for a, b in zip(found[nprobe].tolist(), truth.tolist()))
        ivf = percentiles(ivf_seconds[nprobe])
        result["ivf_by_nprobe"][nprobe] = {
            "recall@10": round(recall, 4),
            **ivf,
            "speedup_p50": round(result["exact"]["p50_ms"] / ivf["p50_ms"], 1),
        }
    result["goal"] = {"recall@10": 0.95, "speedup": 10}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--ann-vectors", type=int, default=1_000_000, help="0 skips the ANN comparison")
    parser.add_argument("--nprobe", default="16,32,64,128", help="comma-separated nprobe values to measure")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=1000, help="real passages the synthetic vectors are shaped on")
    parser.add_argument(
        "--text-seeds",
        type=int,
        default=10_000,
        help="real passages the synthetic texts are blended from (all of scifact's 5,183 by default): "
        "fewer give every word a larger document frequency than a real corpus has",
    )
    parser.add_argument("--embedder", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument(
        "--backends",
        default="torch,onnx-fp32,onnx-int8,openvino-int8",
        help="query encoders timed in turn on each question; one alone shows its latency "
        "without the others' idle threads spinning beside it",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bench-retrieval-"))
    os.environ.setdefault("ITERRETGEN_HOME", str(home / "home"))
    import faiss
    import torch

    from iterretgen_tui import models
    from iterretgen_tui.engine.embedding.embedder import SentenceEmbedder
    from iterretgen_tui.engine.embedding.onnx_embedder import OnnxEmbedder
    from iterretgen_tui.engine.evaluation.datasets import load_dataset

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    path = models.resolve_embedder(args.embedder)
    reference = OnnxEmbedder(path, name=args.embedder, threads=args.threads)  # fp32: seeds and ANN queries
    makers = {
        "torch": lambda: SentenceEmbedder(path, device="cpu", name=args.embedder),
        "onnx-fp32": lambda: reference,
        "onnx-int8": lambda: OnnxEmbedder(path, variant="int8", name=args.embedder, threads=args.threads),
        "openvino-int8": lambda: OnnxEmbedder(path, variant="openvino-int8", name=args.embedder, threads=args.threads),
    }
    embedders = {name: makers[name]() for name in args.backends.split(",")}
    questions = [q.text for q in load_dataset(SCIFACT).questions][: args.queries]
    seeds = reference.embed_batch(seed_texts(SCIFACT, args.seeds))
    for embedder in embedders.values():
        embedder.embed_queries(questions[:4])  # warm up
    report = {
        "threads": args.threads,
        "queries": len(questions),
        "seed_passages": len(seeds),
        "load_average_at_start": os.getloadavg(),
    }
    texts = seed_texts(SCIFACT, args.text_seeds)
    report["text_seed_passages"] = len(texts)
    report["end_to_end"] = end_to_end(embedders, seeds, texts, questions, args.passages, home)
    if args.ann_vectors:
        query_vectors = reference.embed_queries(questions)
        report["ann"] = ann(seeds, query_vectors, args.ann_vectors, [int(x) for x in args.nprobe.split(",")])

    report["load_average_at_end"] = os.getloadavg()
    print_report(report, args.out)


if __name__ == "__main__":
    main()
