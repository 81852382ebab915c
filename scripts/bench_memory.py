#!/usr/bin/env python
"""Memory benchmark, printed as JSON: peak RSS of a fresh process that loads the
default models (embedder and LLM), opens a ``--passages`` (100,000) folder index and
answers one retrieval, per embedding backend (goal: under 2 GB with the defaults).

The index is built first, in this process, from synthetic vectors shaped like real ones
(scripts/bench_common.py); each measurement then runs in its own child process, so
one backend's peak cannot hide another's.

Usage: scripts/bench_memory.py [--passages 100000] [--backends auto,torch]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_common import SCIFACT, fill_index, print_report, realish_vectors, seed_texts


def rss_mb() -> dict:
    """Current and peak resident memory of this process, from /proc (Linux). Not getrusage:
    its ru_maxrss survives fork and exec, so a child would report its parent's peak."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {"rss_mb": int(status["VmRSS"].split()[0]) // 1024, "peak_mb": int(status["VmHWM"].split()[0]) // 1024}


def child(folder: Path, backend: str) -> None:
    from iterretgen_tui.config import Settings
    from iterretgen_tui.engine.indexing.indexer import open_folder_index
    from iterretgen_tui.engine.retrieval.retriever import Retriever
    from iterretgen_tui.session import Session

    stages = {"start": rss_mb()}
    session = Session(Settings(device="cpu", embed_backend=backend))
    session.load_models()
    stages["models_loaded"] = rss_mb()
    index = open_folder_index(folder, session.embedder)
    stages["index_opened"] = rss_mb()
    hits = Retriever(session.embedder, index).retrieve("What causes the flu?", 5)
    stages["one_search"] = rss_mb()
    print(
        json.dumps(
            {
                "backend": backend,
                "embedder": type(session.embedder).__name__,
                "passages": len(index),
                "hits": len(hits),
                "stages": stages,
                "peak_rss_mb": stages["one_search"]["peak_mb"],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--backends", default="auto,torch")
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "BACKEND"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1])
        return

    home = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    os.environ["ITERRETGEN_HOME"] = str(home / "home")  # the children inherit it
    from iterretgen_tui.config import Settings
    from iterretgen_tui.engine.indexing.indexer import open_folder_index
    from iterretgen_tui.session import Session

    folder = home / "docs"
    folder.mkdir()
    runs = []
    for backend in args.backends.split(","):
        # Each backend's vectors have their own index (int8 ones differ from fp32's).
        session = Session(Settings(device="cpu", embed_backend=backend))
        session.load_embedder()  # also makes the ONNX export the child loads
        seeds = session.embedder.embed_batch(seed_texts(SCIFACT, 200))
        with open_folder_index(folder, session.embedder) as index:
            fill_index(index, realish_vectors(seeds, args.passages))
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(folder), backend], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for run in runs:
        if run["passages"] != args.passages:
            raise SystemExit(f"the {run['backend']} child opened {run['passages']} passages, not {args.passages}")
    report = {
        "passages": args.passages,
        "goal_peak_mb": 2048,
        "runs": runs,
        "index_bytes_on_disk": sum(p.stat().st_size for p in home.rglob("*") if p.is_file() and "indexes" in p.parts),
    }
    print_report(report, args.out)


if __name__ == "__main__":
    main()
