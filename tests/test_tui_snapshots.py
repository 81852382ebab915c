"""The look of the main screen, during and after an answer (pytest-textual-snapshot).

Update after an intended change with `pytest tests/test_tui_snapshots.py --snapshot-update`
and look at the SVGs before committing them.
"""

from __future__ import annotations

import itertools
import types
from pathlib import Path

import pytest
from textual.widgets import Input

from iterretgen_tui.engine.loop import iterretgen

from .test_tui import SIZE, answered, ask
from .tui_support import DRAFTS, HeldGenerator, make_app, wait_for

FOLDER = Path("/home/ada/docs")  # shown in the header: fixed, unlike tmp_path


@pytest.fixture(autouse=True)
def steady_clock(monkeypatch):
    """Every iteration takes 0.75 s, so the times on screen do not vary."""
    ticks = itertools.count(0.0, 0.75)
    monkeypatch.setattr(iterretgen, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))


def steady_cursor(app) -> None:
    """A blinking cursor would make the picture depend on the moment it is taken."""
    app.query_one("#question", Input).cursor_blink = False


def test_main_screen_while_iteration_2_streams(snap_compare, tmp_path):
    generator = HeldGenerator(DRAFTS, hold_call=2, hold_token=4)
    app, _ = make_app(tmp_path, folder=FOLDER, generator=generator)

    async def run_before(pilot):
        steady_cursor(app)
        await wait_for(pilot, app.ready.is_set)
        await ask(pilot)
        await wait_for(pilot, generator.held.is_set)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    generator.release.set()


def test_main_screen_after_the_answer(snap_compare, tmp_path):
    app, _ = make_app(tmp_path, folder=FOLDER)

    async def run_before(pilot):
        steady_cursor(app)
        await wait_for(pilot, app.ready.is_set)
        await ask(pilot)
        await wait_for(pilot, lambda: answered(app))
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
