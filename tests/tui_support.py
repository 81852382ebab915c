"""A session for the TUI tests: the real Session and Iter-RetGen loop, with fake models
(hashed-word retrieval, scripted replies) and an in-memory corpus."""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from iterretgen_tui import models
from iterretgen_tui.config import Settings
from iterretgen_tui.engine.indexing.documents import Skip
from iterretgen_tui.engine.indexing.index import FileRecord
from iterretgen_tui.engine.indexing.indexer import IndexProgress, IndexReport
from iterretgen_tui.engine.loop.options import LoopOptions
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.retriever import Retriever
from iterretgen_tui.session import Session
from iterretgen_tui.ui.app import ChatApp

from .fakes import HashEmbedder, ListIndex, ScriptedGenerator

CORPUS = [
    Passage(
        1,
        "The Eiffel Tower stands in Paris and was built by Gustave Eiffel.",
        "Eiffel Tower",
        "docs/eiffel.md",
        "lines 1-4",
    ),
    Passage(2, "Gustave Eiffel was born in Dijon in 1832.", "Gustave Eiffel", "docs/gustave.pdf", "p. 2"),
    Passage(3, "Dijon is famous for its mustard.", "Dijon", "docs/dijon.txt", "lines 8-9"),
    Passage(4, "Paris is the capital of France.", "France", "docs/france.md", "lines 1-3"),
    Passage(5, "Bananas are yellow fruit.", "Bananas", "docs/bananas.md", "lines 1-2"),
]
QUESTION = "Where was the builder of the Eiffel Tower born?"
DRAFTS = [
    "The Eiffel Tower was built by Gustave Eiffel. So the answer is Paris.",
    "Gustave Eiffel was born in Dijon in 1832. So the answer is Dijon.",
    "Gustave Eiffel was born in Dijon. So the answer is Dijon.",
]


class MemoryIndex(ListIndex):
    """The fake corpus, with the file records the real index keeps (``records``: for
    sources that are real files, so the stale-source marks can be tested)."""

    def __init__(self, embedder, passages, records: dict[str, FileRecord] | None = None) -> None:
        super().__init__(embedder, passages)
        self.records = records or {}

    def __len__(self) -> int:
        return len(self.passages)

    def file_count(self) -> int:
        return len({p.source for p in self.passages})

    def headings(self, limit: int = 1000) -> list[tuple[str, str, int]]:
        counts = Counter((p.title, p.source) for p in self.passages)  # most_common keeps first-seen order on ties
        return [(title, source, n) for (title, source), n in counts.most_common(limit)]

    def file_records(self, paths) -> dict[str, FileRecord]:
        return {path: self.records[path] for path in paths if path in self.records}


def records_of(corpus) -> dict[str, FileRecord]:
    """File records as indexing would write them now, for sources that are files on disk."""
    records = {}
    for source in {p.source for p in corpus}:
        if os.path.isfile(source):
            st = os.stat(source)
            records[source] = FileRecord(source, st.st_size, st.st_mtime_ns, st.st_ctime_ns, "hash")
    return records


class HeldGenerator(ScriptedGenerator):
    """Scripted replies; call number ``hold_call`` pauses before token ``hold_token``
    until ``release`` is set (or the answer is cancelled)."""

    def __init__(self, replies, *, hold_call: int = 0, hold_token: int = 0, **kwargs) -> None:
        super().__init__(replies, **kwargs)
        self.hold_call, self.hold_token = hold_call, hold_token
        self.held = threading.Event()
        self.release = threading.Event()
        self.name = "scripted-llm"
        self.device = "cpu"
        self.warmed = threading.Event()
        self.prefilled: list = []  # what was read ahead, in order

    def warm(self) -> None:
        self.warmed.set()

    def prefill(self, messages, *, keep: bool = False, disk: bool = False) -> None:
        self.prefilled.append(messages)

    def recall(self, messages) -> bool:
        return False  # nothing read ahead by another process

    def stream(self, messages, *, max_tokens, cancel):
        for i, piece in enumerate(super().stream(messages, max_tokens=max_tokens, cancel=cancel)):
            if len(self.prompts) == self.hold_call and i == self.hold_token:
                self.held.set()
                while not (self.release.wait(0.02) or cancel.is_set()):
                    pass
                if cancel.is_set():
                    return
            yield piece


class FakeSession(Session):
    def __init__(
        self,
        settings: Settings,
        *,
        generator: HeldGenerator | None = None,
        corpus: list[Passage] = CORPUS,
        loaded: threading.Event | None = None,
        load_error: Exception | None = None,
        hold_index: threading.Event | None = None,
        skipped: tuple[Skip, ...] = (),
    ) -> None:
        super().__init__(settings)
        self.fake_generator = generator or HeldGenerator(DRAFTS)
        self.corpus = corpus
        self.loaded = loaded
        self.load_error = load_error
        self.hold_index = hold_index  # indexing pauses after its first progress until set
        self.skipped = skipped  # files each sync reports it could not read
        self.indexed = 0  # how many times the folder was indexed
        self.asked: list[tuple[str, LoopOptions]] = []
        self.turns: list[tuple] = []  # the turns each question was asked after

    def load_models(self, status: Callable[[str], None] = lambda text: None) -> None:
        if self.settings.llm == models.DEFAULT_LLM:  # read in its place until pulled, as the chat's Session does
            self.reader_note = models.choose_reader(self.settings.llm, fallback=True).note
        status("loading LLM scripted-llm")
        if self.loaded is not None:
            self.loaded.wait(10)
        if self.load_error is not None:
            raise self.load_error
        self.embedder = HashEmbedder()
        self.embedder.name = "hash-embedder"
        self.generator = self.fake_generator

    def open_folder(self, folder: Path, *, progress=None, cancel=None, on_wait=None):
        if progress is not None:
            progress(IndexProgress(1, 2, 3, 10.0, 0.2, "docs/eiffel.md"))
        if self.hold_index is not None:
            self.hold_index.wait(10)
        self.indexed += 1
        self.folder = Path(folder)
        self.index = MemoryIndex(self.embedder, self.corpus, records_of(self.corpus))
        self.retriever = Retriever(self.embedder, self.index)
        return IndexReport(indexed=len(self.corpus), passages=len(self.corpus), skipped=list(self.skipped))

    def ask(self, question, *, cancel, options=None, turns=()):
        self.asked.append((question, options))
        self.turns.append(tuple(turns))
        return super().ask(question, cancel=cancel, options=options, turns=turns)


# The scripted drafts tell the paper's story: iteration 2 retrieves with the draft alone.
SCRIPTED = Settings(
    llm="scripted-llm",
    embedder="hash-embedder",
    device="cpu",
    iterations=3,
    top_k=2,
    query_mode="draft",
    keep_passages=False,
)


def make_app(
    tmp_path: Path, settings: Settings | None = None, *, folder: Path | None = None, **session_kwargs
) -> tuple[ChatApp, list[FakeSession]]:
    """The app over a folder (the fake session reads none); the list receives the
    session once the app builds it."""
    sessions: list[FakeSession] = []

    def factory(settings: Settings) -> FakeSession:
        sessions.append(FakeSession(settings, **session_kwargs))
        return sessions[-1]

    folder = folder or tmp_path / "docs"
    settings = settings or SCRIPTED
    return ChatApp(settings, folder, factory), sessions


async def wait_for(pilot, condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Let the app run until ``condition()`` holds; fail the test after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.02)


def pilot_test(test):
    """Run an async test in its own event loop (no pytest async plugin needed)."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run
