"""Query text -> ranked passages, over any index that searches vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..embedding.embedder import Embedder
from ..passages import Passage


class VectorSearch(Protocol):
    def search(self, vectors: np.ndarray, k: int) -> list[list[Passage]]: ...


class Retriever:
    def __init__(self, embedder: Embedder, index: VectorSearch) -> None:
        self.embedder = embedder
        self.index = index

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]:
        if not queries:
            return []
        return self.index.search(self.embedder.embed_queries(queries), k)

    def retrieve(self, query: str, k: int) -> list[Passage]:
        return self.retrieve_many([query], k)[0]
