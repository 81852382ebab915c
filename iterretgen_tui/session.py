"""The models and folder index one conversation uses: loaded once, asked many times.

This is the narrow interface the TUI and the `ask` command drive; it holds no UI code.
Heavy imports (torch, llama.cpp) happen inside ``load_models`` so callers can show a
first frame before paying for them.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from . import models
from .config import Settings
from .engine.loop import iterretgen
from .engine.loop.events import Event


class Session:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.embedder = None
        self.generator = None
        self.index = None
        self.folder: Path | None = None
        self.retriever = None

    def load_models(self, status: Callable[[str], None] = lambda message: None) -> None:
        from .engine.loop.generator import LlamaGenerator

        settings = self.settings
        llm_path = models.resolve_llm(settings.llm)  # a missing LLM fails before the slow load
        self.load_embedder(status)
        status(f"loading LLM {llm_path.name}")
        try:
            self.generator = LlamaGenerator(
                llm_path, n_ctx=settings.n_ctx, device=settings.device,
                repeat_penalty=settings.repeat_penalty, presence_penalty=settings.presence_penalty,  # issue 17
            )
        except ValueError as exc:  # llama.cpp refuses a damaged or unsupported file
            raise models.ModelError(f"cannot load {llm_path}: {exc}") from None
        status("models ready")

    def load_embedder(self, status: Callable[[str], None] = lambda message: None) -> None:
        """The embedder alone (enough for `index`); its identity names the folder's index."""
        from .engine.embedding import embedder, onnx_embedder

        settings = self.settings
        embedder_path = models.resolve_embedder(settings.embedder)
        query_path = models.resolve_embedder(settings.query_encoder) if settings.query_encoder else None
        folders = [embedder_path] + ([query_path] if query_path else [])
        backend = onnx_embedder.resolve_backend(settings.embed_backend, settings.device, folders)
        status(f"loading embedder {settings.embedder} ({backend})")
        options = dict(metric=models.embedder_metric(settings.embedder), query_path=query_path, name=settings.embedder)
        if backend == "torch":
            self.embedder = embedder.SentenceEmbedder(embedder_path, device=settings.device, **options)
        else:
            variant = onnx_embedder.BACKEND_VARIANTS[backend]
            self.embedder = onnx_embedder.OnnxEmbedder(embedder_path, variant=variant, status=status, **options)

    def open_folder(
        self,
        folder: Path,
        *,
        progress=None,
        cancel: threading.Event | None = None,
        on_wait: Callable[[str], None] | None = None,
    ):
        """Index ``folder`` (incrementally) and make it the one questions are answered from.
        ``on_wait`` hears once if another process is writing the index and we wait for it."""
        from .engine.indexing.indexer import open_folder_index, sync_folder
        from .engine.retrieval.retriever import Retriever

        if self.embedder is None:
            raise RuntimeError("load_models() first")
        folder = Path(folder).expanduser().resolve()
        index = open_folder_index(folder, self.embedder)
        report = sync_folder(
            folder,
            index,
            self.embedder,
            words=self.settings.passage_words,
            overlap=self.settings.passage_overlap,
            cancel=cancel,
            progress=progress,
            on_wait=on_wait,
        )
        if self.index is not None and self.index is not index:
            self.index.close()
        self.folder, self.index = folder, index
        self.retriever = Retriever(self.embedder, index)
        return report

    def ask(self, question: str, *, cancel: threading.Event, **overrides) -> Iterator[Event]:
        if self.retriever is None or self.generator is None:
            raise RuntimeError("load_models() and open_folder() first")
        settings = replace(self.settings, **overrides) if overrides else self.settings
        return iterretgen.run(
            question,
            retriever=self.retriever,
            generator=self.generator,
            iterations=settings.iterations,
            top_k=settings.top_k,
            adaptive=settings.adaptive,
            keep_passages=settings.keep_passages,
            query_mode=settings.query_mode,
            max_tokens=settings.max_tokens,
            cancel=cancel,
        )

    def info(self) -> dict:
        return {
            "llm": getattr(self.generator, "name", self.settings.llm),
            "embedder": getattr(self.embedder, "name", self.settings.embedder),
            "device": getattr(self.generator, "device", self.settings.device),
            "passages": len(self.index) if self.index is not None else 0,
            "folder": str(self.folder) if self.folder else "",
        }
