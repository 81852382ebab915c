"""The empty conversation's welcome: what the folder holds, which models answer, what to
ask (questions drawn from the folder's own headings) and the keys that matter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..engine.counting import counted
from ..models import EMBEDDED_LLM

if TYPE_CHECKING:
    from ..engine.indexing.indexer import IndexProgress

KEYS = "Enter asks · Esc cancels · F5 models · Ctrl+R re-index · F2 settings · F1 help · Ctrl+Q quit"


@dataclass
class Overview:
    """What the welcome shows; the app keeps one and updates it as preparing goes on."""

    folder: str
    llm: str
    embedder: str
    info: dict = field(default_factory=dict)  # Session.info() once the folder is indexed
    not_read: str = ""  # what the last sync could not read, counted ("2 files and 1 folder")
    examples: tuple[str, ...] = ()
    progress: IndexProgress | None = None  # while indexing
    error: str = ""  # why questions cannot be answered
    activity: str = ""  # what preparing does now (loading a model, an export), before indexing
    pull: str = ""  # the app's pull of the default reader: how far, or how it ended


def folder_text(o: Overview) -> Text:
    line = Text(o.folder, style="underline")
    if o.error:
        line.append(f"\ncannot answer: {o.error}", style="bold red")
    elif o.progress is not None:
        p = o.progress
        line.append(f"\nindexing… {p.files_done}/{p.files_total} files read, {p.passages_done} passages so far")
    elif o.info:
        files, passages = o.info.get("files", 0), o.info.get("passages", 0)
        line.append(f"\n{counted(files, 'file')} · {counted(passages, 'passage')} indexed")
        if o.not_read:
            line.append(f" · {o.not_read} not read", style="yellow")
    else:
        line.append(f"\n{o.activity or 'starting…'}", style="italic")
    return line


def models_text(o: Overview) -> Text:
    # While the default reader is not pulled, the embedded one reads in its place.
    reader = EMBEDDED_LLM if o.info.get("llm_note") else o.llm
    line = Text(f"chat {reader} · retrieval {o.embedder}")
    if o.info.get("device"):
        line.append(f" · on {o.info['device']}")
    if reader == EMBEDDED_LLM:
        line.append(
            "\nSmolLM2-135M is the 135M-parameter demo model that ships with the app: fast, "
            "but its answers are weak." + ("" if o.pull else " Press F5 to get a better one."),
            style="bold yellow",
        )
    if o.pull:
        line.append(f"\n{o.pull}", style="italic")
    return line


def row(label: str, value: Static) -> Horizontal:
    """A label with its value beside it; the value wraps under itself, not under the label."""
    return Horizontal(Static(label, classes="label"), value, classes="welcome-row")


class Welcome(Vertical):
    @dataclass
    class ExampleChosen(Message):
        question: str

    def __init__(self, overview: Overview) -> None:
        super().__init__(id="welcome")
        self.overview = overview

    def compose(self) -> ComposeResult:
        yield Static("Ask about the documents in your folder", classes="welcome-title")
        yield row("Folder", Static(classes="welcome-folder"))
        yield row("Models", Static(classes="welcome-models"))
        yield Static("Try asking (select one, or type your own below):", classes="welcome-try")
        yield OptionList(classes="welcome-examples")
        yield row("Keys", Static(KEYS, classes="welcome-keys"))

    def on_mount(self) -> None:
        self.show(self.overview)

    def show(self, overview: Overview) -> None:
        self.overview = overview
        self.query_one(".welcome-folder", Static).update(folder_text(overview))
        self.query_one(".welcome-models", Static).update(models_text(overview))
        examples = self.query_one(".welcome-examples", OptionList)
        if [str(o.prompt) for o in examples.options] != list(overview.examples):
            examples.clear_options()
            examples.add_options(Option(q, id=str(n)) for n, q in enumerate(overview.examples))
        shown = bool(overview.examples)
        examples.display = self.query_one(".welcome-try", Static).display = shown

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.ExampleChosen(self.overview.examples[int(event.option.id)]))
