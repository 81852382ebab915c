"""The feed between the answer worker and the UI (order kept, tokens joined, cancel
honoured), and waiting on a call that cannot be interrupted."""

from __future__ import annotations

import threading

import pytest

from iterretgen_tui.engine.loop.events import IterationStarted, QueryFormed, Token
from iterretgen_tui.ui.driver import Abandoned, Feed, Tokens, abandonable, pump


def test_consecutive_tokens_of_one_iteration_become_one_chunk_in_order():
    feed = Feed()
    for item in [IterationStarted(1, 2), Token(1, "a"), Token(1, "b"), IterationStarted(2, 2), Token(2, "c")]:
        feed.put(5, item)
    feed.put(6, Token(2, "d"))  # another run never merges with this one
    assert feed.take() == [
        (5, IterationStarted(1, 2)),
        (5, Tokens(1, "ab")),
        (5, IterationStarted(2, 2)),
        (5, Tokens(2, "c")),
        (6, Tokens(2, "d")),
    ]
    assert not feed and feed.take() == []


def test_pump_wakes_the_ui_for_events_but_not_for_each_token():
    feed, wakes = Feed(), []
    events = [IterationStarted(1, 1), Token(1, "x"), Token(1, "y"), QueryFormed(1, "q")]
    pump(iter(events), run=1, feed=feed, wake=lambda: wakes.append(1), cancel=threading.Event())
    assert len(wakes) == 2
    assert [item for _, item in feed.take()] == [IterationStarted(1, 1), Tokens(1, "xy"), QueryFormed(1, "q")]


def test_pump_stops_at_cancel_and_closes_the_generator():
    cancel = threading.Event()
    closed = []

    def events():
        try:
            yield Token(1, "a")
            cancel.set()
            yield Token(1, "b")
            yield Token(1, "never")
        finally:
            closed.append(True)

    feed = Feed()
    pump(events(), run=1, feed=feed, wake=lambda: None, cancel=cancel)
    assert [item for _, item in feed.take()] == [Tokens(1, "a")]
    assert closed == [True]


def test_abandonable_returns_the_value_or_raises_the_error():
    stop = threading.Event()
    assert abandonable(lambda: 42, stop) == 42

    def broken():
        raise ValueError("bad model")

    with pytest.raises(ValueError, match="bad model"):
        abandonable(broken, stop)


def test_abandonable_gives_up_waiting_when_stopped():
    release, stop = threading.Event(), threading.Event()
    stop.set()
    with pytest.raises(Abandoned):
        abandonable(lambda: release.wait(5), stop)
    release.set()
