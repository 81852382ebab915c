"""The chat app: the conversation on the left, one pane per iteration on the right, a
status line below.

Model work runs in thread workers, never on the UI thread: ``prepare`` loads the
models and indexes the folder once; ``answer`` drives one question through the
session's event generator (exclusive: a new question replaces the old, whose cancel
Event is set first). ``prepare`` reports through the typed messages in messages.py;
``answer`` through the ordered feed in driver.py, which the UI drains in batches. When
the default reader is not pulled yet, ``auto_pull_worker`` pulls it (pulling.py) and the
app then prepares again with it.
"""

from __future__ import annotations

import itertools
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Header, Input

from .. import config, models, paths
from .. import history as history_module
from ..config import Settings
from ..engine.counting import counted
from ..engine.errors import IterRetGenError
from ..engine.loop.conversation import Turn, turn_of, turns_of
from ..engine.loop.events import (
    ContextTrimmed,
    DraftDone,
    FinalAnswer,
    FirstAnswer,
    IterationStarted,
    PassagesRetrieved,
    QueryFormed,
    QuestionRead,
    Stopped,
    StopReason,
)
from ..engine.loop.options import LoopOptions
from ..history import History
from .conversation import AnswerView, ChatLog
from .driver import FLUSH_SECONDS, Abandoned, Failed, Feed, Item, SessionLike, Tokens, abandonable, pump
from .iterations import IterationPane, IterationPanes
from .messages import Activity, FeedReady, IndexProgressed, Prepared
from .pulling import AutoPull, PullFinished, PullFunction, PullProgressed, pull_model, pull_reporting
from .screens.export import ExportScreen
from .screens.help import HelpScreen
from .screens.history import HistoryScreen
from .screens.models import ModelsScreen
from .screens.passage import PassageScreen
from .screens.settings import SettingsScreen
from .status import StatusLine
from .terminal import HANGUP_CHECK_SECONDS, hung_up, terminal_fd
from .welcome import Overview, Welcome

log = logging.getLogger(__name__)

SessionFactory = Callable[[Settings], SessionLike]
MODEL_FIELDS = ("llm", "embedder", "query_encoder", "device")
# The model decodes in a worker thread that needs the GIL between tokens; at Python's
# default switch interval a rendering UI thread holds each token up to that long
# (docs/performance.md, scripts/bench_tui.py).
GIL_SWITCH_SECONDS = 0.0002


def error_message(exc: BaseException) -> str:
    """What the app shows for a failure: ours say what to do; anything else is a bug,
    named as such (the log keeps its traceback)."""
    if isinstance(exc, IterRetGenError):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc} (the log has the details)"


@dataclass
class Asking:
    """One question being answered."""

    id: int
    question: str
    options: LoopOptions  # the settings when it was asked
    answer: AnswerView
    turns: tuple[Turn, ...] = ()  # the conversation before it, read with it
    cancel: threading.Event = field(default_factory=threading.Event)
    t: int = 0  # the iteration under way
    done: bool = False

    @property
    def live(self) -> bool:
        return not (self.done or self.cancel.is_set())


class ChatApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "iterretgen-chat"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("f1", "help", "Help"),
        Binding("f2", "settings", "Settings"),
        Binding("f3", "history", "History"),
        Binding("f4", "export", "Export"),
        Binding("f5", "models", "Models"),
        Binding("ctrl+r", "reindex", "Re-index"),
        Binding("ctrl+n", "new_chat", "New chat"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
        # The question keeps the focus; these scroll the conversation above it.
        Binding("pageup", "scroll_chat(-1)", "Scroll up", show=False),
        Binding("pagedown", "scroll_chat(1)", "Scroll down", show=False),
    ]

    def __init__(
        self,
        settings: Settings,
        folder: Path,
        session_factory: SessionFactory,
        *,
        history: History | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.folder = folder
        self.session_factory = session_factory
        self.history = history
        self.session: SessionLike | None = None
        self.ready = threading.Event()  # set once preparing has finished, well or not
        self.unavailable = ""  # why questions cannot be answered, when preparing failed
        self.stop_preparing = threading.Event()  # stops the preparing under way: replaced, or the app quits
        self.overview = Overview(str(folder), settings.llm, settings.embedder)
        self.models_screen_options: dict = {}  # ModelsScreen's pull, devices, unreachable: tests pass fakes
        self.auto_pull: AutoPull | None = None  # the app's own pull of the default reader, once started
        self.auto_pull_function: PullFunction = pull_model  # tests pass a fake
        self.current: Asking | None = None
        self.feed = Feed()
        self.run_ids = itertools.count(1)
        self.conversation_id: int | None = None
        self.said: list[FinalAnswer] = []  # the conversation's answered turns, oldest first
        # Set by the next question: the read-ahead under way gives way. Made on this thread,
        # with each question, so a read-ahead cannot start after the question that stops it.
        self.stop_reading_ahead = threading.Event()
        self.sub_title = str(folder)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="chat"):
                with ChatLog(id="log"):
                    yield Welcome(self.overview)
                yield Input(placeholder="Ask about your documents (Enter sends, Esc cancels)", id="question")
            yield IterationPanes(id="iterations")
        yield StatusLine(self.settings.llm, self.settings.embedder, self.settings.device)
        yield Footer()

    def on_mount(self) -> None:
        self.switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_SECONDS)
        if self.history is None:
            self.history = History()
        self.main.query_one("#question", Input).focus()
        self.status.set_activity("starting")
        self.set_interval(FLUSH_SECONDS, self.wake_if_fed)
        terminal = None if self.is_headless else terminal_fd(sys.__stdin__)
        if terminal is not None:
            self.set_interval(HANGUP_CHECK_SECONDS, partial(self.quit_if_hung_up, terminal))
        # Paint the first frame before the worker's imports (torch) compete for the GIL.
        self.call_after_refresh(self.prepare, self.settings)

    def on_unmount(self) -> None:
        sys.setswitchinterval(self.switch_interval)
        self.stop_preparing.set()
        if self.current is not None:
            self.current.cancel.set()
        self.stop_reading_ahead.set()  # quitting waits for the step under way, not the rest
        if self.auto_pull is not None:
            self.auto_pull.stop.set()  # it stops at its next report; the next start resumes it

    def quit_if_hung_up(self, terminal: int) -> None:
        """The terminal closed without a SIGHUP reaching the app (ui/terminal.py): quit,
        as Ctrl+Q does. Every answered turn is already in the history."""
        if hung_up(terminal):
            log.info("the terminal hung up: quitting")
            self.exit()

    @property
    def main(self) -> Screen:
        """The chat screen, also while a dialog is open over it (App.query sees only the top screen)."""
        return self.screen_stack[0]

    def closing(self) -> bool:
        """Workers' messages can arrive while the window is being torn down: drop them then."""
        return not self.is_running or not self.screen_stack

    @property
    def status(self) -> StatusLine:
        return self.main.query_one(StatusLine)

    @property
    def panes(self) -> IterationPanes:
        return self.main.query_one(IterationPanes)

    # Preparing: models, then the folder's index. Run again to re-index (with the models
    # of ``session``) or to switch models (a new session); the old session answers meanwhile.

    def prepare(self, settings: Settings, session: SessionLike | None = None) -> None:
        self.stop_preparing.set()  # a newer preparing replaces the one under way
        self.stop_preparing = threading.Event()
        self.prepare_worker(settings, session, self.stop_preparing)

    @work(thread=True, exclusive=True, group="prepare", exit_on_error=False)
    def prepare_worker(self, settings: Settings, session: SessionLike | None, stop: threading.Event) -> None:
        post = self.post_message
        try:
            if session is None:
                session = self.session_factory(settings)
                abandonable(lambda: session.load_models(status=lambda text: post(Activity(text))), stop)
            post(Activity(f"checking the index of {self.folder}"))
            report = session.open_folder(self.folder, progress=lambda p: post(IndexProgressed(p)), cancel=stop)
            if stop.is_set():
                return  # replaced, or the app is closing
            skipped = tuple(f"{skip.path}: {skip.reason}" for skip in report.skipped)
            post(
                Prepared(
                    session.info(),
                    skipped=skipped,
                    not_read=report.not_read(),
                    removed=report.removed_note(),
                    session=session,
                    settings=settings,
                    examples=tuple(session.examples()),
                )
            )
        except Abandoned:
            return
        except Exception as exc:  # shown in the app; the log keeps the traceback
            log.exception("preparing failed")
            post(Prepared({}, error=error_message(exc), settings=settings))
            return
        try:
            session.warm_reader()  # the demos are evaluated while the user reads the welcome
        except Exception:  # the first question evaluates them instead
            log.exception("evaluating the reader's demos ahead failed")

    def on_activity(self, message: Activity) -> None:
        if self.closing():
            return
        self.status.set_activity(message.text)
        self.show_overview(activity=message.text)

    def on_index_progressed(self, message: IndexProgressed) -> None:
        if self.closing():
            return
        self.status.show_progress(message.progress)
        self.show_overview(progress=message.progress)

    def show_overview(self, **changes) -> None:
        self.overview = replace(self.overview, **changes)
        for welcome in self.main.query(Welcome):
            welcome.show(self.overview)

    async def on_prepared(self, message: Prepared) -> None:
        if self.closing():
            return
        self.status.hide_progress()
        error = message.error
        if not error and not message.info.get("passages"):
            error = f"no readable documents in {self.folder}"
        if error and self.session is not None and message.session is not self.session:
            # Another model failed to load: the one in use goes on answering.
            self.status.set_activity(f"kept {self.session.info()['llm']}: {error}")
            self.notify(error, title="Could not switch models", severity="error", timeout=20)
            self.show_overview(progress=None)
        elif error:
            self.unavailable = error
            self.status.set_activity(f"cannot answer: {error}")
            self.notify(error, title="Cannot answer questions", severity="error", timeout=20)
            self.show_overview(progress=None, error=error)
        else:
            self.session, self.unavailable = message.session, ""
            settings = message.settings
            self.status.set_info(message.info)
            self.status.set_activity("ready")
            self.reader_changed(settings.llm, message.info.get("llm_note", ""))
            self.show_overview(
                progress=None,
                error="",
                info=message.info,
                not_read=message.not_read,
                examples=message.examples,
                llm=settings.llm,
                embedder=settings.embedder,
            )
            await self.mark_stale()  # a re-index may have brought sources up to date
        if message.removed:
            self.notify(message.removed, title="Disk space freed", timeout=10)
        if message.skipped:
            listed = "\n".join(message.skipped[:5])
            more = f"\n… and {len(message.skipped) - 5} more" if len(message.skipped) > 5 else ""
            self.notify(
                f"{listed}{more}",
                title=f"{message.not_read} not indexed",
                severity="warning",
                timeout=15,
            )
        self.ready.set()

    # The default reader, pulled in the background while the embedded one reads.

    def reader_changed(self, llm: str, note: str) -> None:
        """A session for ``llm`` is ready; ``note`` says why the embedded model reads in its
        place, if it does."""
        pull = self.auto_pull
        if not note:
            if pull is not None and pull.state == "loading" and llm == pull.name:
                pull.state = "done"
                self.notify(f"Now reading with {pull.name}", title="Reader", timeout=15)
        elif pull is None and self.settings.auto_pull:  # once a run: a failure is not retried by itself
            self.start_auto_pull()
        elif pull is None:
            self.notify(note, title="Reader", timeout=30)

    def start_auto_pull(self) -> None:
        name = models.DEFAULT_LLM
        self.auto_pull = AutoPull(name)
        size = models.catalogue.load()[name].size_mb / 1000
        self.notify(
            f"The default reader {name} is not downloaded yet: pulling it now (about {size:.1f} GB, "
            f"the status line shows how far). {models.EMBEDDED_LLM} answers meanwhile; the chat switches "
            "when the pull is done. Turn auto_pull off in the settings (F2) to stop it.",
            title="Reader",
            timeout=30,
        )
        self.show_pull(f"pulling {name}…")
        self.auto_pull_worker(self.auto_pull)

    @work(thread=True, exclusive=True, group="auto-pull", exit_on_error=False)
    def auto_pull_worker(self, pull: AutoPull) -> None:
        pull_reporting(self.auto_pull_function, pull.name, pull.stop, self.post_message)

    def on_pull_progressed(self, message: PullProgressed) -> None:
        pull = self.auto_pull
        if self.closing() or pull is None:
            return
        self.show_pull(pull.pace.line(pull.name, message.done, message.total, time.monotonic()))

    def on_pull_finished(self, message: PullFinished) -> None:
        pull = self.auto_pull
        if self.closing() or pull is None:
            return
        if message.cancelled:
            pull.state = "stopped"
            self.show_pull(f"stopped pulling {pull.name}: {pull.retry} resumes it")
        elif message.error:
            pull.state = "failed"
            self.show_pull(f"could not pull {pull.name}: the chat stays on {models.EMBEDDED_LLM}; retry: {pull.retry}")
            self.notify(message.error, title=f"Could not pull {pull.name}", severity="error", timeout=20)
        else:
            self.switch_to_pulled(pull)

    def switch_to_pulled(self, pull: AutoPull) -> None:
        """Load the pulled reader in a new session, as a switch from F5 does: the old one
        answers meanwhile, and a question it is answering runs to its end."""
        self.show_pull("")
        if self.settings.llm != pull.name:  # the user chose another reader meanwhile
            pull.state = "done"
            self.notify(f"Pulled {pull.name}: F5 switches to it", title="Reader")
            return
        pull.state = "loading"
        self.status.set_activity(f"pulled {pull.name}: loading it")
        self.prepare(self.settings)

    def show_pull(self, text: str) -> None:
        self.status.set_pull(text)
        self.show_overview(pull=text)

    def pulling_in_background(self) -> str:
        """The model the app pulls by itself now, or "" (for the models screen)."""
        pull = self.auto_pull
        return pull.name if pull is not None and pull.state == "pulling" else ""

    def auto_pull_set(self, on: bool) -> None:
        """The setting changed: off stops a pull under way (resumable); on starts one when the
        embedded model reads in the default's place."""
        pull = self.auto_pull
        if not on and pull is not None and pull.state == "pulling":
            pull.stop.set()
        elif on and (pull is None or not pull.busy) and self.reading_in_place():
            self.start_auto_pull()

    def reading_in_place(self) -> bool:
        """Whether the embedded model reads because the default reader is not pulled yet."""
        return self.session is not None and bool(self.session.info().get("llm_note"))

    # Answering.

    async def on_welcome_example_chosen(self, message: Welcome.ExampleChosen) -> None:
        await self.ask(message.question)

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "question" or not event.value.strip():
            return
        event.input.clear()
        await self.ask(event.value.strip())

    async def ask(self, question: str) -> None:
        self.stop_reading_ahead.set()
        self.stop_reading_ahead = threading.Event()
        await self.cancel_current()
        answer = await self.main.query_one(ChatLog).add_question(question)
        run = Asking(next(self.run_ids), question, self.settings.loop, answer, turns_of(self.said))
        self.current = run
        await self.panes.reset()
        if not self.ready.is_set():
            await answer.replace("_Waiting for the models and the index to be ready…_")
        self.answer(run, self.stop_reading_ahead)

    @work(thread=True, exclusive=True, group="answer", exit_on_error=False)
    def answer(self, run: Asking, stop_reading_ahead: threading.Event) -> None:
        while not self.ready.wait(0.1):
            if run.cancel.is_set():
                return
        try:
            if self.unavailable or self.session is None:
                raise IterRetGenError(f"cannot answer: {self.unavailable}")
            events = self.session.ask(run.question, cancel=run.cancel, options=run.options, turns=run.turns)
            last = pump(events, run=run.id, feed=self.feed, wake=self.wake, cancel=run.cancel)
        except Exception as exc:
            log.exception("answering failed")
            self.feed.put(run.id, Failed(error_message(exc)))
            self.wake()
            return
        if isinstance(last, FinalAnswer) and not run.cancel.is_set():
            self.read_ahead_now((*run.turns, turn_of(last)), stop_reading_ahead)

    @work(thread=True, exclusive=True, group="read-ahead", exit_on_error=False)
    def read_ahead(self, turns: tuple[Turn, ...], stop: threading.Event) -> None:
        self.read_ahead_now(turns, stop)

    def read_ahead_now(self, turns: tuple[Turn, ...], stop: threading.Event) -> None:
        """The next question's prompts evaluated up to that question while the user reads
        (Session.read_ahead); a question asked meanwhile (``stop``) waits for the step under
        way and keeps what it evaluated, and the steps after it are not taken: none, where
        the question came before this answer's read-ahead began."""
        try:
            self.session.read_ahead(turns, stop)
        except Exception:  # the next follow-up evaluates it instead
            log.exception("reading the conversation ahead failed")

    def wake(self) -> None:
        self.post_message(FeedReady())

    def wake_if_fed(self) -> None:
        if self.feed:
            self.wake()

    def live_run(self, run_id: int) -> Asking | None:
        """The run a worker message belongs to, unless it was replaced or cancelled."""
        run = self.current
        return run if run is not None and run.id == run_id and run.live else None

    async def on_feed_ready(self, _: FeedReady) -> None:
        if self.closing():
            return
        for run_id, item in self.feed.take():
            run = self.live_run(run_id)
            if run is not None:  # else replaced or cancelled: nothing more is shown
                await self.show_item(run, item)

    async def show_item(self, run: Asking, item: Item) -> None:
        pane = self.panes.pane(getattr(item, "t", run.t))
        match item:
            case Tokens(text=text) if pane:
                await pane.write(text)
                await run.answer.write(text)
            case IterationStarted(t=t, max_t=max_t):
                run.t = t
                await self.panes.start(t)
                await run.answer.restart(f"Iteration {t} of at most {max_t}: retrieving…")
                self.status.set_activity(f"iteration {t} of at most {max_t}")
            case QuestionRead(standalone=standalone) if pane:
                pane.show_read_as(item)
                if standalone:
                    await run.answer.restart(f"Read as: {standalone} — retrieving…")
            case QueryFormed(t=t, query=query, searches=searches) if pane:
                pane.show_query(query, searches, self.panes.lead(t))
            case PassagesRetrieved(t=t, passages=passages, found_by=found_by, kept=kept) if pane:
                pane.show_passages(passages, self.panes.origins(t, passages, found_by), self.stale(passages))
                new = counted(len(passages), "new passage" if kept else "passage")
                reading = f"{new} and {kept} kept" if kept else new
                await run.answer.restart(f"Iteration {t}: reading {reading}…")
            case ContextTrimmed(kept=kept, dropped=dropped, truncated=truncated) if pane:
                pane.note(f"{counted(kept, 'passage')} fit the model ({dropped} left out, {truncated} shortened)")
            case DraftDone(trace=trace) if pane:
                origins = self.panes.origins(trace.t, trace.passages, trace.found_by)
                await pane.finish(trace, origins, self.stale(trace.passages))
            case FirstAnswer(answer=first):
                await run.answer.show_first(first)
            case Stopped(t=t, reason=reason):
                why = reason.describe(t)
                if reason is StopReason.SAME_PASSAGES:
                    # Stopped before drafting: the passages listed were not read at this iteration.
                    why += " (stopped before drafting: no draft from the passages above)"
                await self.close_pane(run, why)
            case FinalAnswer():
                await self.finish(run, item)
            case Failed(error=error):
                await self.fail(run, error)

    async def close_pane(self, run: Asking, why: str) -> None:
        """An iteration that ended without a draft (no new passages, cancel) says why."""
        pane = self.panes.pane(run.t)
        if pane is not None and pane.border_subtitle == "running":
            await pane.stop()
            pane.border_subtitle = "stopped"
            pane.note(why)

    async def finish(self, run: Asking, final: FinalAnswer) -> None:
        run.done = True
        self.save_turn(final)  # before rendering: quitting mid-render loses nothing
        self.said.append(final)
        await run.answer.finish(final, self.stale(final.sources))
        self.panes.shown = final
        self.status.set_activity(history_module.stop_summary(final))

    # Stale sources: files changed or deleted since they were indexed.

    def stale(self, passages: Iterable) -> dict[str, str]:
        session = self.session
        return session.stale_sources(p.source for p in passages) if session is not None else {}

    async def mark_stale(self) -> None:
        """Mark again every finished answer on show (after a re-index, most marks go)."""
        try:
            for view in self.main.query(AnswerView):
                if view.final is not None:
                    await view.finish(view.final, self.stale(view.final.sources))
            shown = self.panes.shown
            if shown is not None and (self.current is None or not self.current.live):
                await self.panes.show(shown, self.stale(p for trace in shown.iterations for p in trace.passages))
        except NoMatches:
            if not self.closing():  # else the window closed while this ran: nothing to mark
                raise

    def action_reindex(self) -> None:
        """Bring the index in step with the folder (with the models in use), in the background."""
        self.status.set_activity(f"re-indexing {self.folder}")
        self.prepare(self.settings, self.session)

    def save_turn(self, final: FinalAnswer) -> None:
        try:
            if self.conversation_id is None:
                self.conversation_id = self.history.start(final.question, str(self.folder))
            self.history.add_turn(self.conversation_id, final)
        except IterRetGenError as exc:
            self.notify(str(exc), severity="warning")

    async def fail(self, run: Asking, error: str) -> None:
        run.done = True
        await self.close_pane(run, "failed")
        await run.answer.replace(f"**Could not answer:** {error}")
        self.status.set_activity("the last question failed")
        self.notify(error, title="Could not answer", severity="error", timeout=15)

    async def cancel_current(self) -> None:
        """Esc, a new question, another conversation: the running answer stops at once."""
        run = self.current
        if run is None or not run.live:
            return
        run.cancel.set()  # the worker stops reading events, the model stops decoding
        why = StopReason.CANCELLED.describe(max(run.t, 1))
        await self.close_pane(run, why)
        await run.answer.add_note("_Cancelled._")
        self.status.set_activity(why)

    async def action_cancel(self) -> None:
        await self.cancel_current()

    # Screens and commands.

    def on_iteration_pane_passage_chosen(self, message: IterationPane.PassageChosen) -> None:
        self.push_screen(
            PassageScreen(
                message.passage, message.origin, self.stale([message.passage]).get(message.passage.source, "")
            )
        )

    async def on_answer_view_selected(self, message: AnswerView.Selected) -> None:
        if self.current is None or not self.current.live:
            final = message.final
            await self.panes.show(final, self.stale(p for trace in final.iterations for p in trace.passages))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_models(self) -> None:
        screen = ModelsScreen(self.settings, background=self.pulling_in_background, **self.models_screen_options)
        self.push_screen(screen, callback=self.apply_settings)

    def action_settings(self) -> None:
        self.push_screen(SettingsScreen(self.settings), callback=self.apply_settings)

    def apply_settings(self, settings: Settings | None) -> None:
        if settings is None or settings == self.settings:
            return
        changed = {
            f.name: getattr(settings, f.name)
            for f in fields(Settings)
            if getattr(settings, f.name) != getattr(self.settings, f.name)
        }
        try:
            # Only what the user changed: this run's command-line flags stay unsaved.
            config.save(replace(config.load(), **changed))
        except (OSError, config.ConfigError) as exc:
            self.notify(f"could not save the settings: {exc}", severity="error")
            return
        models_changed = not changed.keys().isdisjoint(MODEL_FIELDS)
        self.settings = settings
        if "auto_pull" in changed:
            self.auto_pull_set(settings.auto_pull)
        note = ""
        if models_changed:  # loaded in the background; the models in use answer meanwhile
            self.prepare(settings)
            note = " Loading the new models" + (
                ", then indexing the folder for the new embedder." if "embedder" in changed else "."
            )
            self.status.set_activity("switching models")
        self.notify(f"Settings saved to {paths.config_file()}.{note}", title="Settings")

    def change(self, **values) -> None:
        self.apply_settings(replace(self.settings, **values))

    def action_history(self) -> None:
        self.push_screen(HistoryScreen(self.history.recent()), callback=self.reopen)

    async def reopen(self, conversation_id: int | None) -> None:
        """Show a conversation from the history; a question goes on with it, over its
        own folder (opened in place of this one), or starts a new conversation where that
        folder is gone."""
        if conversation_id is None:
            return
        conversation = self.history.get(conversation_id)
        folder = Path(conversation.folder)
        await self.cancel_current()
        chat = self.main.query_one(ChatLog)
        await chat.clear()
        for final in conversation.turns:
            await chat.add_turn(final, self.stale(final.sources))
        if conversation.turns:
            last = conversation.turns[-1]
            await self.panes.show(last, self.stale(p for trace in last.iterations for p in trace.passages))
        else:
            await self.panes.reset()
        if folder != self.folder and not folder.is_dir():
            self.conversation_id, self.said = None, []
            self.status.set_activity(f"reopened to read: {conversation.title}")
            self.notify(
                f"Its folder, {folder}, is not there any more: a question here starts a new "
                f"conversation over {self.folder}.",
                title="Reopened to read",
                severity="warning",
                timeout=15,
            )
            return
        self.conversation_id = conversation.id
        self.said = list(conversation.turns)  # a follow-up reads them as the chat's own
        if folder != self.folder:
            self.open_folder(folder)
        if self.said and self.session is not None:
            self.read_ahead(turns_of(self.said), self.stop_reading_ahead)
        self.status.set_activity(f"reopened: {conversation.title}")

    def open_folder(self, folder: Path) -> None:
        """Questions go to ``folder`` from now on, and wait while its index is opened or
        brought up to date with the models in use; the next plain start opens it too."""
        self.folder = folder
        self.sub_title = str(folder)
        self.overview = Overview(str(folder), self.settings.llm, self.settings.embedder)
        self.settings = replace(self.settings, last_folder=str(folder))
        try:
            config.remember_folder(folder)
        except (OSError, config.ConfigError) as exc:
            self.notify(f"could not save the folder as the last one used: {exc}", severity="warning")
        self.ready.clear()
        self.prepare(self.settings, self.session)

    def action_scroll_chat(self, pages: int) -> None:
        chat = self.main.query_one(ChatLog)
        if pages < 0:
            chat.scroll_page_up()
        else:
            chat.scroll_page_down()

    async def action_new_chat(self) -> None:
        await self.cancel_current()
        chat = self.main.query_one(ChatLog)
        await chat.clear()
        await chat.mount(Welcome(self.overview))
        await self.panes.reset()
        self.conversation_id = None
        self.said = []
        self.status.set_activity("new conversation")

    def action_export(self) -> None:
        if self.conversation_id is None:
            self.notify("Nothing to export yet: ask a question first.", severity="warning")
            return
        title = self.history.get(self.conversation_id).title
        slug = re.sub(r"[^\w-]+", "-", title.lower()).strip("-")[:48] or "conversation"
        self.push_screen(
            ExportScreen(Path.cwd() / f"{slug}.md"),
            callback=partial(self.export_to, self.conversation_id),
        )

    def export_to(self, conversation_id: int, path: Path | None) -> None:
        if path is None:
            return
        try:
            written = history_module.export(self.history.get(conversation_id), path)
        except OSError as exc:
            self.notify(f"could not write {path}: {exc.strerror or exc}", severity="error")
            return
        self.notify(f"Exported to {written}", title="Export")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        s = self.settings
        yield SystemCommand(
            "Models", "Installed and downloadable models: pull one, switch to one (F5)", self.action_models
        )
        yield SystemCommand(
            "Re-index the folder", "Read changed, new and deleted files again (Ctrl+R)", self.action_reindex
        )
        yield SystemCommand("Settings", "Iterations, top-k, adaptive stop, models (F2)", self.action_settings)
        yield SystemCommand("History", "Reopen an earlier conversation (F3)", self.action_history)
        yield SystemCommand("Export conversation", "Write it to a Markdown file (F4)", self.action_export)
        yield SystemCommand("New conversation", "Start afresh (Ctrl+N)", self.action_new_chat)
        yield SystemCommand(
            f"Adaptive stop: turn {'off' if s.adaptive else 'on'}",
            "Stop early when consecutive answers agree or retrieval finds nothing new",
            partial(self.change, adaptive=not s.adaptive),
        )
        yield SystemCommand(
            f"Keep earlier passages: turn {'off' if s.keep_passages else 'on'}",
            "Give the model earlier iterations' passages too",
            partial(self.change, keep_passages=not s.keep_passages),
        )
        for n in range(1, 6):
            yield SystemCommand(
                f"Maximum iterations: {n}",
                f"now {s.iterations}",
                partial(self.change, iterations=n),
                discover=False,
            )
