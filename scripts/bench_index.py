#!/usr/bin/env python
"""Indexing benchmark (issue 3), printed as JSON:

- passages per second of the folder indexer (parse, split, embed, commit) over ~1,000
  text files written from a dataset's corpus.jsonl, excluding model load;
- passages per second of raw ``SentenceTransformer.encode`` on the very texts the indexer
  embedded, in the same run (the ceiling the indexer's overhead is measured against);
- seconds to bring the index up to date after one of the files changes (goal < 2 s),
  and after nothing changed.

Usage: scripts/bench_index.py [--dataset DIR] [--files 1000] [--embedder NAME] [--device cpu] [--embed-backend auto]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATA)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--embedder", default="all-minilm-l6-v2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--embed-backend", default="auto",
                        help="the indexer's embedder: auto, torch, onnx, onnx-int8, openvino-int8")
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
        index.close()

    print_report({
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
        "one_file_changed": {
            "needs_sync": stale,
            "seconds": round(update_seconds, 3),
            "updated": update.updated,
            "embedded": update.embedded,
            "goal_seconds": 2.0,
        },
    })


if __name__ == "__main__":
    main()
