"""The look of the main screen, during and after an answer (pytest-textual-snapshot).

Update after an intended change with `pytest tests/test_tui_snapshots.py --snapshot-update`
and look at the SVGs before committing them.
"""

from __future__ import annotations

import itertools
import shutil
import types
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Input, ProgressBar

from iterretgen_tui.engine.loop import iterretgen

from .test_tui import SIZE, answered, ask
from .test_tui_welcome import DEMO, FakePull, examples, models_app, real_corpus, select, table_rows
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


# The first five minutes: the welcome, the models screen, marked passages.

SNAPSHOT_HOME = Path("/tmp/iterretgen-snapshot-home")  # shown in the models screen: fixed, unlike tmp_path


@pytest.fixture
def fixed_home(monkeypatch):
    shutil.rmtree(SNAPSHOT_HOME, ignore_errors=True)
    monkeypatch.setenv("ITERRETGEN_HOME", str(SNAPSHOT_HOME))
    yield SNAPSHOT_HOME
    shutil.rmtree(SNAPSHOT_HOME, ignore_errors=True)


def test_welcome_with_the_demo_model(snap_compare, tmp_path):
    app, _ = make_app(tmp_path, DEMO, folder=FOLDER)

    async def run_before(pilot):
        steady_cursor(app)
        await wait_for(pilot, lambda: len(examples(app)) == 3)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_models_screen_while_a_pull_runs(snap_compare, tmp_path, fixed_home):
    pull = FakePull()
    app, _ = models_app(tmp_path, pull, folder=FOLDER)
    app.models_screen_options["unreachable"] = lambda: ""  # a machine online, as when pulling

    async def run_before(pilot):
        steady_cursor(app)
        await wait_for(pilot, app.ready.is_set)
        await pilot.press("f5")
        screen = app.screen
        await wait_for(pilot, lambda: table_rows(screen)["smollm2-135m"][5] == "cpu")
        select(screen, "qwen2.5-3b-instruct")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.query_one("#pull-progress", ProgressBar).progress >= pull.size // 2)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    pull.release.set()


def test_panes_mark_new_again_kept_and_a_changed_source(snap_compare, tmp_path):
    docs = Path("/tmp/iterretgen-snapshot-docs")  # the sources' paths are on screen: fixed
    shutil.rmtree(docs, ignore_errors=True)
    corpus = real_corpus(docs.parent, docs.name)
    app, _ = make_app(tmp_path, replace(DEMO, adaptive=False), folder=FOLDER, corpus=corpus)

    async def run_before(pilot):
        steady_cursor(app)
        await wait_for(pilot, app.ready.is_set)
        with open(corpus[1].source, "a") as fh:
            fh.write("\nHe died in Paris in 1923.")
        await ask(pilot)
        await wait_for(pilot, lambda: answered(app))
        await pilot.pause(0.2)

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    finally:
        shutil.rmtree(docs, ignore_errors=True)
