"""What `--device` turns into: where the chat model and the embedder actually run.

llama.cpp offloads layers only when llama-cpp-python was compiled with a GPU backend, and
sentence-transformers uses CUDA only when torch was built with it; `auto` picks the GPU
where each can use one, so the two may differ.
"""

from __future__ import annotations

from .engine.embedder import resolve_device
from .engine.generator import gpu_layers

CUDA_BUILD_HINT = 'CMAKE_ARGS="-DGGML_CUDA=on" pip install --force-reinstall --no-cache-dir llama-cpp-python'


def llama_offload() -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def torch_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def describe_devices(device: str) -> dict:
    """For `models list` and the status line: {"requested", "llm", "embedder", "summary",
    "problems"}; a problem is a requested GPU that a library cannot use."""
    offload = llama_offload()
    llm = "cuda" if gpu_layers(device) and offload else "cpu"
    problems = []
    if device == "cuda" and not offload:
        problems.append(f"llama-cpp-python was built without GPU support, the chat model runs on the CPU: {CUDA_BUILD_HINT}")
    if device == "cuda" and not torch_cuda():
        problems.append("torch was built without CUDA: the embedder cannot start on the GPU (install a CUDA build of torch)")
    embedder = resolve_device(device)
    return {
        "requested": device,
        "llm": llm,
        "embedder": embedder,
        "summary": f"llm {llm} · embedder {embedder}",
        "problems": problems,
    }
