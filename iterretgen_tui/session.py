"""The models and folder index one conversation uses: loaded once, asked many times.

This is the narrow interface the TUI and the `ask` command drive; it holds no UI code.
Heavy imports (torch, llama.cpp) happen inside ``load_models`` so callers can show a
first frame before paying for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from . import models, paths
from .config import Settings
from .engine.cores import CoreShare
from .engine.loop import iterretgen
from .engine.loop.conversation import Turn
from .engine.loop.events import Event
from .engine.loop.options import LoopOptions


class Session:
    def __init__(self, settings: Settings, *, fallback_reader: bool = False) -> None:
        self.settings = settings
        # Reader fallback (models.choose_reader): on for chat and ask, off for eval.
        self.fallback_reader = fallback_reader
        self.reader_note = ""
        self.embedder = None
        self.generator = None
        self.index = None
        self.folder: Path | None = None
        self.retriever = None
        self.cores = CoreShare()  # indexing takes half the LLM's cores while it runs

    def load_models(self, status: Callable[[str], None] = lambda message: None) -> None:
        if self.settings.llm_server:  # the reader runs elsewhere: nothing to find or load here
            self.generator = self.served_reader(status)  # fails before the slow load
            self.load_embedder(status)
        else:
            reader = self.chosen_reader(status)  # fails before the slow load
            self.load_embedder(status)
            self.load_reader(reader.path, status)
        status("models ready")

    def chosen_reader(self, status: Callable[[str], None] = lambda message: None) -> models.Reader:
        """The local reader the settings name (or its fallback), said when it is a fallback."""
        settings = self.settings
        reader = models.choose_reader(settings.llm, fallback=self.fallback_reader, folders=settings.model_folders)
        self.reader_note = reader.note
        if reader.note:
            status(reader.note)
        return reader

    def load_reader(self, llm_path: Path, status: Callable[[str], None] = lambda message: None) -> None:
        from .engine.loop.conversation import rewrite_prefix
        from .engine.loop.generator import LlamaGenerator
        from .engine.loop.prompts import every_demo_prefix

        settings = self.settings
        status(f"loading LLM {llm_path.name}")
        try:
            self.generator = LlamaGenerator(
                llm_path,
                n_ctx=settings.n_ctx,
                device=settings.device,
                cores=self.cores,
                repeat_penalty=settings.repeat_penalty,
                presence_penalty=settings.presence_penalty,
                passage_order=models.passage_order(llm_path),
                prefixes=[*every_demo_prefix(), rewrite_prefix()],
                state_dir=paths.cache_dir() / "prompt-states",
            )
        except ValueError as exc:  # llama.cpp refuses a damaged or unsupported file
            raise models.ModelError(f"cannot load {llm_path}: {exc}") from None

    def served_reader(self, status: Callable[[str], None]):
        """The reader an OpenAI-compatible server runs: the model --llm names, or with
        --llm left at its default, the first one the server lists."""
        from .engine.loop.served import ServedGenerator, first_model

        url, model = self.settings.llm_server, self.settings.llm
        status(f"connecting to the reader server at {url}")
        if model == models.DEFAULT_LLM:
            model = first_model(url)
            status(f"reading with {model}, the first model {url} lists (--llm NAME picks another)")
        return ServedGenerator(
            url,
            model,
            n_ctx=self.settings.n_ctx,
            passage_order=models.passage_order(Path(model)),
            repeat_penalty=self.settings.repeat_penalty,
            presence_penalty=self.settings.presence_penalty,
        )

    def warm_reader(self) -> None:
        """Evaluate the reader's demos ahead of the first question (background work)."""
        self.generator.warm()

    def read_ahead(self, turns: Sequence[Turn], stop: threading.Event | None = None, *, disk: bool = False) -> None:
        """Evaluate what the next question's prompts start with, the conversation so far,
        while the user reads the answer (background work): its draft's, where it leans on
        the turns (kept aside), then its rewrite's. A follow-up then evaluates only its own
        words and its passages. Once ``stop`` is set, no further step is taken. ``disk``:
        both are kept and saved for the process that asks the follow-up (``recall_ahead``),
        the rewrite's first: it is what a follow-up needs first, and it may stop this early."""
        if self.generator is None or not turns:
            return
        draft, rewrite = self.ahead_of(turns)
        for messages in (rewrite, draft) if disk else (draft, rewrite):
            if stop is not None and stop.is_set():
                return
            self.generator.prefill(messages, keep=disk or messages is draft, disk=disk)

    def recall_ahead(self, turns: Sequence[Turn]) -> None:
        """Take up what another process read ahead after ``turns`` and saved (`ask`'s
        read-ahead, read_ahead.py), as far as it got."""
        if self.generator is None or not turns:
            return
        for messages in self.ahead_of(turns):
            self.generator.recall(messages)

    def ahead_of(self, turns: Sequence[Turn]) -> tuple[list, list]:
        """The next question's draft start (where it leans on the turns) and rewrite start."""
        from .engine.loop.conversation import next_rewrite

        return iterretgen.next_draft_start(turns, self.generator, self.settings.loop), next_rewrite(turns)

    def load_embedder(self, status: Callable[[str], None] = lambda message: None) -> None:
        """The embedder alone (enough for `index`); its identity names the folder's index."""
        from .engine.embedding.backends import load_embedder

        settings = self.settings
        embedder_path = models.resolve_embedder(settings.embedder)
        query_path = models.resolve_embedder(settings.query_encoder) if settings.query_encoder else None
        status(f"loading embedder {settings.embedder} ({settings.embed_backend})")
        # "auto" measures the backends on this CPU once, before the first index.
        self.embedder = load_embedder(
            embedder_path,
            backend=settings.embed_backend,
            device=settings.device,
            query_path=query_path,
            status=status,
            metric=models.embedder_metric(settings.embedder),
            name=settings.embedder,
        )
        # Measured with the model's own query encoder: an adapted one scores otherwise.
        self.embedder.unsaid_below = 0.0 if query_path else models.unsaid_below(settings.embedder)

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
        from .engine.retrieval.modes import build_retriever

        if self.embedder is None:
            raise RuntimeError("load_models() first")
        folder = Path(folder).expanduser().resolve()
        # Re-indexing the same folder keeps its open index: an answer may be searching it.
        same = self.index is not None and self.folder == folder
        index = self.index if same else open_folder_index(folder, self.embedder)
        report = sync_folder(
            folder,
            index,
            self.embedder,
            chunking=self.settings.chunking,
            ocr=self.settings.ocr,
            cancel=cancel,
            progress=progress,
            on_wait=on_wait,
            cores=self.cores,
        )
        if self.index is not None and self.index is not index:
            self.index.close()
        self.folder, self.index = folder, index
        self.retriever = build_retriever(self.settings.retrieval, self.embedder, index)
        return report

    def ask(
        self,
        question: str,
        *,
        cancel: threading.Event,
        options: LoopOptions | None = None,
        turns: Sequence[Turn] = (),
    ) -> Iterator[Event]:
        """``turns``: the conversation before the question, oldest first."""
        if self.retriever is None or self.generator is None:
            raise RuntimeError("load_models() and open_folder() first")
        return iterretgen.run(
            question,
            retriever=self.retriever,
            generator=self.generator,
            options=options or self.settings.loop,
            cancel=cancel,
            turns=turns,
        )

    def info(self) -> dict:
        return {
            "llm": getattr(self.generator, "name", self.settings.llm),
            "embedder": getattr(self.embedder, "name", self.settings.embedder),
            "embed_backend": getattr(self.embedder, "backend", ""),
            "device": getattr(self.generator, "device", self.settings.device),
            "llm_server": self.settings.llm_server,  # where the reader runs, when not here
            "passages": len(self.index) if self.index is not None else 0,
            "files": self.index.file_count() if self.index is not None else 0,
            "folder": str(self.folder) if self.folder else "",
            "llm_note": self.reader_note,
        }

    # The TUI's welcome and stale-source marks (engine/indexing/examples.py, staleness.py).

    def examples(self, n: int = 3) -> list[str]:
        from .engine.indexing.examples import example_questions

        return example_questions(self.index.headings(), n) if self.index is not None else []

    def stale_sources(self, sources: Iterable[str]) -> dict[str, str]:
        from .engine.indexing.staleness import stale_sources

        sources = list(sources)
        return stale_sources(self.index.file_records(sources), sources) if self.index is not None else {}
