"""Small typed messages the workers post to the app (thread-safe via ``post_message``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # the indexer pulls in FAISS: not at start-up
    from ..engine.indexing.indexer import IndexProgress


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
    skipped: tuple[str, ...] = ()  # "path: reason" of what the indexer could not read
    not_read: str = ""  # the same counted by kind: "2 files and 1 folder"
    removed: str = ""  # the indexes of superseded embedder schemes removed, in a sentence
    session: object = None  # the session that is now ready; None when preparing failed
    settings: object = None  # the settings it was built from
    examples: tuple[str, ...] = ()  # questions drawn from the folder's headings, for the welcome


class FeedReady(Message):
    """The answer worker put something into the app's feed (see driver.py)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FeedReady)
