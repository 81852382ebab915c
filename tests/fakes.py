"""Fakes at the model boundary: deterministic, fast, no weights."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from iterretgen_tui.engine.embedding.embedder import Embedder
from iterretgen_tui.engine.loop.options import LoopOptions
from iterretgen_tui.engine.passages import Passage


class HashEmbedder(Embedder):
    """Bag of hashed words, L2-normalised: texts sharing words get close vectors."""

    def __init__(self, dim: int = 64) -> None:
        self.name = "hash"
        self.dim = dim
        self.metric = "cosine"
        self.calls: list[list[str]] = []

    def embed_batch(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim
                out[row, bucket] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


class ListIndex:
    """An in-memory exact inner-product index over a list of passages."""

    def __init__(self, embedder: Embedder, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        self.vectors = embedder.embed_batch([p.text for p in self.passages])

    def search(self, vectors: np.ndarray, k: int) -> list[list[Passage]]:
        scores = vectors @ self.vectors.T
        results = []
        for row in scores:
            order = np.argsort(-row, kind="stable")[:k]
            results.append([self.passages[i].with_score(row[i]) for i in order])
        return results


class ScriptedGenerator:
    """Replies with scripted texts in order (the last one repeats), word by word.

    ``reply`` may also be a function of the messages, to answer from the prompt.
    """

    def __init__(
        self,
        replies: Sequence[str] | Callable[[Sequence[dict]], str],
        *,
        n_ctx: int = 4096,
        delay: float = 0.0,
    ) -> None:
        self.name = "scripted"
        self.identity = "scripted"
        self.n_ctx = n_ctx
        self.passage_order = "new-first"
        self.replies = replies
        self.delay = delay
        self.prompts: list[list[dict]] = []
        self.tokens_emitted = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(self, messages, *, max_tokens: int, cancel: threading.Event) -> Iterator[str]:
        self.prompts.append(list(messages))
        if callable(self.replies):
            reply = self.replies(messages)
        else:
            reply = self.replies[min(len(self.prompts) - 1, len(self.replies) - 1)]
        for i, word in enumerate(reply.split(" ")[:max_tokens]):
            if cancel.is_set():
                return
            if self.delay:
                cancel.wait(self.delay)
            self.tokens_emitted += 1
            yield word if i == 0 else " " + word


def paper_options(**changes) -> LoopOptions:
    """The paper's loop (its own query, nothing carried forward), which these tests script."""
    return LoopOptions(**{"keep_passages": False, "query_mode": "draft", **changes})
