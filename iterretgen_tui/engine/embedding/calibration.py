"""Which embedding backend is fastest on this machine: measured once, then remembered.

What wins depends on the CPU more than on anything we can read from it: OpenVINO's int8
path leads with VNNI and trails ONNX Runtime's on AVX2 alone (docs/performance.md). So
``calibrate`` loads each candidate, encodes a few batches of fixed sample texts with each,
interleaved, and keeps the fastest. The choice is stored per CPU (model and vector
extensions) and embedder in the data folder, not the cache: it decides which index a
folder's vectors live in (each backend has its own identity), so it must stay put once a
folder is indexed. Only a user's explicit backend, or a new calibration asked for by
``models prepare``, changes it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from filelock import FileLock

from ... import paths
from ..machine import cpu_label, describe_cpu
from .embedder import Embedder

CACHE_VERSION = 1
# Texts per measured round, batched by each backend as it batches a folder's. OpenVINO
# runs two batches of 8 at once on 2 cores: with 12 texts one stream idled half the round
# and its rate read 0.7x its steady one; 32 keep both busy (docs/performance.md). More
# cores run more streams: a round holds at least two batches for every stream of every
# candidate (on a 16-core Xeon, 32 texts read OpenVINO at 0.6x its steady rate, level with
# ONNX Runtime's int8, and "auto" picked either).
SAMPLES = 32
ROUNDS = 2  # interleaved, so a burst of load elsewhere hits every candidate alike


@dataclass(frozen=True)
class Calibration:
    backend: str  # the fastest
    rates: dict[str, float]  # passages per second, each candidate's best round
    prepare_seconds: dict[str, float] = field(default_factory=dict)  # export (if made) and load
    cpu: str = ""
    measured_at: str = ""

    def summary(self) -> str:
        """The winner, then every candidate's rate, fastest first."""
        ranked = sorted(self.rates.items(), key=lambda item: -item[1])
        return f"{self.backend} (measured: {', '.join(f'{name} {rate:.3g}/s' for name, rate in ranked)})"


def cache_file() -> Path:
    return paths.data_dir() / "embed-backend.json"


def cache_key(embedder_key: str) -> str:
    """CPU model and extensions, not the core count: a process pinned to fewer cores must
    not switch backends, and with them indexes."""
    cpu = describe_cpu()
    return f"{cpu['model']} [{' '.join(cpu['extensions'])}] | {embedder_key}"


def cached(embedder_key: str) -> Calibration | None:
    entry = _entries().get(cache_key(embedder_key))
    if entry is None:
        return None
    try:
        return Calibration(**entry)
    except TypeError:  # written by another version
        return None


def choose(
    embedder_key: str,
    candidates: Mapping[str, Callable[[], Embedder]],
    *,
    status: Callable[[str], None] = lambda message: None,
    again: bool = False,
) -> tuple[Calibration, Embedder | None]:
    """The remembered choice (and no embedder), or a new calibration and its winner, loaded.
    One process calibrates at a time; another waits and takes its result."""
    with FileLock(str(cache_file()) + ".lock"):
        known = None if again else cached(embedder_key)
        if known is not None:
            return known, None
        result, winner = calibrate(candidates, status=status)
        _store(cache_key(embedder_key), result)
        return result, winner


def calibrate(
    candidates: Mapping[str, Callable[[], Embedder]],
    *,
    texts: list[str] | None = None,
    status: Callable[[str], None] = lambda message: None,
) -> tuple[Calibration, Embedder]:
    """Load every candidate, time ROUNDS rounds of ``texts`` on each in turn; the fastest
    wins and is returned loaded, the others are dropped."""
    if not candidates:
        raise ValueError("no embedding backend to choose from")
    loaded: dict[str, Embedder] = {}
    prepare: dict[str, float] = {}
    for name, make in candidates.items():
        status(f"measuring the embedding backends on this CPU: loading {name}")
        started = time.perf_counter()
        loaded[name] = make()
        loaded[name].embed_batch(sample_texts(2))  # first-call set-up is not throughput
        prepare[name] = round(time.perf_counter() - started, 2)
    texts = texts or sample_texts(round_size(loaded.values()))
    rates: dict[str, float] = {name: 0.0 for name in loaded}
    for _ in range(ROUNDS):
        for name, embedder in loaded.items():
            started = time.perf_counter()
            embedder.embed_batch(texts)
            seconds = max(time.perf_counter() - started, 1e-9)
            rates[name] = max(rates[name], round(len(texts) / seconds, 1))
    best = max(rates, key=rates.__getitem__)
    result = Calibration(best, rates, prepare, cpu_label(), datetime.now(timezone.utc).isoformat(timespec="seconds"))
    status(f"embedding backend for this CPU: {result.summary()}")
    return result, loaded[best]


def round_size(embedders: Iterable[Embedder]) -> int:
    """Texts per round: SAMPLES, or two batches for every stream of the widest candidate."""
    return max(SAMPLES, 2 * max((e.texts_in_flight for e in embedders), default=0))


def sample_texts(count: int = SAMPLES) -> list[str]:
    """Passage-length English texts that ship with every CPython (the int8 export's
    calibration set, engine/embedding/openvino_quantize.py); the same on every machine."""
    from .openvino_quantize import calibration_texts

    return calibration_texts(count)


def _entries() -> dict:
    try:
        data = json.loads(cache_file().read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    return data.get("choices", {})


def _store(key: str, result: Calibration) -> None:
    """Atomically: a crash leaves the old file or the new one, never half of one."""
    choices = {**_entries(), key: asdict(result)}
    path = cache_file()
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"version": CACHE_VERSION, "choices": choices}, indent=2), "utf-8")
    tmp.replace(path)
