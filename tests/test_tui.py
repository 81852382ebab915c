"""The TUI driven by Pilot, over the real session and loop with fake models."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Input, Markdown, OptionList, Select, Static

from iterretgen_tui import config
from iterretgen_tui.engine.loop.events import StopReason
from iterretgen_tui.engine.loop.options import LoopOptions
from iterretgen_tui.models import ModelError
from iterretgen_tui.ui.conversation import AnswerView
from iterretgen_tui.ui.iterations import IterationPane
from iterretgen_tui.ui.screens.passage import PassageScreen
from iterretgen_tui.ui.screens.settings import SettingsScreen

from .tui_support import CORPUS, DRAFTS, QUESTION, SCRIPTED, FakeSession, HeldGenerator, make_app, pilot_test, wait_for

SIZE = (180, 50)


def status_text(app) -> str:
    return str(app.query_one("#status-text", Static).render())


def answers(app) -> list[AnswerView]:
    return list(app.query(AnswerView))


def draft_source(app, t: int) -> str:
    return app.query_one(f"#iteration-{t}", IterationPane).query_one(".draft", Markdown).source


async def ask(pilot, question: str = QUESTION) -> None:
    pilot.app.query_one("#question", Input).value = question
    await pilot.press("enter")


async def ask_and_wait(pilot, question: str = QUESTION) -> None:
    await ask(pilot, question)
    await wait_for(pilot, lambda: answered(pilot.app))


def answered(app) -> bool:
    """The current answer is shown in full (the status line changes last)."""
    done = app.current is not None and app.current.done
    return done and ("per iteration" in status_text(app) or "failed" in status_text(app))


@pilot_test
async def test_the_status_line_names_the_embedding_backend_auto_measured(tmp_path, monkeypatch):
    loaded = FakeSession.load_models

    def load_models(self, status=lambda text: None):
        loaded(self, status)
        self.embedder.backend, self.embedder.chosen_by = "onnx-int8", "measured"

    monkeypatch.setattr(FakeSession, "load_models", load_models)
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await wait_for(pilot, lambda: "embedder hash-embedder (onnx-int8)" in status_text(app))


@pilot_test
async def test_question_streams_each_iteration_then_the_cited_answer(tmp_path):
    generator = HeldGenerator(DRAFTS, hold_call=2, hold_token=3)
    app, sessions = make_app(tmp_path, generator=generator)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        assert "5 passages" in status_text(app)
        await ask(pilot)
        await wait_for(pilot, generator.held.is_set)
        await pilot.pause(0.3)  # a few token flushes
        # Iteration 1 is finished, iteration 2 is streaming its draft word by word.
        first = app.query_one("#iteration-1", IterationPane)
        assert first.border_title == "Iteration 1"
        assert draft_source(app, 1) == DRAFTS[0]
        assert draft_source(app, 2) == "Gustave Eiffel was"
        # The chat shows iteration 1's answer at once while iteration 2 checks it.
        shown = answers(app)[-1].source
        assert shown.startswith("_First answer; checking it: iteration 2: reading")
        assert "**Answer:** Paris" in shown and not shown.endswith("Gustave Eiffel was")
        second = app.query_one("#iteration-2", IterationPane)
        assert second.border_title == "Iteration 2"
        query = str(second.query_one(".query", Static).render())
        assert "So the answer is Paris." in query and "Searched with" not in query  # the paper's mode: one search
        labels = [str(o.prompt) for o in second.query_one(OptionList).options]
        assert "docs/france.md (lines 1-3)" in labels[1] and "France" in labels[1]

        generator.release.set()
        await wait_for(pilot, lambda: answered(app))
        assert [p.border_title for p in app.query(IterationPane)] == [
            "Iteration 1",
            "Iteration 2",
            "Iteration 3",
        ]
        assert draft_source(app, 3) == DRAFTS[2]
        final = answers(app)[-1]
        assert final.final.answer == "Dijon"
        assert "**Answer:** Dijon" in final.source and "First answer" not in final.source
        assert "_Changed after reading 1 more passage; the first answer was: Paris (converged at iteration 3)._" in (
            final.source
        )
        assert "**[1]** Gustave Eiffel — `docs/gustave.pdf (p. 2)`" in final.source
        assert "**[2]** Eiffel Tower — `docs/eiffel.md (lines 1-4)`" in final.source
        assert "converged at iteration 3" in status_text(app)
        assert "per iteration:" in status_text(app)
        assert sessions[0].asked == [
            (
                QUESTION,
                LoopOptions(
                    iterations=3,
                    top_k=2,
                    adaptive=True,
                    keep_passages=False,
                    query_mode="draft",
                    max_tokens=app.settings.max_tokens,
                ),
            )
        ]


@pilot_test
async def test_the_panes_follow_the_running_iteration_until_the_reader_scrolls_away(tmp_path):
    generator = HeldGenerator(DRAFTS, hold_call=3, hold_token=0)
    app, _ = make_app(tmp_path, generator=generator)
    async with app.run_test(size=(180, 36)) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask(pilot)
        await wait_for(pilot, generator.held.is_set)
        await pilot.pause(0.3)
        panes, third = app.panes, app.query_one("#iteration-3", IterationPane)
        assert 0 < panes.scroll_y == min(third.virtual_region.y, panes.max_scroll_y)  # brought into view

        panes.scroll_home(animate=False, immediate=True)  # the reader goes back to iteration 1
        generator.release.set()
        await wait_for(pilot, lambda: answered(app))
        await pilot.pause(0.2)
        assert panes.scroll_y == 0 < panes.max_scroll_y  # the rest of the draft did not pull it back


@pilot_test
async def test_page_keys_scroll_the_conversation_while_the_question_keeps_the_focus(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=(120, 24)) as pilot:
        await ask_and_wait(pilot)
        await ask_and_wait(pilot)
        await pilot.pause(0.2)
        log = app.query_one("#log")
        log.scroll_end(animate=False, immediate=True)
        bottom = log.scroll_y
        assert bottom > 0
        await pilot.press("pageup")
        await pilot.pause(0.1)
        assert log.scroll_y < bottom and app.focused is app.query_one("#question", Input)
        await pilot.press("pagedown")
        await pilot.pause(0.1)
        assert log.scroll_y == bottom


@pilot_test
async def test_an_iteration_whose_searches_find_the_same_top_says_it_did_not_draft(tmp_path):
    settings = replace(SCRIPTED, keep_passages=True, adaptive=True, top_k=2, iterations=3)
    app, _ = make_app(tmp_path, settings, corpus=[*CORPUS[:2], CORPUS[4]])
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot)
        await wait_for(pilot, lambda: answered(app))
        await pilot.pause(0.2)
        pane = app.query_one("#iteration-2", IterationPane)
        assert pane.border_subtitle == "stopped"
        assert [p.title for p in pane.passages] == ["Bananas"]  # below the searches' top 2: unread
        note = str(pane.query_one(".note", Static).render())
        assert (
            note
            == StopReason.SAME_PASSAGES.describe(2) + " (stopped before drafting: no draft from the passages above)"
        )
        assert StopReason.SAME_PASSAGES.describe(2) in status_text(app)
        assert answers(app)[-1].final.answer == "Paris"  # iteration 1's


@pilot_test
async def test_escape_cancels_at_once_and_no_more_tokens_arrive(tmp_path):
    generator = HeldGenerator(DRAFTS, hold_call=2, hold_token=2)
    app, _ = make_app(tmp_path, generator=generator)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot)
        await wait_for(pilot, generator.held.is_set)
        await pilot.pause(0.2)
        run = app.current
        await pilot.press("escape")
        assert run.cancel.is_set()
        await wait_for(pilot, lambda: not any(w.is_running for w in app.workers if w.group == "answer"))
        emitted = generator.tokens_emitted
        await pilot.pause(0.3)
        # All of the first draft, the second up to the hold, and nothing after Esc.
        assert generator.tokens_emitted == emitted == len(DRAFTS[0].split()) + 3
        shown = answers(app)[-1].source  # iteration 1's answer, which iteration 2 was checking
        assert shown.startswith("**Answer:** Paris") and shown.endswith("\n\n_Cancelled._")
        assert draft_source(app, 2) == "Gustave Eiffel"
        pane = app.query_one("#iteration-2", IterationPane)
        assert pane.border_subtitle == "stopped"
        assert StopReason.CANCELLED.describe(2) in status_text(app)
        assert app.history.recent() == []  # a cancelled answer is not saved


@pilot_test
async def test_a_new_question_cancels_the_running_one(tmp_path):
    generator = HeldGenerator(DRAFTS, hold_call=1, hold_token=1)
    app, sessions = make_app(tmp_path, generator=generator)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "first question about Paris?")
        await wait_for(pilot, generator.held.is_set)
        first = app.current
        await ask(pilot)
        assert first.cancel.is_set()
        await wait_for(pilot, lambda: answered(app))
        views = answers(app)
        assert views[0].source.endswith("_Cancelled._")
        assert views[1].final is not None and views[1].final.question == QUESTION
        assert [q for q, _ in sessions[0].asked] == ["first question about Paris?", QUESTION]
        assert [c.title for c in app.history.recent()] == [QUESTION]


@pilot_test
async def test_a_question_asked_while_loading_waits_and_says_so(tmp_path):
    import threading

    loaded = threading.Event()
    app, _ = make_app(tmp_path, loaded=loaded)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "loading LLM" in status_text(app))
        await ask(pilot)
        await pilot.pause(0.2)
        assert "Waiting for the models" in answers(app)[-1].source
        assert not app.query(IterationPane)
        loaded.set()
        await wait_for(pilot, lambda: answered(app))
        assert answers(app)[-1].final.answer == "Dijon"


@pilot_test
async def test_the_reader_evaluates_its_demos_once_the_folder_is_ready(tmp_path):
    app, sessions = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await wait_for(pilot, sessions[0].fake_generator.warmed.is_set)


@pilot_test
async def test_a_missing_model_is_a_notification_not_a_crash(tmp_path):
    app, _ = make_app(tmp_path, load_error=ModelError("model file not found: /nowhere/x.gguf"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.pause(0.1)
        assert "cannot answer: model file not found" in status_text(app)
        assert "cannot answer: model file not found" in str(app.query_one(".welcome-folder", Static).render())
        assert any("model file not found" in n.message for n in app._notifications)
        await ask_and_wait(pilot)
        assert "**Could not answer:** cannot answer: model file not found" in answers(app)[-1].source
        assert app.is_running


@pilot_test
async def test_an_empty_folder_says_there_is_nothing_to_read(tmp_path):
    app, _ = make_app(tmp_path, corpus=[])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.pause(0.1)
        assert "no readable documents" in status_text(app)


@pilot_test
async def test_settings_are_saved_and_used_for_the_next_question(tmp_path):
    app, sessions = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.press("f2")
        assert isinstance(app.screen, SettingsScreen)
        app.screen.query_one("#iterations", Input).value = "2"
        app.screen.query_one("#query_mode", Select).value = "fusion"
        await pilot.click("#adaptive")
        await pilot.press("ctrl+s")
        assert not isinstance(app.screen, SettingsScreen)
        stored = config.load()
        assert (stored.iterations, stored.adaptive, stored.query_mode) == (2, False, "fusion")
        await ask_and_wait(pilot)
        assert sessions[0].asked[-1][1].iterations == 2
        assert sessions[0].asked[-1][1].query_mode == "fusion"
        assert [p.border_title for p in app.query(IterationPane)] == ["Iteration 1", "Iteration 2"]
        assert "reached the maximum of 2 iterations" in status_text(app)
        query = str(app.query_one("#iteration-2 .query", Static).render())
        assert "Searched with the question; the draft + the question" in query  # fusion's two searches


@pilot_test
async def test_invalid_settings_are_refused_with_a_message(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        app.screen.query_one("#top_k", Input).value = "0"
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, SettingsScreen)
        assert any("top_k must be at least 1" in n.message for n in app._notifications)
        assert not config.paths.config_file().exists()


@pilot_test
async def test_palette_commands_change_settings(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        titles = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {"Settings", "History", "Export conversation", "Maximum iterations: 4"} <= set(titles)
        titles["Adaptive stop: turn off"].callback()
        titles["Maximum iterations: 4"].callback()
        assert (app.settings.adaptive, app.settings.iterations) == (False, 4)
        assert (config.load().adaptive, config.load().iterations) == (False, 4)


@pilot_test
async def test_history_reopens_a_conversation_with_its_iterations(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot)
        await pilot.press("ctrl+n")
        assert not answers(app) and not app.query(IterationPane)
        await pilot.press("f3")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.said))  # set once its panes are all shown
        assert len(app.query(IterationPane)) == 3
        (view,) = answers(app)
        assert view.final.question == QUESTION
        assert "**Answer:** Dijon" in view.source
        assert draft_source(app, 2) == DRAFTS[1]
        assert app.conversation_id == app.history.recent()[0].id
        assert str(app.query_one("#iteration-2 .query", Static).render()).startswith("Query: ")


@pilot_test
async def test_export_writes_the_conversation_with_sources(tmp_path):
    app, _ = make_app(tmp_path)
    target = tmp_path / "out" / "chat.md"
    async with app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot)
        await pilot.press("f4")
        app.screen.query_one("#export-path", Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause(0.1)
    text = target.read_text("utf-8")
    assert f"## {QUESTION}" in text
    assert "`docs/gustave.pdf (p. 2)`" in text
    assert "converged at iteration 3" in text


@pilot_test
async def test_selecting_a_passage_opens_it_whole(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot)
        options = app.query_one("#iteration-1", IterationPane).query_one(OptionList)
        options.focus()
        options.highlighted = 1
        await pilot.press("enter")
        assert isinstance(app.screen, PassageScreen)
        assert app.screen.passage.text == "Gustave Eiffel was born in Dijon in 1832."
        await pilot.press("escape")
        assert not isinstance(app.screen, PassageScreen)


@pilot_test
async def test_help_opens_on_f1(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert type(app.screen).__name__ == "Screen"


@pilot_test
async def test_clicking_an_earlier_answer_shows_its_iterations(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot)
        app.change(iterations=1)
        await ask_and_wait(pilot, "Where is the Eiffel Tower?")
        assert len(app.query(IterationPane)) == 1
        first = answers(app)[0]
        await pilot.click(first)
        # shown is set once the last pane is finished: leaving sooner tears panes down mid-show
        await wait_for(pilot, lambda: app.panes.shown is first.final)
        assert len(app.query(IterationPane)) == 3
        assert draft_source(app, 3) == DRAFTS[2]


@pilot_test
async def test_saving_settings_keeps_this_runs_flags_out_of_the_file(tmp_path):
    app, _ = make_app(tmp_path)  # its settings name test models, as --llm/--embedder would
    async with app.run_test(size=SIZE):
        app.change(top_k=7)
    stored = config.load()
    assert stored.top_k == 7
    # Not the app's test models: the suite's pin of the reader (conftest) and the default embedder.
    assert (stored.llm, stored.embedder) == ("smollm2-135m", config.Settings().embedder)


@pilot_test
async def test_the_window_shortens_the_gil_switch_interval_while_it_runs(tmp_path):
    """Tokens come from a worker thread; the default 5 ms interval let rendering hold
    each one back (docs/performance.md). The process gets its own interval back."""
    import sys

    from iterretgen_tui.ui.app import GIL_SWITCH_SECONDS

    before = sys.getswitchinterval()
    assert before != GIL_SWITCH_SECONDS
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        assert abs(sys.getswitchinterval() - GIL_SWITCH_SECONDS) < 1e-9  # stored in microseconds
    assert sys.getswitchinterval() == before


@pilot_test
async def test_the_evidence_is_shown_under_the_answer(tmp_path):
    app, _ = make_app(tmp_path, generator=HeldGenerator(DRAFTS))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask_and_wait(pilot)
        final = answers(app)[-1]
        evidence = final.final.evidence
        assert evidence is not None
        assert evidence.text in final.final.sources[evidence.n - 1].text
        source = final.source
        assert source.index("**Answer:** Dijon") < source.index("**From your documents:**")
        assert f"“{evidence.text}” **[{evidence.n}]**" in source
        # Beside it, the sentence closest to the draft with the question, on a line of its own.
        assert evidence.also is not None and evidence.also.text not in evidence.text
        assert evidence.also.text in final.final.sources[evidence.also.n - 1].text
        assert f"\\\n“{evidence.also.text}” **[{evidence.also.n}]**" in source
        assert "⚠" not in source


@pilot_test
async def test_no_answer_found_is_said_plainly_and_the_evidence_leads(tmp_path):
    # The model reasons without ever stating an answer, and has none when asked.
    generator = HeldGenerator(["Gustave Eiffel was an engineer of great renown.", ""])
    app, _ = make_app(tmp_path, replace(SCRIPTED, iterations=1), generator=generator)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask_and_wait(pilot)
        source = answers(app)[-1].source
        assert source.startswith("⚠ No answer found: the model did not state one.")
        assert source.index("**From your documents:**") < source.index("Gustave Eiffel was an engineer")
        assert "**Answer:**" not in source


@pilot_test
async def test_an_answer_to_the_rest_of_the_question_says_what_was_asked(tmp_path):
    # The draft answers the bridge; the rest of the question, asked afresh, answers it.
    drafts = [
        "The builder of the Eiffel Tower was Gustave Eiffel. So the answer is Gustave Eiffel.",
        "Gustave Eiffel was born in Dijon. So the answer is Dijon.",
    ]
    app, _ = make_app(tmp_path, replace(SCRIPTED, iterations=1), generator=HeldGenerator(drafts))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask_and_wait(pilot)
        source = answers(app)[-1].source
        assert "**Answer:** Dijon" in source
        assert "asked next: Where was Gustave Eiffel born?" in source
        note = str(app.query_one("#iteration-1", IterationPane).query_one(".note", Static).render())
        assert "Answer: Dijon (asked next: Where was Gustave Eiffel born?)" in note


def rewriting(rewrite: str) -> HeldGenerator:
    """A reader that rewrites every follow-up as ``rewrite`` and drafts from the first passage."""
    from iterretgen_tui.engine.loop.conversation import REWRITE_INSTRUCTION

    def reply(messages) -> str:
        if messages[0]["content"] == REWRITE_INSTRUCTION:
            return rewrite
        return "Gustave Eiffel was born in Dijon. So the answer is Dijon."

    generator = HeldGenerator(reply)
    generator.release.set()
    return generator


@pilot_test
async def test_a_follow_up_is_read_with_the_turns_above_it(tmp_path):
    from iterretgen_tui.engine.loop.conversation import Turn, next_rewrite

    generator = rewriting("Where was Gustave Eiffel born?")
    app, sessions = make_app(tmp_path, generator=generator)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask_and_wait(pilot, "Who built the Eiffel Tower?")
        assert sessions[0].turns == [()]  # a first question is asked alone
        # While the answer is read, the next question's rewrite is evaluated up to it.
        await wait_for(pilot, lambda: generator.prefilled)
        assert generator.prefilled[-1] == next_rewrite([Turn("Who built the Eiffel Tower?", "Dijon")])
        await ask_and_wait(pilot, "Where was he born?")
        [(turn,)] = sessions[0].turns[1:]
        assert turn.question == "Who built the Eiffel Tower?" and turn.answer == "Dijon"
        read_as = str(app.query_one("#iteration-1", IterationPane).query_one(".read-as", Static).render())
        assert read_as == "Read as: Where was Gustave Eiffel born?"
        assert answers(app)[-1].source.startswith("_Read as: Where was Gustave Eiffel born?_")
        cid = app.conversation_id
        await pilot.press("ctrl+n")  # a new conversation forgets the turns
        await ask_and_wait(pilot, "Where was he born?")
        assert sessions[0].turns[-1] == ()
        await app.reopen(cid)  # one reopened from the history (F3) remembers its own
        await wait_for(pilot, lambda: "Where was he born?" in generator.prefilled[-1][-1]["content"])
        await ask_and_wait(pilot, "When?")
        assert [t.question for t in sessions[0].turns[-1]] == ["Who built the Eiffel Tower?", "Where was he born?"]


@pilot_test
async def test_a_conversation_reopened_from_another_folder_goes_on_over_that_folder(tmp_path):
    app, sessions = make_app(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask_and_wait(pilot, "Who built the Eiffel Tower?")
        final = answers(app)[-1].final
        there, gone = (app.history.start("Who built it?", str(folder)) for folder in (other, tmp_path / "gone"))
        for cid in (there, gone):
            app.history.add_turn(cid, final)
        await app.reopen(gone)  # shown to read: its folder is gone, a question starts anew here
        assert (app.conversation_id, app.said, app.folder) == (None, [], tmp_path / "docs")
        await app.reopen(there)
        assert (app.folder, app.sub_title, config.load().last_folder) == (other, str(other), str(other))
        await wait_for(pilot, app.ready.is_set)
        assert len(sessions) == 1 and sessions[0].folder == other  # the models in use index it
        await ask_and_wait(pilot, "When?")
        assert [t.question for t in sessions[0].turns[-1]] == ["Who built the Eiffel Tower?"]
        assert len(app.history.get(there).turns) == 2


@pilot_test
async def test_the_next_question_and_quitting_stop_the_read_ahead_of_the_answer_before_it(tmp_path):
    app, sessions = make_app(tmp_path, generator=rewriting("Where was Gustave Eiffel born?"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        session, stops = sessions[0], []
        real = session.read_ahead

        def recorded(turns, stop=None) -> None:
            stops.append(stop)
            real(turns, stop)

        session.read_ahead = recorded
        await ask_and_wait(pilot, "Who built the Eiffel Tower?")
        await wait_for(pilot, lambda: stops)
        assert not stops[0].is_set()
        await ask_and_wait(pilot, "Where was he born?")
        assert stops[0].is_set()  # set by the question, on the app's thread
        await wait_for(pilot, lambda: len(stops) == 2)
        assert not stops[1].is_set()  # the new answer's read-ahead waits for the next question
    assert stops[1].is_set()  # quitting stops it too


@pilot_test
async def test_a_follow_up_left_as_typed_says_the_reader_saw_the_turn_it_points_to(tmp_path):
    app, _ = make_app(tmp_path, generator=rewriting("Where was he born?"))  # the reader leaves it as it was
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask_and_wait(pilot, "Who built the Eiffel Tower?")
        await ask_and_wait(pilot, "Where was he born?")
        read_as = str(app.query_one("#iteration-1", IterationPane).query_one(".read-as", Static).render())
        assert read_as == "Read as asked, with the turn it points back to shown to the reader"


@pilot_test
async def test_a_question_that_can_mean_several_named_things_is_asked_back(tmp_path):
    from .test_ambiguity import CLINICS

    generator = HeldGenerator(["The Causeway VA Clinic offers primary care. So the answer is primary care."])
    generator.release.set()
    app, sessions = make_app(tmp_path, corpus=CLINICS, generator=generator)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await ask_and_wait(pilot, "What services does the clinic provide?")
        source = answers(app)[-1].source
        assert source.startswith("**Which clinic do you mean: ") and "Sources" in source
        note = str(app.query_one("#iteration-1", IterationPane).query_one(".note", Static).render())
        assert "asked which one is meant at iteration 1" in note
        assert "asked which one is meant" in status_text(app)
        # The reply to it is a follow-up: the question back is the assistant's turn.
        await ask_and_wait(pilot, "The Causeway VA Clinic")
        [(turn,)] = sessions[0].turns[1:]
        assert turn.answer.startswith("Which clinic do you mean: ")


@pilot_test
async def test_text_that_looks_like_a_tag_is_shown_not_dropped():
    from textual.app import App
    from textual.widgets._markdown import MarkdownParagraph

    from iterretgen_tui.ui.streaming import StreamingMarkdown

    class Page(App):
        def compose(self):
            yield StreamingMarkdown("When the field is set to <keywords>, the builder runs <cmd>.")

    app = Page()
    async with app.run_test() as pilot:
        await pilot.pause()
        [paragraph] = app.query(MarkdownParagraph)
        assert paragraph._content.plain == "When the field is set to <keywords>, the builder runs <cmd>."
