"""What `--device` turns into: where the chat model and the embedder actually run.

llama.cpp offloads layers only when llama-cpp-python was compiled with a GPU backend, and
sentence-transformers uses CUDA only when torch was built with it; `auto` picks the GPU
where each can use one, so the two may differ.
"""

from __future__ import annotations

CUDA_BUILD_HINT = 'CMAKE_ARGS="-DGGML_CUDA=on" pip install --force-reinstall --no-cache-dir llama-cpp-python'


def llama_offload() -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def torch_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def describe_devices(device: str) -> dict:
    """For `models list` and the status line: {"requested", "llm", "embedder", "summary",
    "problems"}; a problem is a requested GPU that a library cannot use (loading a model
    with it fails with that message, so describing must not)."""
    offload, cuda = llama_offload(), torch_cuda()
    llm = "cuda" if device != "cpu" and offload else "cpu"
    embedder = "cuda" if device != "cpu" and cuda else "cpu"
    problems = []
    if device == "cuda" and not offload:
        problems.append(f"llama-cpp-python was built without GPU support, the chat model runs on the CPU: {CUDA_BUILD_HINT}")
    if device == "cuda" and not cuda:
        problems.append("torch was built without CUDA: the embedder cannot start on the GPU (install a CUDA build of torch)")
    return {
        "requested": device,
        "llm": llm,
        "embedder": embedder,
        "summary": f"llm {llm} · embedder {embedder}",
        "problems": problems,
    }
