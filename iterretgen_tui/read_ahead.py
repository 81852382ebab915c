"""`ask` reads its conversation ahead for the next `ask --continue`, in a process of its own.

The chat evaluates what a follow-up's prompts start with (the draft's demos and the turns,
the rewrite's) while the user reads an answer (Session.read_ahead); a follow-up then
evaluates its own words and passages alone. `ask` ends once its answer is printed, so it
leaves that work to a detached process: it loads the reader alone, reads the conversation
from the history, evaluates both prompt starts and saves them beside the demos' states
(engine/loop/prefix_states.py), the rewrite's first. The next `ask` stops it as it starts,
since it would only take that question's cores; a follow-up (`ask --continue`) then starts
from what it saved by then and evaluates the rest itself. A follow-up asked at once, as a
script does, so neither waits for it nor competes with it: let to go on while the
follow-up loaded its models, it made that follow-up 1 to 4 s slower, and waited for, 5 to
11 s (docs/conversations.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from . import paths

log = logging.getLogger(__name__)

NICENESS = 10  # it works while the user reads: anything the user starts comes first


def _folder() -> Path:
    folder = paths.cache_dir() / "prompt-states" / "ahead"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _lock() -> FileLock:
    """Held by the process at work; its pid is in ``running.pid`` beside it."""
    return FileLock(str(_folder() / "running.lock"))


def start(overrides: dict[str, Any], cid: int) -> None:
    """Read conversation ``cid`` ahead in a detached process, with the settings ``ask`` had
    (``overrides``: its flags; the settings file and the environment are read again)."""
    try:
        subprocess.Popen(
            [sys.executable, "-m", "iterretgen_tui.read_ahead", json.dumps(overrides), str(cid)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives `ask`, and its terminal's Ctrl+C
        )
    except OSError as exc:  # the follow-up evaluates it itself
        log.warning("could not start reading the conversation ahead: %s", exc)


def _at_work() -> bool:
    """Whether a read-ahead process holds the lock (taking it for a moment to know)."""
    try:
        with _lock().acquire(timeout=0):
            return False
    except Timeout:
        return True


def stop(seconds: float = 5.0) -> None:
    """Stop a read-ahead at work: a question now takes the cores."""
    deadline = time.monotonic() + seconds
    while _at_work() and time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):  # no pid written yet, or it just ended
            os.kill(int((_folder() / "running.pid").read_text()), signal.SIGTERM)
        time.sleep(0.05)  # mid-write, its state file is a temporary one, never seen


def read_ahead(overrides: dict[str, Any], cid: int) -> None:
    """The detached process's work: conversation ``cid``'s next prompt starts, saved."""
    try:
        lock = _lock().acquire(timeout=0)
    except Timeout:  # another is at work: two `ask`s at once, the later one's follow-up goes cold
        return
    with lock:
        (_folder() / "running.pid").write_text(str(os.getpid()))
        # Imported with the lock held: a question asked meanwhile finds it, and stops it.
        from . import config
        from .engine.loop.conversation import turns_of
        from .history import History
        from .session import Session

        turns = turns_of(History().get(cid).turns)
        session = Session(config.load(overrides), fallback_reader=True)
        session.load_reader(session.chosen_reader().path)
        session.read_ahead(turns, disk=True)


if __name__ == "__main__":
    if hasattr(os, "nice"):
        os.nice(NICENESS)
    # Written only when there is something to say.
    logging.basicConfig(handlers=[logging.FileHandler(paths.data_dir() / "read-ahead.log", delay=True)])
    try:
        read_ahead(json.loads(sys.argv[1]), int(sys.argv[2]))
    except Exception:  # nothing waits on it but a follow-up, which then evaluates the turns itself
        log.exception("reading the conversation ahead failed")
        sys.exit(1)
