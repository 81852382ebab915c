"""What the embedding, retrieval and memory benchmarks share: their JSON report, and large
synthetic indexes.

Encoding 100,000 or 1,000,000 real passages would take hours on two cores, so the vectors
are synthetic but shaped like real ones: each is a random blend of two real passage
embeddings plus isotropic noise (cosine ~0.8 to the blend), normalised. They cluster
around real topics and fill the space between them, unlike uniform random vectors, which
no ANN index (and no real corpus) resembles.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

# ../shared/data beside the checkout; a git worktree sits one level deeper (wt/NAME).
SCIFACT = next(
    (d / "shared" / "data" / "scifact" for d in Path(__file__).resolve().parents if (d / "shared" / "data").is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact",
)


def seed_texts(dataset: Path, count: int) -> list[str]:
    from iterretgen_tui.engine.evaluation.datasets import load_dataset

    docs = load_dataset(dataset).corpus()
    return [f"{title}\n{text}" for _, (_, title, text) in zip(range(count), docs)]


def realish_vectors(seeds: np.ndarray, n: int, *, noise: float = 0.75, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, seeds.shape[1]), dtype=np.float32)
    for start in range(0, n, 100_000):  # chunks: the float64 temporaries stay small
        m = min(100_000, n - start)
        a, b = rng.integers(0, len(seeds), m), rng.integers(0, len(seeds), m)
        w = rng.uniform(0.5, 1.0, (m, 1))
        x = w * seeds[a] + (1 - w) * seeds[b]
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        x += rng.normal(0, noise / np.sqrt(seeds.shape[1]), x.shape)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def realish_texts(texts: list[str], n: int, *, words: int = 100, seed: int = 0) -> list[str]:
    """n passage texts for the keyword index, each the first half of one real passage's
    words and the second half of another's: real vocabulary and term frequencies, so
    bm25's posting lists grow with n as a real corpus's do."""
    rng = np.random.default_rng(seed)
    split = [t.split() for t in texts]
    a, b = rng.integers(0, len(split), n), rng.integers(0, len(split), n)
    half = words // 2
    return [" ".join(split[i][:half] + split[j][half:words]) for i, j in zip(a.tolist(), b.tolist())]


def fill_index(index, vectors: np.ndarray, *, per_file: int = 100, texts: list[str] | None = None) -> None:
    """Commit the vectors as passages of synthetic files (texts of ~100-word passage
    length: ``texts`` where given, else one repeated phrase)."""
    from iterretgen_tui.engine.indexing.index import FileRecord, FileUpdate, NewPassage

    with index.lock():
        for start in range(0, len(vectors), 100 * per_file):
            updates = []
            for f in range(start, min(start + 100 * per_file, len(vectors)), per_file):
                passages = [
                    NewPassage(
                        f"doc {f}", texts[i] if texts else f"synthetic passage {i} " * 30, str(i), f"k{i}", vectors[i]
                    )
                    for i in range(f, min(f + per_file, len(vectors)))
                ]
                updates.append(FileUpdate(FileRecord(f"/synthetic/{f}.txt", 1, 0, 0, str(f)), passages))
            index.commit(updates)


def machine() -> dict:
    """The CPU a figure was measured on: model, cores, vector extensions (AVX2, AVX-512,
    VNNI, AMX), and the instruction-set limit given to oneDNN, OpenVINO's CPU kernels
    (``ONEDNN_MAX_CPU_ISA``, e.g. AVX2 on a VNNI machine), if any."""
    from iterretgen_tui.engine.machine import describe_cpu

    return {**describe_cpu(), "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "")}


def print_report(report: dict, out: Path | None = None) -> None:
    """Every benchmark's JSON, with the machine it ran on first."""
    text = json.dumps({"machine": machine(), **report}, indent=2)
    if out:
        out.write_text(text + "\n", "utf-8")
    print(text)
