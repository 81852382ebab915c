"""F5: the models on this machine and the catalogue's others; pull one, or switch to one.

Rows come from the same listing as `iterretgen-chat models list`; the GGUFs found in
other apps' stores and model folders join them from a thread worker, which reads their
headers. Enter on an installed or found model switches to it (the app reloads; a new
embedder indexes the folder again, in the background); Enter on a found model that cannot
be a reader says why. Enter on one not installed pulls it in a thread worker through the
same ``models.pull.pull`` as `models pull`, with a progress bar here. Esc stops a pull (it
resumes where it stopped next time) or closes the screen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, ProgressBar, Static

from ... import models, paths
from ...config import Settings
from ...models import catalogue
from ...models.catalogue import CHAT_KINDS
from ..pulling import PullFinished, PullFunction, PullProgressed, pull_model, pull_reporting

DevicesFunction = Callable[[str], dict]  # models.devices.describe_devices
HINT = "Enter: switch to the selected model, or pull it · Esc: stop a pull, or close"


def describe_devices(device: str) -> dict:
    from ...models.devices import describe_devices  # imports torch and llama.cpp

    return describe_devices(device)


def hub_unreachable() -> str:
    from ...models.hub import unreachable

    return unreachable()


@dataclass
class Row:
    name: str
    kind: str
    source: str  # embedded, pulled, adapted, local, found; "" for one not installed
    size: str
    about: str
    problem: str = ""  # why a found model is not offered as a reader

    @property
    def installed(self) -> bool:
        return bool(self.source)


def about_found(item: models.FoundInstalled) -> str:
    facts = [item.quantisation, item.parameters and f"{item.parameters} parameters", f"found in {item.found_in}"]
    return " · ".join(filter(None, [*facts, item.problem and f"not offered: {item.problem}"]))


def rows(settings: Settings, local: list[models.FoundInstalled]) -> list[Row]:
    """The app's own models, those found on this machine (``local``), the catalogue's others."""
    found = models.own_models(
        {"llm": settings.llm, "embedder": settings.embedder, "query_encoder": settings.query_encoder},
        settings.model_folders,
    )
    entries = catalogue.load()
    listed = [
        Row(
            i.name,
            i.kind,
            i.source,
            models.human(i.size_bytes),
            entries[i.name].description if i.name in entries else i.path,
        )
        for i in found
    ]
    listed += [Row(i.name, i.kind, i.source, models.human(i.size_bytes), about_found(i), i.problem) for i in local]
    listed += [
        Row(e.name, e.kind, "", "~" + models.human(e.size_mb * 1000**2), e.description) for e in models.available(found)
    ]
    return listed


def role(row: Row) -> str:
    """The setting an installed model fills: chat models the LLM, `adapt`'s query encoders theirs."""
    if row.kind in CHAT_KINDS:
        return "llm"
    return "query_encoder" if row.source == "adapted" else "embedder"


@dataclass
class Found(Message):
    """What a background look-up found: the hub line, where models run, or the models
    found on this machine."""

    hub: str | None = None
    devices: dict | None = None
    local: list[models.FoundInstalled] | None = None


