"""The first five minutes in the window: the welcome, the models screen, why each passage
is there, stale sources. Pilot over the real session and loop with fake models."""

from __future__ import annotations

import threading
from dataclasses import replace

from textual.widgets import DataTable, OptionList, ProgressBar, Static

from iterretgen_tui import config, models, paths
from iterretgen_tui.engine.indexing.documents import Skip
from iterretgen_tui.engine.indexing.staleness import CHANGED
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.ui.iterations import IterationPane
from iterretgen_tui.ui.screens.models import ModelsScreen
from iterretgen_tui.ui.screens.passage import PassageScreen
from iterretgen_tui.ui.welcome import Welcome

from .test_tui import SIZE, answered, answers, ask_and_wait, status_text
from .tui_support import CORPUS, SCRIPTED, make_app, pilot_test, wait_for

DEMO = replace(SCRIPTED, llm="smollm2-135m", keep_passages=True)
DEVICES = {"llm": "cpu", "embedder": "cpu", "summary": "llm cpu · embedder cpu", "problems": []}


def stored_settings() -> dict:
    """The settings file itself (config.load() would layer the suite's ITERRETGEN_LLM over it)."""
    import tomllib

    return tomllib.loads(paths.config_file().read_text("utf-8"))


def welcome_text(app) -> str:
    welcome = app.main.query_one(Welcome)
    return "\n".join(str(s.render()) for s in welcome.query(Static) if s.display)


def examples(app) -> list[str]:
    return [str(o.prompt) for o in app.main.query_one(".welcome-examples", OptionList).options]


def labels(app, t: int) -> list[str]:
    return [str(o.prompt) for o in app.main.query_one(f"#iteration-{t}", IterationPane).query_one(OptionList).options]


@pilot_test
async def test_the_welcome_says_what_the_folder_holds_which_model_answers_and_what_to_ask(tmp_path):
    app, _ = make_app(tmp_path, DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.pause(0.1)
        text = welcome_text(app)
        assert str(tmp_path / "docs") in text
        assert "5 files · 5 passages indexed" in text
        assert "chat smollm2-135m · retrieval hash-embedder · on cpu" in text
        assert "135M-parameter demo model" in text and "F5" in text
        assert "F5 models" in text and "Ctrl+R re-index" in text
        assert examples(app) == [
            "What do the documents say about Eiffel Tower?",
            "What do the documents say about Gustave Eiffel?",
            "What do the documents say about Dijon?",
        ]


@pilot_test
async def test_the_welcome_counts_the_files_and_folders_that_could_not_be_read(tmp_path):
    broken = (
        Skip("docs/scan.pdf", "not a valid PDF"),
        Skip("docs/empty.txt", "empty document"),
        Skip("docs/private", "cannot list folder: Permission denied", folder=True),
    )
    app, _ = make_app(tmp_path, DEMO, skipped=broken)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.pause(0.1)
        assert "5 files · 5 passages indexed · 2 files and 1 folder not read" in welcome_text(app)


@pilot_test
async def test_a_better_model_gets_no_demo_warning(tmp_path):
    app, _ = make_app(tmp_path, replace(DEMO, llm="qwen2.5-3b-instruct"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.pause(0.1)
        assert "demo model" not in welcome_text(app)


@pilot_test
async def test_the_welcome_shows_indexing_progress_while_the_folder_grows(tmp_path):
    hold = threading.Event()
    app, _ = make_app(tmp_path, DEMO, hold_index=hold)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "indexing…" in welcome_text(app))
        assert "1/2 files read, 3 passages so far" in welcome_text(app)
        assert not examples(app)
        hold.set()
        await wait_for(pilot, lambda: "5 passages indexed" in welcome_text(app))
        assert len(examples(app)) == 3


@pilot_test
async def test_selecting_an_example_asks_it_and_a_new_chat_brings_the_welcome_back(tmp_path):
    app, sessions = make_app(tmp_path, DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(examples(app)) == 3)
        options = app.main.query_one(".welcome-examples", OptionList)
        options.focus()
        options.highlighted = 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: answered(app))
        assert sessions[0].asked[0][0] == "What do the documents say about Gustave Eiffel?"
        assert not app.main.query(Welcome)
        await pilot.press("ctrl+n")
        await pilot.pause(0.1)
        assert "5 passages indexed" in welcome_text(app) and len(examples(app)) == 3


# Why each passage is there.


@pilot_test
async def test_each_pane_marks_new_found_again_and_carried_passages_with_their_search(tmp_path):
    app, _ = make_app(tmp_path, replace(DEMO, adaptive=False))
    async with app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot)
        first, second = labels(app, 1), labels(app, 2)
        assert all(" new " in label and "new · via the question" in label for label in first)
        assert any(
            " again " in label and "found again (first in 1) · via the draft + the question" in label
            for label in second
        )
        assert any(" kept " in label and "carried from iteration 1" in label for label in second)
        # A past answer's panes, rebuilt from its trace, carry the same marks.
        await pilot.press("ctrl+n")
        await pilot.press("f3")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.said))  # set once its panes are all shown
        assert len(app.main.query(IterationPane)) == 3
        assert labels(app, 2) == second


