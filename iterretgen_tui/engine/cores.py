"""How many CPU threads the chat model may take right now.

llama.cpp's threads spin while they wait for each other, so when they share the cores
with other heavy work (the indexer's embedder) every step waits for a descheduled thread:
decoding slowed 10-100x here, far worse than leaving half the cores idle. Alone, though,
the model should have all of them (docs/performance.md). ``CoreShare`` is the one object
the indexer and the generator both hold: indexing marks itself busy, and the generator
reads the count before each answer and between tokens.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

from .machine import usable_cores


def half_the_cores() -> int:
    """The threads one heavy job takes while another runs beside it."""
    return max(usable_cores() // 2, 1)


class CoreShare:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexing = 0  # running syncs: a folder's and a watch's may overlap

    @contextmanager
    def indexing(self) -> Iterator[None]:
        with self._lock:
            self._indexing += 1
        try:
            yield
        finally:
            with self._lock:
                self._indexing -= 1

    @property
    def busy(self) -> bool:
        return self._indexing > 0

    def llm_threads(self) -> int:
        return half_the_cores() if self.busy else usable_cores()
