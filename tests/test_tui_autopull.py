"""The chat pulls the default reader by itself while the embedded one reads, then switches
to it without a restart. Pilot over the real session and loop with fake models;
the pull is a fake at the ``models.pull.pull`` boundary: no test pulls for real."""

from __future__ import annotations

from dataclasses import replace

from iterretgen_tui import models
from iterretgen_tui.ui.pulling import MB, Pace

from .test_tui import SIZE, answered, answers, ask, ask_and_wait, status_text
from .test_tui_welcome import DEVICES, FakePull, select, welcome_text
from .tui_support import DRAFTS, QUESTION, SCRIPTED, HeldGenerator, make_app, pilot_test, wait_for

READER = models.DEFAULT_LLM
FALLBACK = replace(SCRIPTED, llm=READER)  # not pulled yet: the embedded model reads in its place
GB = 1000 * MB


class FailingPull:
    """A pull that reports its start, then fails as the real one does offline."""

    ERROR = f"cannot reach the package index for {READER}: are you offline? run the same pull again to resume"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, name: str, *, tqdm_class):
        self.calls.append(name)
        tqdm_class(total=GB, initial=0, desc="model.gguf")
        raise models.ModelError(self.ERROR)


def auto_app(tmp_path, pull, settings=FALLBACK, **kwargs):
    """The app whose first session reads in the default's place, with a fake pull for it
    (and for the models screen, which must not start a second one)."""
    app, sessions = make_app(tmp_path, settings, **kwargs)
    app.auto_pull_function = pull
    app.models_screen_options = {"pull": pull, "devices": lambda device: DEVICES, "unreachable": str}
    return app, sessions


def notices(app) -> list[tuple[str, str]]:
    return [(n.title, n.message) for n in app._notifications]


def test_a_pull_line_says_how_far_how_fast_and_how_long_is_left():
    pace = Pace()
    # The first report (a resumed pull starts at its bytes on disk) has no speed yet.
    assert pace.line("m", 100 * MB, 1117 * MB, now=10.0) == "pulling m: 100/1117 MB"
    assert pace.line("m", 312 * MB, 1117 * MB, now=40.0) == "pulling m: 312/1117 MB, 7.1 MB/s, 1 min 53 s left"
    assert pace.line("m", 312 * MB, None, now=40.0) == "pulling m: 312 MB, 7.1 MB/s"


@pilot_test
async def test_the_default_reader_is_pulled_then_read_without_a_restart_or_cutting_an_answer(tmp_path):
    pull = FakePull(size=GB)
    generator = HeldGenerator(DRAFTS, hold_call=1, hold_token=2)
    app, sessions = auto_app(tmp_path, pull, generator=generator)
    async with app.run_test(size=SIZE) as pilot:
        progress = f"pulling {READER}: 500/1000 MB"
        await wait_for(pilot, lambda: progress in status_text(app) and progress in welcome_text(app))
        assert "(default not pulled yet)" in status_text(app)
        assert "chat smollm2-135m" in welcome_text(app)
        assert any(title == "Reader" and "answers meanwhile" in text for title, text in notices(app))
        # The embedded model answers meanwhile; its answer is under way when the pull lands.
        await ask(pilot)
        await wait_for(pilot, generator.held.is_set)
        pull.release.set()
        await wait_for(pilot, lambda: len(sessions) == 2 and app.session is sessions[1])
        assert sessions[1].settings.llm == READER and not sessions[1].reader_note
        assert ("Reader", f"Now reading with {READER}") in notices(app)
        assert "pulling" not in status_text(app) and "(default not pulled yet)" not in status_text(app)
        assert app.current.live
        generator.release.set()
        await wait_for(pilot, lambda: answered(app))
        assert answers(app)[-1].final.answer == "Dijon"
        assert [q for q, _ in sessions[0].asked] == [QUESTION] and not sessions[1].asked
        assert pull.calls == [(READER, 0)]


@pilot_test
async def test_a_failed_pull_says_so_once_and_the_embedded_model_answers_on(tmp_path):
    pull = FailingPull()
    app, sessions = auto_app(tmp_path, pull)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: f"could not pull {READER}" in status_text(app))
        assert f"the chat stays on smollm2-135m; retry: `iterretgen-chat models pull {READER}` or F5" in status_text(
            app
        )
        assert notices(app).count((f"Could not pull {READER}", FailingPull.ERROR)) == 1
        await ask_and_wait(pilot)
        assert answers(app)[-1].final.answer == "Dijon" and app.session is sessions[0]
        await pilot.press("ctrl+r")  # a re-index does not pull again by itself
        await wait_for(pilot, lambda: sessions[0].indexed == 2 and "ready" in status_text(app))
        assert pull.calls == [READER] and len(sessions) == 1


@pilot_test
async def test_auto_pull_off_pulls_nothing_and_the_setting_starts_and_stops_it(tmp_path):
    pull = FakePull(size=GB)
    app, _ = auto_app(tmp_path, pull, replace(FALLBACK, auto_pull=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.pause(0.1)
        assert pull.calls == [] and app.auto_pull is None
        assert any(title == "Reader" and "is not downloaded yet" in text for title, text in notices(app))
        app.change(auto_pull=True)
        await wait_for(pilot, lambda: f"pulling {READER}: 500/1000 MB" in status_text(app))
        app.change(auto_pull=False)  # a metered connection: stopped, resumable
        await wait_for(pilot, lambda: f"stopped pulling {READER}" in status_text(app))
        assert pull.calls == [(READER, 0)] and models.pulled(READER) is None


@pilot_test
async def test_f5_starts_no_second_pull_of_it_and_closing_the_window_stops_the_pull(tmp_path):
    pull = FakePull()
    app, _ = auto_app(tmp_path, pull)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pull.have >= pull.size // 2)
        await pilot.press("f5")
        screen = app.screen
        select(screen, READER)
        await pilot.press("enter")
        assert any("already being pulled in the background" in text for _, text in notices(app))
        assert not screen.pulling and pull.calls == [(READER, 0)]
        stop = app.auto_pull.stop
        assert not stop.is_set()
    assert stop.is_set()  # the pull stops at its next report; the next start resumes it
    assert models.pulled(READER) is None
