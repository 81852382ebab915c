"""`ask` reads its conversation ahead for `ask --continue` in a detached process, with the
real embedded models: it saves the follow-up's prompt starts, and the next question stops
it (a follow-up once its models are loaded, taking up what was saved)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iterretgen_tui import paths, read_ahead

from .test_ask_e2e import cli, notes  # noqa: F401 (a fixture)


def ahead_states() -> list[Path]:
    return sorted((paths.cache_dir() / "prompt-states" / "ahead").glob("*.state"))


def settle(condition, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the read-ahead process did not get there"
        time.sleep(0.1)


@pytest.mark.slow
def test_ask_leaves_the_next_follow_up_read_ahead_and_continue_takes_it_up(notes, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ITERRETGEN_READ_AHEAD", "true")
    first = json.loads(cli("ask", "Who built the Eiffel Tower?", "--folder", str(notes), "--json", check=True).stdout)
    settle(lambda: len(ahead_states()) == 2 and not read_ahead._at_work())  # the rewrite's start and the draft's
    holder = holding()  # as if the follow-up came while it was still at work
    second = cli("ask", "Where was he born?", "--folder", str(notes), "--continue", "--json", check=True)
    assert holder.wait(5) == -signal.SIGTERM
    assert json.loads(second.stdout)["conversation_id"] == first["conversation_id"]
    settle(lambda: len(ahead_states()) == 2 and all(p.stat().st_mtime > time.time() - 60 for p in ahead_states()))
    assert "read-ahead.log" not in os.listdir(paths.data_dir())  # it failed nowhere


def holding() -> subprocess.Popen:
    """A stand-in that holds the lock as the read-ahead process does, for minutes."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, time; from iterretgen_tui import read_ahead\n"
            "lock = read_ahead._lock().acquire()\n"
            "(read_ahead._folder() / 'running.pid').write_text(str(os.getpid())); print('held', flush=True)\n"
            "time.sleep(300)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_another_question_stops_the_read_ahead_at_once():
    holder = holding()
    started = time.monotonic()
    read_ahead.stop()
    assert holder.wait(5) == -signal.SIGTERM and time.monotonic() - started < 2
    started = time.monotonic()
    read_ahead.stop()  # nothing at work: nothing to wait for
    assert time.monotonic() - started < 0.5


def test_indexing_stops_the_read_ahead(notes):  # noqa: F811
    holder = holding()
    cli("index", str(notes), "--json", check=True)
    assert holder.wait(5) == -signal.SIGTERM


def test_with_read_ahead_off_ask_leaves_nothing_behind(notes):  # noqa: F811
    cli("ask", "Who built the Eiffel Tower?", "--folder", str(notes), "--iterations", "1", check=True)
    time.sleep(1)
    assert not ahead_states()
