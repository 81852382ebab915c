"""Pulling a model from inside the window: the models screen's pulls (F5) and the app's own
pull of the default reader run the same code, through ``models.pull.pull``.

A pull runs in a thread worker (``pull_reporting``); its progress and its end come back as
the two messages below, to whoever started it. They do not bubble: the models screen's
pull must not look like the app's to the app.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from textual.message import Message

from .. import models
from ..engine.errors import IterRetGenError

log = logging.getLogger(__name__)

PullFunction = Callable[..., object]  # models.pull.pull(name, *, tqdm_class)
MB = 1000**2  # as models.human counts
# A download reports every chunk (pip's every few KB): the window hears of it this often at most.
REPORT_SECONDS = 0.2


def pull_model(name: str, *, tqdm_class) -> object:
    from ..models.pull import pull  # huggingface_hub: imported when a pull starts

    return pull(name, tqdm_class=tqdm_class)


@dataclass
class PullProgressed(Message, bubble=False):
    file: str
    done: int
    total: int | None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, PullProgressed)


@dataclass
class PullFinished(Message, bubble=False):
    name: str
    error: str = ""
    cancelled: bool = False


def pull_reporting(pull: PullFunction, name: str, stop: threading.Event, post: Callable[[Message], object]) -> None:
    """The body of a pull's thread worker: progress and the end as messages through ``post``;
    setting ``stop`` ends it at its next report, resumable."""
    from ..models.progress import PullCancelled, reporting_bar

    last = float("-inf")

    def report(file: str, done: int, total: int | None) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= REPORT_SECONDS:
            last = now
            post(PullProgressed(file, done, total))

    try:
        pull(name, tqdm_class=reporting_bar(report, stop))
    except PullCancelled:
        post(PullFinished(name, cancelled=True))
    except IterRetGenError as exc:  # no network, a checksum refused, a full disk: says what to do
        post(PullFinished(name, error=str(exc)))
    except Exception as exc:  # shown in the window; the log keeps the traceback
        log.exception("pulling %s failed", name)
        post(PullFinished(name, error=str(exc) or type(exc).__name__))
    else:
        post(PullFinished(name))


class Pace:
    """How far a pull is, how fast it goes and how long is left, as one line. The speed is
    measured from the first report, so bytes a resumed pull already had do not count."""

    SETTLE_SECONDS = 1.0  # before this, a speed is mostly noise: none is shown

    def __init__(self) -> None:
        self.since: float | None = None
        self.first = 0

    def line(self, name: str, done: int, total: int | None, now: float) -> str:
        if self.since is None:
            self.since, self.first = now, done
        text = f"pulling {name}: {done / MB:.0f}" + (f"/{total / MB:.0f} MB" if total else " MB")
        seconds, got = now - self.since, done - self.first
        if seconds < self.SETTLE_SECONDS or got <= 0:
            return text
        rate = got / seconds
        text += f", {rate / MB:.1f} MB/s"
        if total:
            text += f", {models.duration(max(total - done, 0) / rate)} left"
        return text


@dataclass
class AutoPull:
    """The app's own pull of the default reader, while the embedded one reads in its place."""

    name: str
    stop: threading.Event = field(default_factory=threading.Event)
    pace: Pace = field(default_factory=Pace)
    # "loading": pulled, and a session reading with it loads; the old one answers meanwhile.
    state: Literal["pulling", "loading", "done", "failed", "stopped"] = "pulling"

    @property
    def busy(self) -> bool:
        return self.state in ("pulling", "loading")

    @property
    def retry(self) -> str:
        """How the user pulls it themselves."""
        return f"`iterretgen-chat models pull {self.name}` or F5"