class ModelsScreen(ModalScreen[Settings | None]):
    """Dismisses with settings naming another model, or None."""

    BINDINGS = [Binding("escape", "close", "Stop the pull / close")]

    def __init__(
        self,
        settings: Settings,
        *,
        pull: PullFunction | None = None,
        devices: DevicesFunction | None = None,
        unreachable: Callable[[], str] | None = None,
        background: Callable[[], str] = str,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.pull = pull or pull_model
        self.devices = devices or describe_devices
        self.unreachable = unreachable or hub_unreachable
        self.background = background  # the model the app pulls by itself now, or ""
        self.where: dict = {}
        self.rows: list[Row] = []
        self.local: list[models.FoundInstalled] = []  # found on this machine, once the look-up has read them
        self.pulling: str = ""
        self.stop_pull = threading.Event()

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="models") as dialog:
            dialog.border_title = "Models"
            yield Static("checking whether the hub can be reached…", id="hub-line", markup=False)
            yield DataTable(id="model-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="pull-status", markup=False)
            yield ProgressBar(id="pull-progress", show_eta=False)  # the status line says the bytes
            yield Static(f"{HINT}\nPulled models are kept in {paths.models_dir()}", classes="hint", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "model", "kind", "installed", "size", "runs on", "about")
        self.query_one(ProgressBar).display = False
        self.fill()
        self.look_up()

    def on_unmount(self) -> None:
        self.stop_pull.set()  # the app is closing: a pull in flight stops, resumable

    @work(thread=True, group="models-look-up", exit_on_error=False)
    def look_up(self) -> None:
        """Reading the headers of found models takes tens of milliseconds each, the hub
        check may wait seconds for a timeout, and device detection imports torch and
        llama.cpp: none on the UI thread."""
        self.post_message(Found(local=models.found_models(self.settings.model_folders)))
        self.post_message(Found(hub=self.unreachable()))
        self.post_message(Found(devices=self.devices(self.settings.device)))

    def on_found(self, message: Found) -> None:
        if message.hub is not None:
            line = self.query_one("#hub-line", Static)
            line.update(
                message.hub
                or "The hub can be reached: select a model that is not installed and press Enter to pull it."
            )
            line.set_class(bool(message.hub), "offline")
        if message.devices is not None:
            self.where = message.devices
            self.fill()
        if message.local is not None:
            self.local = message.local
            self.fill()

    def fill(self, select: str = "") -> None:
        table = self.query_one(DataTable)
        keep = select or self.selected_name()
        table.clear()
        self.rows = rows(self.settings, self.local)
        in_use = {self.settings.llm, self.settings.embedder, self.settings.query_encoder}
        for row in self.rows:
            runs = "" if row.problem else self.where.get("llm" if row.kind in CHAT_KINDS else "embedder", "…")
            mark = Text("●", style="bold green") if row.name in in_use else ""
            table.add_row(mark, row.name, row.kind, row.source or "no", row.size, runs, row.about, key=row.name)
        names = [row.name for row in self.rows]
        if keep in names:
            table.move_cursor(row=names.index(keep))

    def selected_name(self) -> str:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row is None or not 0 <= table.cursor_row < len(self.rows):
            return ""
        return self.rows[table.cursor_row].name

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = next(r for r in self.rows if r.name == event.row_key.value)
        if row.problem:
            self.notify(f"{row.name} cannot be a reader: {row.problem}", severity="warning")
        elif row.installed:
            self.use(row)
        elif self.pulling:
            self.notify(f"{self.pulling} is being pulled: wait for it, or Esc to stop it", severity="warning")
        elif row.name == self.background():  # pull's lock would refuse a second pull of it
            self.notify(
                f"{row.name} is already being pulled in the background (the status line shows how far); "
                "the chat switches to it when it is in",
                severity="warning",
            )
        else:
            self.start_pull(row.name)

    def use(self, row: Row) -> None:
        setting = role(row)
        if getattr(self.settings, setting) == row.name:
            self.notify(f"{row.name} is already in use")
            return
        self.dismiss(replace(self.settings, **{setting: row.name}))

    # Pulling.

    def start_pull(self, name: str) -> None:
        self.pulling = name
        self.stop_pull = threading.Event()
        bar = self.query_one(ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self.query_one("#pull-status", Static).update(f"pulling {name}… (Esc stops; a stopped pull resumes)")
        self.pull_worker(name, self.stop_pull)

    @work(thread=True, exclusive=True, group="pull", exit_on_error=False)
    def pull_worker(self, name: str, stop: threading.Event) -> None:
        pull_reporting(self.pull, name, stop, self.post_message)

    def on_pull_progressed(self, message: PullProgressed) -> None:
        if not self.pulling:
            return
        self.query_one(ProgressBar).update(total=message.total, progress=message.done)
        got = models.human(message.done)
        whole = f" of {models.human(message.total)}" if message.total else ""
        self.query_one("#pull-status", Static).update(
            f"pulling {self.pulling}: {message.file} {got}{whole} (Esc stops; a stopped pull resumes)"
        )

    def on_pull_finished(self, message: PullFinished) -> None:
        self.pulling = ""
        self.query_one(ProgressBar).display = False
        status = self.query_one("#pull-status", Static)
        if message.cancelled:
            status.update(f"stopped pulling {message.name}: pull it again to resume where it stopped")
        elif message.error:
            status.update(f"could not pull {message.name}: {message.error}")
            self.notify(message.error, title=f"Could not pull {message.name}", severity="error", timeout=15)
        else:
            status.update(f"pulled {message.name}: press Enter to switch to it")
            self.fill(select=message.name)

    def action_close(self) -> None:
        if self.pulling:
            self.stop_pull.set()
            self.query_one("#pull-status", Static).update(f"stopping the pull of {self.pulling}…")
        else:
            self.dismiss(None)