# Stale sources.


def real_corpus(tmp_path, name: str = "docs") -> list[Passage]:
    """The fake corpus, its sources real files, so they can change after indexing."""
    docs = tmp_path / name
    docs.mkdir()
    corpus = []
    for p in CORPUS:
        path = docs / p.source.split("/")[-1]
        path.write_text(p.text)
        corpus.append(replace(p, source=str(path)))
    return corpus


@pilot_test
async def test_a_source_changed_since_indexing_is_marked_and_ctrl_r_reindexes(tmp_path):
    corpus = real_corpus(tmp_path)
    gustave = corpus[1].source
    app, sessions = make_app(tmp_path, replace(DEMO, keep_passages=False), corpus=corpus)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        with open(gustave, "a") as fh:
            fh.write("\nHe died in Paris in 1923.")
        await ask_and_wait(pilot)
        final = answers(app)[-1]
        assert f"`{gustave} (p. 2)` — ⚠ **file {CHANGED}**" in final.source
        assert "Ctrl+R re-indexes the folder" in final.source
        assert any(f"⚠ file {CHANGED}" in label for label in labels(app, 3))
        options = app.main.query_one("#iteration-3", IterationPane).query_one(OptionList)
        options.focus()
        options.highlighted = next(i for i, label in enumerate(labels(app, 3)) if "Gustave Eiffel" in label)
        await pilot.press("enter")
        assert isinstance(app.screen, PassageScreen) and app.screen.stale == CHANGED
        assert "may no longer be what it says" in str(app.screen.query_one(".stale", Static).render())
        await pilot.press("escape")

        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: sessions[0].indexed == 2 and "ready" in status_text(app))
        await pilot.pause(0.2)
        assert "⚠" not in answers(app)[-1].source
        assert not any("⚠" in label for label in labels(app, 3))
        assert len(sessions) == 1  # re-indexing keeps the models loaded


@pilot_test
async def test_a_deleted_source_is_marked_too(tmp_path):
    corpus = real_corpus(tmp_path)
    app, _ = make_app(tmp_path, replace(DEMO, keep_passages=False), corpus=corpus)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        for p in corpus:
            (tmp_path / "docs" / p.source.split("/")[-1]).unlink()
        await ask_and_wait(pilot)
        assert "⚠ **file deleted since indexed**" in answers(app)[-1].source


# The models screen.


