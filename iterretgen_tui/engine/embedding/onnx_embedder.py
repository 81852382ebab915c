"""sentence-transformers models exported to ONNX, run by ONNX Runtime or OpenVINO on the CPU
(see docs/performance.md).

The export is made once per model and variant (engine/embedding/onnx_export.py) and loaded from
``paths.cache_dir()``; a missing or damaged one is made again. Texts are tokenised
together, sorted by token count and batched, so a batch pads to similar lengths; pooling
and normalisation follow sentence-transformers exactly (fp32 vectors match torch's to
about 1e-6). Loading needs neither torch nor sentence-transformers once the export exists.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..machine import usable_cores
from . import onnx_export
from .embedder import Embedder

# Backend setting -> export variant (onnx_export.VARIANTS).
BACKEND_VARIANTS = {"onnx": "fp32", "onnx-int8": "int8", "openvino-int8": "openvino-int8"}
# Session-time fusions left off: the export keeps Add + LayerNormalization on purpose.
UNFUSED = ["SkipLayerNormFusion"]


class _OnnxRuntime:
    """Two ONNX Runtime sessions on half the threads each, one batch in flight in each: on
    2 AVX2 cores, two single-threaded streams over batches of 4 embedded 8% faster than one
    two-threaded session over batches of 8 (docs/performance.md). A single batch (a
    query) runs on one of them alone."""

    pad_multiple = 1  # any length costs the same to start: each batch pads to its longest text
    batch_size = 4

    def __init__(self, model: Path, threads: int | None) -> None:
        import onnxruntime as ort

        threads = threads or usable_cores()
        streams = 2 if threads >= 2 else 1
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads // streams
        options.inter_op_num_threads = 1
        self.sessions = [
            ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"], disabled_optimizers=UNFUSED)
            for _ in range(streams)
        ]

    @property
    def streams(self) -> int:
        return len(self.sessions)

    def embed(self, batches: Iterable[tuple[np.ndarray, dict]], store: Callable) -> None:
        batches = list(batches)
        todo = iter(batches)
        lock = threading.Lock()  # the batches' iterator and ``store`` are shared
        failed = threading.Event()

        def run(session) -> None:
            try:
                while not failed.is_set():
                    with lock:
                        batch = next(todo, None)
                    if batch is None:
                        return
                    rows, feed = batch
                    hidden = session.run(None, feed)[0]  # releases the GIL
                    with lock:
                        store(rows, hidden, feed)
            except BaseException:
                failed.set()
                raise

        # A single batch (a query) runs here alone: no thread is started for it.
        helpers = self.sessions[1 : len(batches)]
        with ThreadPoolExecutor(max(len(helpers), 1)) as pool:
            others = [pool.submit(run, session) for session in helpers]
            run(self.sessions[0])
            for other in others:
                other.result()


class _OpenVino:
    """Batches in flight at once, one per OpenVINO stream: on 2 cores two single-threaded
    streams beat one two-threaded batch at a time (docs/performance.md)."""

    batch_size = 8  # beat 32 on 2 cores (docs/performance.md)

    def __init__(self, model: Path, threads: int | None) -> None:
        import openvino as ov

        config = {"PERFORMANCE_HINT": "THROUGHPUT"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        self.compiled = ov.Core().compile_model(str(model), "CPU", config)
        self.streams = int(self.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        # Where it runs at bf16 (AMX), every new input length costs a long kernel set-up: the
        # first pass over 600 passages ran at 0.45x the next. Lengths padded to a multiple of
        # 16 are few, and that pass ran at 0.9x (docs/performance.md). f32 kernels start
        # at once, so there padding would only add work.
        precision = self.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        self.pad_multiple = 16 if precision == "bf16" else 1
        # Requests outlive calls: a new one pays again for each input shape (docs/
        # performance.md). A call takes its own from here, so the indexer and a question
        # never share one (list.pop and append are atomic).
        self.idle: list = []

    def embed(self, batches: Iterable[tuple[np.ndarray, dict]], store: Callable) -> None:
        # No Python callback (AsyncInferQueue's): a stream thread waiting for the GIL while
        # the main thread freed a compiled model (and joined those threads) deadlocked.
        running: deque = deque()

        def finish_oldest() -> None:
            request, rows, feed = running.popleft()
            request.wait()
            store(rows, request.get_output_tensor(0).data, feed)
            self.idle.append(request)

        for rows, feed in batches:
            if len(running) == self.streams:
                finish_oldest()
            try:
                request = self.idle.pop()
            except IndexError:  # none left (checking first would race another thread)
                request = self.compiled.create_infer_request()
            request.start_async(feed)
            running.append((request, rows, feed))
        while running:
            finish_oldest()


class _Encoder:
    """One exported model: tokenizer, runtime, pooling."""

    def __init__(self, folder: Path, threads: int | None) -> None:
        # The export's tokenizer.json, read by the tokenizers library itself: transformers'
        # AutoTokenizer gives the same ids but its import (torch with it) costs seconds at
        # every start of a process that embeds (docs/performance.md).
        from tokenizers import Tokenizer

        self.manifest = json.loads((folder / onnx_export.MANIFEST).read_text("utf-8"))
        variant = self.manifest["variant"]
        runtime = _OpenVino if variant == "openvino-int8" else _OnnxRuntime
        self.runtime = runtime(folder / onnx_export.model_file(variant), threads)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.pad_id = (self.tokenizer.padding or {}).get("pad_id", 0)
        self.tokenizer.no_padding()  # each batch is padded to its own longest text below
        self.tokenizer.enable_truncation(self.manifest["max_seq_length"])

    def encode(self, texts: Sequence[str], batch_size: int, normalize: bool) -> np.ndarray:
        m = self.manifest
        # sentence-transformers strips (and, when configured, lowercases) before tokenising.
        texts = [t.strip().lower() if m["do_lower_case"] else t.strip() for t in texts]
        encoded = self.tokenizer.encode_batch(texts)
        order = np.argsort([-len(e.ids) for e in encoded], kind="stable")
        out = np.empty((len(texts), m["dim"]), dtype=np.float32)

        def batches():
            for start in range(0, len(texts), batch_size):
                rows = order[start : start + batch_size]
                batch = _padded([encoded[i] for i in rows], self.pad_id, self.runtime.pad_multiple)
                yield rows, onnx_export.model_feed(batch, m["inputs"])

        def store(rows, hidden, feed):
            out[rows] = _pool(hidden, feed["attention_mask"], m["pooling"])

        self.runtime.embed(batches(), store)
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def _padded(encodings: Sequence, pad_id: int, multiple: int = 1) -> dict[str, np.ndarray]:
    """A batch's ids, attention mask and token types, right-padded to its longest text,
    rounded up to ``multiple`` tokens."""
    width = -(-max(len(e.ids) for e in encodings) // multiple) * multiple
    batch = {
        "input_ids": np.full((len(encodings), width), pad_id, dtype=np.int64),
        "attention_mask": np.zeros((len(encodings), width), dtype=np.int64),
        "token_type_ids": np.zeros((len(encodings), width), dtype=np.int64),
    }
    for row, e in enumerate(encodings):
        n = len(e.ids)
        batch["input_ids"][row, :n] = e.ids
        batch["attention_mask"][row, :n] = e.attention_mask
        batch["token_type_ids"][row, :n] = e.type_ids
    return batch


def _pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    if mode == "cls":
        return hidden[:, 0]
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def export_ready(model: Path, variant: str) -> bool:
    """Whether ``model``'s export of ``variant`` is made (loading it needs no export)."""
    folder = onnx_export.cache_folder(model, variant)
    try:
        manifest = json.loads((folder / onnx_export.MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return (
        manifest.get("version") == onnx_export.EXPORT_VERSION and (folder / onnx_export.model_file(variant)).is_file()
    )


def load_export(
    model: Path, variant: str, status: Callable[[str], None] = lambda message: None, label: str | None = None
) -> Path:
    """The cached export of ``model``, made first if it is missing or unreadable; ``label``
    names the model in the message (the embedded one's folder is just "model")."""
    folder = onnx_export.cache_folder(model, variant)
    if export_ready(model, variant):
        return folder
    # OpenVINO's NNCF calibration is the slow one (docs/performance.md).
    length = "a minute or more" if variant == "openvino-int8" else "seconds"
    status(f"preparing the {variant} export of {label or model.name} (once; {length})")
    onnx_export.export(model, folder, variant)
    return folder


class OnnxEmbedder(Embedder):
    """The ``SentenceEmbedder`` interface over an export; ``variant`` one of ``onnx_export.VARIANTS``."""

    device = "cpu"

    def __init__(
        self,
        path: str | Path,
        *,
        variant: str = "fp32",
        metric: str | None = None,
        query_path: str | Path | None = None,
        batch_size: int | None = None,  # the runtime's own by default
        name: str | None = None,
        threads: int | None = None,
        status: Callable[[str], None] = lambda message: None,
    ) -> None:
        self._use_folder(path, metric, batch_size, name)
        self.variant = variant
        self._model = self._open(self.path, threads, status)
        self._query_model = self._open(Path(query_path), threads, status) if query_path else self._model
        self.dim = int(self._model.manifest["dim"])
        self.batch_size = batch_size or self._model.runtime.batch_size
        self.texts_in_flight = self.batch_size * self._model.runtime.streams

    def _open(self, model: Path, threads: int | None, status: Callable[[str], None]) -> _Encoder:
        folder = load_export(model, self.variant, status, self.name if model == self.path else None)
        try:
            return _Encoder(folder, threads)
        except Exception:  # damaged on disk (ONNX Runtime and tokenizers raise their own types)
            status(f"the cached ONNX model for {model.name} is damaged; exporting it again")
            onnx_export.export(model, folder, self.variant)
            return _Encoder(folder, threads)

    @property
    def identity(self) -> str:
        # fp32 vectors equal torch's (within 1e-6), so they share its index; int8 ones drift.
        base = super().identity
        return base if self.variant == "fp32" else f"{base}:{onnx_export.IDENTITIES[self.variant]}"

    def embed_batch(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._query_model if queries else self._model
        return model.encode(texts, self.batch_size, self.metric == "cosine")
