"""Text -> float32 vectors, behind one abstract method.

An embedder is anything that maps a list of strings to an (n, dim) float32 array.
``metric`` says how its vectors compare: "cosine" models (MiniLM) are returned
L2-normalised, "dot" models (Contriever-MSMARCO) are returned raw; either way the
index ranks by inner product, so the similarity follows the model.
"""

from __future__ import annotations

import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import DeviceUnavailable


class Embedder(ABC):
    name: str
    dim: int
    metric: str  # "cosine" or "dot"
    backend = ""  # how it runs ("onnx-int8", ...) and why, when loaded by engine/embedding/backends.py
    chosen_by = ""  # "setting", "device" or "measured"
    # Texts it embeds at once across streams that each hold some of the cores; 0 where one
    # batch of any size runs on every thread (engine/embedding/calibration.py sizes by it).
    texts_in_flight = 0
    # The evidence support under which the passages read are taken not to state an answer:
    # the catalogue's measured value for the model (engine/loop/grounding.py); 0: never.
    unsaid_below = 0.0

    @abstractmethod
    def embed_batch(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        """Encode texts; ``queries`` selects the query encoder where it differs."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_batch(texts, queries=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def _use_folder(self, path: str | Path, metric: str | None, batch_size: int | None, name: str | None) -> None:
        """What every embedder read from a local model folder records about it."""
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"embedder folder not found: {self.path}")
        self.metric = metric or _declared_metric(self.path)
        self.batch_size = batch_size
        self.name = name or self.path.name

    @property
    def identity(self) -> str:
        """Stored with an index: vectors of different identities never mix."""
        return f"{self.name}:{self.dim}:{self.metric}"


# Where, on Linux, a GPU torch could use shows up (NVIDIA's driver, ROCm's kernel driver).
_GPU_DRIVERS = (Path("/proc/driver/nvidia/version"), Path("/dev/kfd"))


def resolve_device(device: str) -> str:
    if device == "cpu":
        return device
    if device == "auto" and sys.platform == "linux" and not any(d.exists() for d in _GPU_DRIVERS):
        return "cpu"  # no GPU driver: importing torch (seconds) to learn so is not needed
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailable(
            "--device cuda: torch was built without CUDA or has no usable CUDA device: the embedder cannot start on the GPU "
            "(install a CUDA build of torch)"
        )
    return "cuda" if torch.cuda.is_available() else "cpu"


def _declared_metric(folder: Path) -> str:
    """Normalised sentence-transformers models compare by cosine; a bare Hugging Face
    encoder (Contriever's layout) gets mean pooling and dot product."""
    modules = folder / "modules.json"
    if modules.exists():
        kinds = [m.get("type", "") for m in json.loads(modules.read_text("utf-8"))]
        if any(k.endswith("Normalize") for k in kinds):
            return "cosine"
        st_config = folder / "config_sentence_transformers.json"
        if st_config.exists():
            declared = json.loads(st_config.read_text("utf-8")).get("similarity_fn_name")
            if declared in ("dot", "dot_product"):
                return "dot"
            if declared == "cosine":
                return "cosine"
    return "dot"


class SentenceEmbedder(Embedder):
    """A sentence-transformers model from a local folder; optionally a separate query encoder."""

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "auto",
        metric: str | None = None,
        query_path: str | Path | None = None,
        batch_size: int = 32,
        name: str | None = None,
    ) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        # Loading from a local folder needs no progress bar; it would pollute stderr and --json runs.
        transformers_logging.disable_progress_bar()
        self._use_folder(path, metric, batch_size, name)
        self.device = resolve_device(device)
        self._model = SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
        self._query_model = (
            SentenceTransformer(str(query_path), device=self.device, local_files_only=True)
            if query_path
            else self._model
        )
        self.dim = int(self._model.get_embedding_dimension())

    def embed_batch(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._query_model if queries else self._model
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=self.metric == "cosine",
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
