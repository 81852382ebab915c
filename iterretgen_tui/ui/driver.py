"""The app's side of the session contract, and the feed that carries the engine's event
stream from the answer worker to the UI.

The worker puts every event into one ordered ``Feed`` (consecutive tokens joined into a
chunk) and wakes the UI only for events other than tokens; a UI timer wakes it for
tokens at most ten times a second. So the screen never redraws per token, a stalled
model never leaves text waiting longer than that, and order is kept across both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

from ..engine.loop.conversation import Turn
from ..engine.loop.events import Event, Token
from ..engine.loop.options import LoopOptions

FLUSH_SECONDS = 0.1
T = TypeVar("T")


class SessionLike(Protocol):
    """What the TUI needs from ``iterretgen_tui.session.Session`` (tests pass a fake)."""

    def load_models(self, status: Callable[[str], None]) -> None: ...

    def open_folder(self, folder: Path, *, progress=None, cancel: threading.Event | None = None): ...

    def ask(
        self, question: str, *, cancel: threading.Event, options: LoopOptions | None = None, turns: Sequence[Turn] = ()
    ) -> Iterator[Event]: ...

    def info(self) -> dict: ...

    def warm_reader(self) -> None: ...

    def read_ahead(self, turns: Sequence[Turn], stop: threading.Event | None = None) -> None: ...


class Tokens(NamedTuple):
    """Consecutive tokens of iteration ``t``."""

    t: int
    text: str


@dataclass(frozen=True)
class Failed:
    error: str


Item = Event | Tokens | Failed


class Feed:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[tuple[int, Item]] = []

    def __bool__(self) -> bool:
        return bool(self._items)

    def put(self, run: int, item: Item) -> None:
        with self._lock:
            if isinstance(item, Token):
                last = self._items[-1] if self._items else None
                if last and last[0] == run and isinstance(last[1], Tokens) and last[1].t == item.t:
                    self._items[-1] = (run, Tokens(item.t, last[1].text + item.text))
                else:
                    self._items.append((run, Tokens(item.t, item.text)))
            else:
                self._items.append((run, item))

    def take(self) -> list[tuple[int, Item]]:
        with self._lock:
            items, self._items = self._items, []
        return items


def pump(
    events: Iterator[Event],
    *,
    run: int,
    feed: Feed,
    wake: Callable[[], object],
    cancel: threading.Event,
) -> Event | None:
    """Feed ``events`` until they end or ``cancel`` is set; then close the generator,
    which stops the model decoding. The last event, where they ended (None if cancelled)."""
    last = None
    try:
        for event in events:
            if cancel.is_set():
                return None
            feed.put(run, event)
            if not isinstance(event, Token):
                wake()
            last = event
        return last
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


class Abandoned(Exception):
    """The app quit while an uninterruptible call was still running."""


def abandonable(call: Callable[[], T], stop: threading.Event) -> T:
    """Run ``call`` in a daemon thread and wait for it, unless ``stop`` is set first.

    Loading models (importing torch, reading weights) cannot be interrupted; a worker
    blocked in it would hold the app's exit (asyncio joins its worker threads) for many
    seconds. A daemon thread is left behind instead and ends with the process."""
    outcome: dict[str, object] = {}
    done = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="abandonable", daemon=True).start()
    while not done.wait(0.1):
        if stop.is_set():
            raise Abandoned
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
