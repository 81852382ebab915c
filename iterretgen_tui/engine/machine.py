"""Which CPU this is: its model name and the vector extensions that decide how fast int8
and fp32 inference run on it. Benchmarks record it; the embedding backend's calibration
is cached under it (engine/embedding/calibration.py)."""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from pathlib import Path

# /proc/cpuinfo flag -> the name people know it by, in the order they arrived.
_EXTENSIONS = {
    "avx2": "AVX2",
    "avx_vnni": "AVX-VNNI",
    "avx512f": "AVX-512",
    "avx512_vnni": "AVX512-VNNI",
    "avx512_bf16": "AVX512-BF16",
    "amx_int8": "AMX-INT8",
    "amx_bf16": "AMX-BF16",
}


@lru_cache(maxsize=1)
def describe_cpu() -> dict:
    """{"model", "extensions", "cores"}: ``cores`` are the ones this process may run on."""
    model, flags = _cpuinfo(Path("/proc/cpuinfo"))
    return {
        "model": model or platform.processor() or platform.machine(),
        "extensions": [label for flag, label in _EXTENSIONS.items() if flag in flags],
        "cores": usable_cores(),
    }


def cpu_label(cpu: dict | None = None) -> str:
    """One line: "AMD EPYC, 2 cores, AVX2"."""
    cpu = cpu or describe_cpu()
    extensions = ", ".join(cpu["extensions"]) or "no AVX2 found"
    return f"{cpu['model']}, {cpu['cores']} cores, {extensions}"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def _cpuinfo(path: Path) -> tuple[str, set[str]]:
    """The first processor's model name and flags; nothing where the file does not exist."""
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return "", set()
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = " ".join(value.split())
        elif key == "flags" and not flags:
            flags = set(value.split())
        if model and flags:
            break
    return model, flags
