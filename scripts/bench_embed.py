#!/usr/bin/env python
"""Embedding benchmark, printed as JSON:

- passages per second of raw ``SentenceTransformer.encode`` (torch fp32, the naive path)
  and of each exported backend (ONNX Runtime fp32 and int8, OpenVINO int8) on the same
  corpus texts, run interleaved in the same process (the machine is shared: only ratios
  measured side by side mean anything), medians of ``--repeats`` runs, and each backend's
  ratio to raw torch;
- the mean and lowest cosine of each backend's vectors to torch fp32's;
- nDCG@10 on a retrieval dataset (scifact) per backend, queries and passages on the same
  backend, exact inner-product search; ``--ndcg-torch`` adds torch itself (slow);
- ``--cuda``: torch on the GPU too ("torch-cuda", what "auto" runs where there is one),
  measured in the same interleaved rounds, with the GPU's name in the report.

Usage: scripts/bench_embed.py [--passages 256] [--repeats 3] [--threads 2] [--ndcg-torch] [--cuda] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_common import print_report

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def corpus_texts(dataset) -> tuple[list[str], list[str]]:
    """Document ids and the text the indexer embeds for each (title line, then text)."""
    from iterretgen_tui.engine.indexing.chunking import Chunk
    from iterretgen_tui.engine.indexing.indexer import embedding_text

    docs = list(dataset.corpus())
    return [d[0] for d in docs], [embedding_text(Chunk(text.strip(), "", title)) for _, title, text in docs]


def ndcg(dataset, doc_ids: list[str], passages: np.ndarray, queries: np.ndarray) -> float:
    from iterretgen_tui.engine.evaluation import metrics

    top = np.argsort(-(queries @ passages.T), axis=1)[:, :10]
    scores = [metrics.ndcg_at([doc_ids[i] for i in row], q.relevant, 10) for q, row in zip(dataset.questions, top)]
    return round(100 * statistics.fmean(scores), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--embedder", default="all-minilm-l6-v2")
    parser.add_argument("--passages", type=int, default=256, help="texts per throughput run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--ndcg-torch", action="store_true", help="also encode the whole corpus with torch")
    parser.add_argument("--cuda", action="store_true", help="also measure torch on the GPU")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    os.environ.setdefault("ITERRETGEN_HOME", tempfile.mkdtemp(prefix="bench-embed-"))
    import torch
    from sentence_transformers import SentenceTransformer

    from iterretgen_tui import models
    from iterretgen_tui.engine.embedding.onnx_embedder import OnnxEmbedder
    from iterretgen_tui.engine.evaluation.datasets import load_dataset

    torch.set_num_threads(args.threads)
    path = models.resolve_embedder(args.embedder)
    dataset = load_dataset(args.dataset)
    doc_ids, texts = corpus_texts(dataset)
    sample = texts[: args.passages]
    questions = [q.text for q in dataset.questions]

    raw = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    backends, export_seconds = {}, {}
    for name, variant in {"onnx-fp32": "fp32", "onnx-int8": "int8", "openvino-int8": "openvino-int8"}.items():
        started = time.perf_counter()
        backends[name] = OnnxEmbedder(path, variant=variant, name=args.embedder, threads=args.threads)
        export_seconds[name] = round(time.perf_counter() - started, 1)  # export + load
    encoders = {"torch": lambda t: raw.encode(t, batch_size=32, normalize_embeddings=True)}
    if args.cuda:  # the batch size the app's torch embedder uses on any device
        gpu = SentenceTransformer(str(path), device="cuda", local_files_only=True)
        encoders["torch-cuda"] = lambda t: gpu.encode(t, batch_size=32, normalize_embeddings=True)
    encoders.update({name: e.embed_batch for name, e in backends.items()})
    for encode in encoders.values():
        encode(sample[:32])  # warm up

    rates: dict[str, list[float]] = {name: [] for name in encoders}
    vectors = {}
    for _ in range(args.repeats):
        for name, encode in encoders.items():  # interleaved: each repeat sees the same load
            started = time.perf_counter()
            vectors[name] = encode(sample)
            rates[name].append(len(sample) / (time.perf_counter() - started))

    report = {
        "dataset": dataset.name,
        "embedder": args.embedder,
        "threads": args.threads,
        "passages": len(sample),
        "repeats": args.repeats,
        "gpu": torch.cuda.get_device_name() if args.cuda else None,
        "backends": {},
    }
    base = statistics.median(rates["torch"])
    for name, runs in rates.items():
        cosine = (vectors[name] * vectors["torch"]).sum(axis=1)
        report["backends"][name] = {
            "passages_per_second": round(statistics.median(runs), 1),
            "runs": [round(r, 1) for r in runs],
            "vs_torch": round(statistics.median(runs) / base, 2),
            "cosine_to_torch_mean": round(float(cosine.mean()), 5),
            "cosine_to_torch_min": round(float(cosine.min()), 5),
        }
        if name in backends:
            report["backends"][name].update(
                identity=backends[name].identity, export_and_load_seconds=export_seconds[name]
            )

    corpus = {name: e.embed_batch(texts) for name, e in backends.items()}
    query_vectors = {name: e.embed_queries(questions) for name, e in backends.items()}
    for name in ("torch", "torch-cuda") if args.ndcg_torch else ():
        if name in encoders:
            corpus[name] = encoders[name](texts)
            query_vectors[name] = encoders[name](questions)
    for name in corpus:
        report["backends"][name]["ndcg@10"] = ndcg(dataset, doc_ids, corpus[name], query_vectors[name])
    for name in ("onnx-int8", "openvino-int8"):
        report[f"{name}_passages_fp32_queries_ndcg@10"] = ndcg(
            dataset, doc_ids, corpus[name], query_vectors["onnx-fp32"]
        )
    report["corpus_documents"] = len(texts)

    print_report(report, args.out)


if __name__ == "__main__":
    main()
