"""The retrieval setting: which rankings a search reads (``retrieval`` in the settings)."""

from __future__ import annotations

# hybrid first: the default, chosen by measurement (docs/evaluation.md, "Hybrid retrieval").
RETRIEVAL_MODES = ("hybrid", "dense", "lexical")


def build_retriever(mode: str, embedder, index):
    """A retriever of ``mode`` over a ``PassageIndex``, with ``retrieve`` and ``retrieve_many``.
    Imported here, not above: the settings read ``RETRIEVAL_MODES`` without loading faiss."""
    from .hybrid import HybridRetriever
    from .lexical import LexicalRetriever
    from .retriever import Retriever

    if mode == "dense":
        return Retriever(embedder, index)
    if mode == "lexical":
        return LexicalRetriever(index)
    if mode == "hybrid":
        return HybridRetriever(Retriever(embedder, index), LexicalRetriever(index))
    raise ValueError(f"retrieval must be one of {', '.join(RETRIEVAL_MODES)}, not {mode!r}")