class FakePull:
    """Stands in for models.pull.pull: reports progress through the tqdm class it is given,
    holds half-way until ``release`` is set, and records a finished pull as the real one does."""

    def __init__(self, size: int = 1_000_000) -> None:
        self.size = size
        self.release = threading.Event()
        self.calls: list[tuple[str, int]] = []  # (name, bytes already there)
        self.have = 0

    def __call__(self, name: str, *, tqdm_class):
        self.calls.append((name, self.have))
        bar = tqdm_class(total=self.size, initial=self.have, desc="model.gguf")
        while self.have < self.size:
            if self.have >= self.size // 2:
                self.hold(bar)
            bar.update(self.size // 10)  # raises when the pull is stopped: the bytes stay
            self.have += self.size // 10
        record = models.Pulled(name, "llm", "test/repo", "0" * 40, {"model.gguf": {"size": self.size, "sha256": None}})
        record.folder.mkdir(parents=True, exist_ok=True)
        (record.folder / "model.gguf").write_bytes(b"GGUF")
        record.save()
        return record

    def hold(self, bar) -> None:
        """Wait for ``release`` (10 s at most) while reporting: a stopped pull ends here, as a
        download does at its next chunk."""
        for _ in range(500):
            if self.release.wait(0.02):
                return
            bar.update(0)


def models_app(tmp_path, pull=None, settings=DEMO, **kwargs):
    """The app with a fake pull and fixed devices for its models screen."""
    app, sessions = make_app(tmp_path, settings, **kwargs)
    app.models_screen_options = {"pull": pull or FakePull(), "devices": lambda device: DEVICES}
    return app, sessions


def table_rows(screen) -> dict[str, list[str]]:
    table = screen.query_one(DataTable)
    return {str(row.value): [str(c) for c in table.get_row(row)] for row in table.rows}


def select(screen, name: str) -> None:
    table = screen.query_one(DataTable)
    table.focus()
    table.move_cursor(row=[r.name for r in screen.rows].index(name))


@pilot_test
async def test_f5_lists_installed_and_catalogue_models_and_says_the_hub_is_unreachable(tmp_path):
    app, _ = models_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f5")
        screen = app.screen
        assert isinstance(screen, ModelsScreen)
        await wait_for(pilot, lambda: table_rows(screen)["smollm2-135m"][5] == "cpu")
        rows = table_rows(screen)
        assert rows["smollm2-135m"][:5] == ["●", "smollm2-135m", "llm", "embedded", "98 MB"]
        assert rows["all-minilm-l6-v2"][2:4] == ["embedder", "embedded"]
        assert rows["qwen2.5-3b-instruct"][2:5] == ["llm", "no", "~2.1 GB"]
        assert "the best size for CPU chat" in rows["qwen2.5-3b-instruct"][6]
        # conftest sets HF_HUB_OFFLINE: one line says pulls cannot reach the hub.
        hub_line = str(screen.query_one("#hub-line", Static).render())
        assert hub_line.startswith("HF_HUB_OFFLINE is set: pulls from") and "\n" not in hub_line
        await pilot.press("escape")
        assert not isinstance(app.screen, ModelsScreen)
        assert "Models" in {c.title for c in app.get_system_commands(app.screen)}


@pilot_test
async def test_a_pull_shows_progress_stops_on_escape_and_resumes(tmp_path):
    pull = FakePull()
    app, _ = models_app(tmp_path, pull)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f5")
        screen = app.screen
        select(screen, "qwen2.5-1.5b-instruct")
        await pilot.press("enter")
        bar = screen.query_one("#pull-progress", ProgressBar)
        await wait_for(pilot, lambda: bar.progress >= pull.size // 2)
        assert bar.display and bar.total == pull.size
        assert "model.gguf 500 KB of 1 MB" in str(screen.query_one("#pull-status", Static).render())
        await pilot.press("escape")  # stops the pull, keeps the screen
        pull.release.set()
        await wait_for(pilot, lambda: "stopped pulling" in str(screen.query_one("#pull-status", Static).render()))
        assert isinstance(app.screen, ModelsScreen) and not bar.display
        assert models.pulled("qwen2.5-1.5b-instruct") is None

        await pilot.press("enter")  # again: it resumes from the bytes already there
        await wait_for(pilot, lambda: "press Enter to switch" in str(screen.query_one("#pull-status", Static).render()))
        assert pull.calls == [("qwen2.5-1.5b-instruct", 0), ("qwen2.5-1.5b-instruct", 500_000)]
        assert table_rows(screen)["qwen2.5-1.5b-instruct"][3] == "pulled"


@pilot_test
async def test_switching_the_chat_model_loads_it_and_saves_it(tmp_path):
    pull = FakePull()
    pull.release.set()
    app, sessions = models_app(tmp_path, pull)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.press("f5")
        select(app.screen, "qwen2.5-1.5b-instruct")
        await pilot.press("enter")
        await wait_for(pilot, lambda: models.pulled("qwen2.5-1.5b-instruct") is not None)
        await pilot.pause(0.1)
        await pilot.press("enter")  # the pulled row is selected: switch to it
        assert not isinstance(app.screen, ModelsScreen)
        await wait_for(pilot, lambda: len(sessions) == 2 and app.session is sessions[1])
        assert sessions[1].settings.llm == "qwen2.5-1.5b-instruct"
        assert stored_settings()["llm"] == "qwen2.5-1.5b-instruct"
        await wait_for(pilot, lambda: "chat qwen2.5-1.5b-instruct" in welcome_text(app))
        assert "demo model" not in welcome_text(app)


@pilot_test
async def test_switching_the_embedder_reindexes_in_the_background_while_the_old_one_answers(tmp_path):
    app, sessions = models_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        hold = threading.Event()
        app.session_factory = holding_factory(app.session_factory, sessions, hold)
        await pilot.press("f5")
        select(app.screen, "all-minilm-l6-v2")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "indexing" in status_text(app))
        assert "indexing…" in welcome_text(app)
        assert app.session is sessions[0]
        await ask_and_wait(pilot)  # the old embedder still answers meanwhile
        assert answers(app)[-1].final.answer == "Dijon"
        hold.set()
        await wait_for(pilot, lambda: app.session is sessions[1])
        assert sessions[1].settings.embedder == "all-minilm-l6-v2"
        assert stored_settings().get("embedder", config.Settings().embedder) == "all-minilm-l6-v2"


def holding_factory(factory, sessions, hold):
    def build(settings):
        session = factory(settings)
        session.hold_index = hold
        return session

    return build


@pilot_test
async def test_a_pull_against_the_stand_in_hub_lands_and_can_be_used(tmp_path, monkeypatch):
    """The real models.pull.pull, from the window, against the local stand-in hub."""
    import pytest

    from . import test_models_pull as pulls
    from .hub_standin import StandInHub

    extended = {**models.catalogue.load(), pulls.TINY_LLM.name: pulls.TINY_LLM}
    monkeypatch.setattr(models.catalogue, "load", lambda: extended)
    with StandInHub() as hub:
        hub.add("test/tiny-GGUF", "tiny.gguf", pulls.GGUF)
        pulls._online(monkeypatch, hub.url)
        app, sessions = make_app(tmp_path, DEMO)
        app.models_screen_options = {"devices": lambda device: DEVICES}
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, app.ready.is_set)
            await pilot.press("f5")
            screen = app.screen
            await wait_for(pilot, lambda: "can be reached" in str(screen.query_one("#hub-line", Static).render()))
            select(screen, "tiny-llm")
            await pilot.press("enter")
            await wait_for(
                pilot, lambda: "press Enter to switch" in str(screen.query_one("#pull-status", Static).render())
            )
            assert (paths.models_dir() / "tiny-llm" / "tiny.gguf").read_bytes() == pulls.GGUF
            await pilot.press("enter")
            await wait_for(pilot, lambda: len(sessions) == 2)
            assert sessions[1].settings.llm == "tiny-llm"
    assert pytest  # the fixture-free form keeps this test beside the others
