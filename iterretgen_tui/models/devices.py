"""What `--device` turns into: where the chat model and the embedder actually run.

The rules are the engine's own (``generator.gpu_layers``, ``embedder.resolve_device``),
asked here without loading a model: llama.cpp offloads only when llama-cpp-python was
compiled with a GPU backend, sentence-transformers uses CUDA only when torch has it, so
`auto` may put the two on different devices.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine.errors import DeviceUnavailable


def _where(rule: Callable[[str], object], device: str, problems: list[str]) -> str:
    try:
        return "cuda" if rule(device) in ("cuda", -1) else "cpu"
    except DeviceUnavailable as exc:  # loading would fail with this message; describing must not
        problems.append(str(exc))
        return "cpu"


def describe_devices(device: str) -> dict:
    """For `models list` and the status line: {"requested", "llm", "embedder", "summary",
    "problems"}; a problem is a requested GPU that a library cannot use."""
    from ..engine.embedding.embedder import resolve_device
    from ..engine.loop.generator import gpu_layers

    problems: list[str] = []
    llm = _where(gpu_layers, device, problems)
    embedder = _where(resolve_device, device, problems)
    return {
        "requested": device,
        "llm": llm,
        "embedder": embedder,
        "summary": f"llm {llm} · embedder {embedder}",
        "problems": problems,
    }
