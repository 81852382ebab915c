"""How many CPU threads the chat model may take right now.

llama.cpp's threads spin while they wait for each other, so when they share the cores
with other heavy work every step waits for a descheduled thread: decoding crawls, far
slower than on fewer threads (docs/performance.md). Alone, though, the model
should have all of them. ``CoreShare`` is the one object the indexer and the generator
both hold: indexing marks itself busy and halves the model's share; before each prompt
the generator also looks at what else is runnable on the machine (other programs, the
UI) and leaves those tasks their cores.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .machine import usable_cores

_LOADAVG = Path("/proc/loadavg")
_TASKS = Path("/proc/self/task")
_SAMPLES = 5  # a few looks a couple of milliseconds apart: one runnable blip is not load


def half_the_cores() -> int:
    """The threads one heavy job takes while another runs beside it."""
    return max(usable_cores() // 2, 1)


def others_running() -> int:
    """Tasks of other programs that are runnable now (Linux's /proc/loadavg less this
    process's own runnable threads, median of a few looks); 0 where the system does not say.
    Our own threads do not count: indexing says so itself (``CoreShare.indexing``), and the
    encoder's and FAISS's worker threads spin for a moment after a search, which would
    otherwise halve the model's threads right after every retrieval."""
    counts = []
    for n in range(_SAMPLES):
        try:
            runnable = int(_LOADAVG.read_text().split()[3].split("/")[0])
        except (OSError, IndexError, ValueError):
            return 0
        counts.append(runnable - max(own_runnable_threads(), 1))  # the caller is one of ours
        if n < _SAMPLES - 1:
            time.sleep(0.002)
    return max(sorted(counts)[len(counts) // 2], 0)


def own_runnable_threads() -> int:
    """This process's threads in the running state (Linux's /proc/self/task); 0 where unknown."""
    count = 0
    for stat in _TASKS.glob("*/stat"):
        try:
            # "pid (comm) S ...": the state follows the last ")", as comm may hold one
            count += stat.read_text().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return count


class CoreShare:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexing = 0  # running syncs: a folder's and a watch's may overlap
        self._others = 0  # other runnable tasks when last looked

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

    def look_around(self) -> None:
        """Count what else runs; call it while the model's own threads are idle (before a
        prompt), or they would count themselves."""
        self._others = others_running()

    def llm_threads(self) -> int:
        """All the cores the others leave free; at most half while indexing runs; at least one."""
        ceiling = half_the_cores() if self.busy else usable_cores()
        return max(min(ceiling, usable_cores() - self._others), 1)
