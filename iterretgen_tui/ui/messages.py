"""Small typed messages the workers post to the app (thread-safe via ``post_message``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from ..engine.events import Event

if TYPE_CHECKING:  # the indexer pulls in FAISS: not at start-up
    from ..engine.indexer import IndexProgress


@dataclass
class Activity(Message):
    """What the background is doing now, for the status line."""

    text: str


@dataclass
class IndexProgressed(Message):
    progress: IndexProgress

    def can_replace(self, message: Message) -> bool:
        # A flood of progress collapses to the newest: only the latest is worth drawing.
        return isinstance(message, IndexProgressed)


@dataclass
class Prepared(Message):
    """Models are loaded and the folder is indexed (``error`` empty) or it failed."""

    info: dict
    error: str = ""


@dataclass
class EngineEvent(Message):
    """One event of run ``run``, except tokens (those arrive as ``DraftChunk``)."""

    run: int
    event: Event


@dataclass
class DraftChunk(Message):
    """Tokens of iteration ``t`` gathered over a short interval, in order."""

    run: int
    t: int
    text: str


@dataclass
class AnswerFailed(Message):
    run: int
    error: str
