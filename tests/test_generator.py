"""LlamaGenerator with the real embedded GGUF: chat template, streaming, cancel."""

from __future__ import annotations

import sys
import threading

import pytest

from iterretgen_tui import models
from iterretgen_tui.engine.embedding.embedder import resolve_device
from iterretgen_tui.engine.errors import DeviceUnavailable
from iterretgen_tui.engine.loop.generator import LlamaGenerator, gpu_layers
from iterretgen_tui.engine.loop.prompts import build_prompt


@pytest.fixture(scope="module")
def generator() -> LlamaGenerator:
    return LlamaGenerator(models.resolve_llm(models.EMBEDDED_LLM), n_ctx=2048, device="cpu")


def test_streams_a_greedy_answer_deterministically(generator):
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    first = "".join(generator.stream(messages, max_tokens=12, cancel=threading.Event()))
    second = "".join(generator.stream(messages, max_tokens=12, cancel=threading.Event()))
    assert first.strip() and first == second


def test_cancel_stops_decoding(generator):
    prompt = build_prompt("Who wrote Hamlet?", [], count_tokens=generator.count_tokens, budget=1500)
    cancel = threading.Event()
    pieces = []
    for piece in generator.stream(prompt.messages, max_tokens=200, cancel=cancel):
        pieces.append(piece)
        if len(pieces) == 3:
            cancel.set()
    assert len(pieces) == 3
    # llama.cpp evaluated the prompt and at most a token past the cancel: nothing more was computed.
    evaluated = generator._llm.n_tokens
    prompt_tokens = prompt.tokens
    assert evaluated <= prompt_tokens + 3 + 64  # 64: slack for the chat template's own tokens


def test_a_reply_begun_in_the_last_message_is_continued(generator):
    asked = [{"role": "user", "content": "Count from one to ten in words, separated by commas."}]
    begun = {"role": "assistant", "content": "one, two, three, four,"}
    reply = "".join(generator.stream([*asked, begun], max_tokens=8, cancel=threading.Event()))
    assert reply.startswith(" five, six")  # where the reply left off, not a new turn
    anew = "".join(generator.stream(asked, max_tokens=8, cancel=threading.Event()))
    assert not anew.startswith(" five")


def test_counts_tokens(generator):
    assert 0 < generator.count_tokens("Iterative retrieval helps.") < 10
    assert generator.n_ctx == 2048


def test_cuda_request_without_gpu_builds_is_a_clear_error():
    import llama_cpp
    import torch

    if not llama_cpp.llama_supports_gpu_offload():
        with pytest.raises(DeviceUnavailable, match="without GPU support"):
            gpu_layers("cuda")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailable, match="no usable CUDA"):
            resolve_device("cuda")
    assert gpu_layers("cpu") == 0 and resolve_device("cpu") == "cpu"


def test_auto_device_without_a_gpu_driver_needs_no_torch(monkeypatch, tmp_path):
    from iterretgen_tui.engine.embedding import embedder as embedder_module

    monkeypatch.setattr(embedder_module, "_GPU_DRIVERS", (tmp_path / "nvidia", tmp_path / "kfd"))
    monkeypatch.setattr(embedder_module.sys, "platform", "linux")
    monkeypatch.setitem(sys.modules, "torch", None)  # importing it would fail
    assert resolve_device("auto") == "cpu"


def test_where_amx_is_built_in_the_weights_load_into_plain_buffers(monkeypatch):
    import llama_cpp.llama_cpp as lib

    from iterretgen_tui.engine.loop import llama_load

    defaults = lib.llama_model_default_params
    monkeypatch.setattr(llama_load, "amx_built_in", lambda: True)
    llm = llama_load.load_llama(model_path=str(models.resolve_llm(models.EMBEDDED_LLM)), n_ctx=512, verbose=False)
    assert llm.model_params.use_extra_bufts is False
    assert lib.llama_model_default_params is defaults  # restored for the next load
    assert llm.create_completion("The capital of France is", max_tokens=4, temperature=0.0)["choices"][0]["text"]


def test_the_probability_of_yes_comes_from_the_first_tokens_logits(generator):
    def told(word: str) -> list[dict]:
        return [{"role": "user", "content": f"Say {word}."}]

    yes, no = generator.yes_probability(told("yes")), generator.yes_probability(told("no"))
    assert 0.0 <= no < 0.5 < yes <= 1.0  # the embedded SmolLM2 does as it is told
    # Nothing is decoded past that token: the next reply streams as it would have.
    assert "".join(generator.stream(told("yes"), max_tokens=2, cancel=threading.Event())).strip()
