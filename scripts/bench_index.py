#!/usr/bin/env python
"""Indexing benchmark, printed as JSON:

- passages per second of the folder indexer (parse, split, embed, commit) over ~1,000
  text files written from a dataset's corpus.jsonl, excluding model load;
- passages per second of raw ``SentenceTransformer.encode`` on the very texts the indexer
  embedded, in the same run (the ceiling the indexer's overhead is measured against);
- seconds to bring the index up to date after one of the files changes (goal < 2 s),
  and after nothing changed;
- what the keyword index of hybrid retrieval costs: the folder indexed again
  into fresh indexes with and without it, alternately ``--repeats`` times, the vectors
  replayed from memory so that only the index's own work differs (passages per second,
  and the same figure with this run's embedding time added back), and each index's size
  on disk.

Usage: scripts/bench_index.py [--dataset DIR] [--files 1000] [--embedder NAME] [--device cpu] [--embed-backend auto]
       [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench_common import print_report

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa-dev200"


def write_folder(dataset: Path, folder: Path, files: int) -> int:
    """The corpus as Markdown files, each document under its title as a heading."""
    from iterretgen_tui.engine.evaluation.datasets import load_dataset

    docs = list(load_dataset(dataset).corpus())
    for n in range(files):
        part = docs[n::files]
        body = "\n\n".join(f"# {title}\n\n{text}" for _, title, text in part)
        (folder / f"doc{n:04d}.md").write_text(body + "\n", "utf-8")
    return len(docs)


def embedded_texts(folder: Path, words: int, overlap: int) -> list[str]:
    from iterretgen_tui.engine.indexing import documents
    from iterretgen_tui.engine.indexing.chunking import ChunkOptions
    from iterretgen_tui.engine.indexing.indexer import embedding_text

    texts = []
    for path in sorted(folder.iterdir()):
        texts += [embedding_text(c) for c in documents.passages(path, path.read_bytes(), ChunkOptions(words, overlap))]
    return texts


class Replayed:
    """An embedder that answers with the vectors an index already holds for these texts,
    so repeated runs differ only in what the index does."""

    def __init__(self, embedder, index) -> None:
        self.name, self.dim, self.metric, self.identity = (
            embedder.name,
            embedder.dim,
            embedder.metric,
            embedder.identity,
        )
        self.index = index

    def embed_batch(self, texts, *, queries=False):
        import numpy as np

        from iterretgen_tui.engine.indexing.indexer import _key

        stored = self.index.vectors_for(_key(t) for t in texts)
        return np.stack([stored[_key(t)] for t in texts])


def size_on_disk(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())


def keyword_index_cost(folder: Path, embedder, built, index_seconds: float, root: Path, repeats: int) -> dict:
    """Indexing with and without the keyword index (dropped right after opening: what an
    index was before keyword search), alternately, the vectors replayed from the ``built``
    index, and both indexes' sizes once closed. The first real run (``index_seconds``, with
    the keyword index) less the median index-only hybrid run is its embedding time, which
    is added back to compare the throughput of real runs."""
    import statistics

    from iterretgen_tui.engine.indexing import index as index_module
    from iterretgen_tui.engine.indexing.index import PassageIndex
    from iterretgen_tui.engine.indexing.indexer import sync_folder

    replayed = Replayed(embedder, built)
    seconds = {"dense_only": [], "hybrid": []}
    sizes = {}
    for n in range(repeats):
        for kind in seconds:
            directory = root / f"{kind}-{n}"
            index = PassageIndex.open(directory, embedder_identity=replayed.identity, dim=replayed.dim)
            if kind == "dense_only":
                with index.lock():
                    for statement in index_module._LEXICAL_DROP:
                        index._db.execute(statement)  # meta still names the tokenizer: nothing rebuilds it
            report = sync_folder(folder, index, replayed)
            seconds[kind].append(report.seconds)
            index.close()
            sizes[kind] = size_on_disk(directory)
    passages = report.passages
    medians = {kind: statistics.median(runs) for kind, runs in seconds.items()}
    embed_seconds = max(index_seconds - medians["hybrid"], 0.0)
    result = {"passages": passages, "repeats": repeats, "embedding_seconds": round(embed_seconds, 2)}
    for kind, median in medians.items():
        result[kind] = {
            "index_only_seconds_median": round(median, 3),
            "index_only_passages_per_second": round(passages / median, 1),
            "with_embedding_passages_per_second": round(passages / (median + embed_seconds), 1),
            "bytes_on_disk": sizes[kind],
        }
    result["throughput_hybrid_vs_dense_only"] = round(
        (medians["dense_only"] + embed_seconds) / (medians["hybrid"] + embed_seconds), 3
    )
    result["size_hybrid_vs_dense_only"] = round(sizes["hybrid"] / sizes["dense_only"], 3)
    result["goal"] = {"throughput_ratio_at_least": 0.9, "size_ratio_at_most": 1.4}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATA)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--embedder", default="all-minilm-l6-v2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--embed-backend", default="auto", help="the indexer's embedder: auto, torch, onnx, onnx-int8, openvino-int8"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each index kind for the keyword-index cost")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ITERRETGEN_HOME"] = str(Path(tmp) / "home")  # before paths is used
        import torch
        from sentence_transformers import SentenceTransformer

        from iterretgen_tui import models
        from iterretgen_tui.config import Settings
        from iterretgen_tui.engine.indexing.indexer import needs_sync, open_folder_index, sync_folder
        from iterretgen_tui.session import Session

        folder = Path(tmp) / "docs"
        folder.mkdir()
        documents_written = write_folder(args.dataset, folder, args.files)
        model_path = models.resolve_embedder(args.embedder)

        started = time.perf_counter()
        session = Session(Settings(embedder=args.embedder, device=args.device, embed_backend=args.embed_backend))
        session.load_embedder()  # as the app builds it (an ONNX export is made here once)
        embedder = session.embedder
        load_seconds = time.perf_counter() - started
        embedder.embed_batch(["warm up the model"] * 8)

        index = open_folder_index(folder, embedder)
        report = sync_folder(folder, index, embedder)
        index_seconds = report.seconds

        texts = embedded_texts(folder, 100, 20)
        raw = SentenceTransformer(str(model_path), device=args.device, local_files_only=True)
        raw.encode(texts[:8])
        started = time.perf_counter()
        raw.encode(texts, batch_size=32, normalize_embeddings=True)
        raw_seconds = time.perf_counter() - started

        started = time.perf_counter()
        unchanged = sync_folder(folder, index, embedder)
        noop_seconds = time.perf_counter() - started

        changed = folder / "doc0500.md"
        changed.write_text(changed.read_text("utf-8") + "\nOne more sentence, added for the benchmark.\n", "utf-8")
        started = time.perf_counter()
        stale = needs_sync(folder, index)
        update = sync_folder(folder, index, embedder)
        update_seconds = time.perf_counter() - started
        keyword = keyword_index_cost(folder, embedder, index, index_seconds, Path(tmp) / "kinds", args.repeats)
        index.close()

    print_report(
        {
            "dataset": args.dataset.name,
            "embedder": args.embedder,
            "embedder_identity": embedder.identity,
            "embedder_class": type(embedder).__name__,
            "device": embedder.device,
            "torch_threads": torch.get_num_threads(),
            "files": args.files,
            "documents": documents_written,
            "passages": report.passages,
            "model_load_seconds": round(load_seconds, 2),
            "index_seconds": round(index_seconds, 2),
            "indexer_passages_per_second": round(report.embedded / index_seconds, 1),
            "raw_encode_seconds": round(raw_seconds, 2),
            "raw_encode_passages_per_second": round(len(texts) / raw_seconds, 1),
            "indexer_vs_raw": round((report.embedded / index_seconds) / (len(texts) / raw_seconds), 3),
            "no_change_sync_seconds": round(noop_seconds, 3),
            "no_change_embedded": unchanged.embedded,
            "keyword_index_cost": keyword,
            "one_file_changed": {
                "needs_sync": stale,
                "seconds": round(update_seconds, 3),
                "updated": update.updated,
                "embedded": update.embedded,
                "goal_seconds": 2.0,
            },
        }
    )


if __name__ == "__main__":
    main()
