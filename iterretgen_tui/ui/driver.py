"""The app's side of the session contract, and the pump that turns the engine's event
stream into a modest number of UI messages (tokens are batched by time)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Protocol

from textual.message import Message

from ..engine.events import Event, Token
from .messages import DraftChunk, EngineEvent

FLUSH_SECONDS = 0.1  # tokens reach the screen at most ten times a second


class SessionLike(Protocol):
    """What the TUI needs from ``iterretgen_tui.session.Session`` (tests pass a fake)."""

    def load_models(self, status: Callable[[str], None]) -> None: ...

    def open_folder(self, folder: Path, *, progress=None, cancel: threading.Event | None = None): ...

    def ask(self, question: str, *, cancel: threading.Event, **overrides) -> Iterator[Event]: ...

    def info(self) -> dict: ...


def pump(
    events: Iterator[Event],
    *,
    run: int,
    post: Callable[[Message], object],
    cancel: threading.Event,
    interval: float = FLUSH_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Post every event of ``events``; consecutive tokens go out joined, at most once per
    ``interval``. Stops at once when ``cancel`` is set, closing the generator so the
    model stops decoding."""
    pending: list[str] = []
    pending_t = 0
    last = clock()

    def flush() -> None:
        nonlocal last
        if pending:
            post(DraftChunk(run, pending_t, "".join(pending)))
            pending.clear()
        last = clock()

    try:
        for event in events:
            if cancel.is_set():
                return
            if isinstance(event, Token):
                if pending and event.t != pending_t:
                    flush()
                pending_t = event.t
                pending.append(event.text)
                if clock() - last >= interval:
                    flush()
            else:
                flush()
                post(EngineEvent(run, event))
        flush()
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
