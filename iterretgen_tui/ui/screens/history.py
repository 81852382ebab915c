"""F3: earlier conversations, newest first; Enter reopens one."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ...engine.counting import counted
from ...history import ConversationSummary


def summary_label(summary: ConversationSummary) -> Text:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.updated))
    label = Text(summary.title, style="bold")
    label.append(f"\n{when} · {counted(summary.turns, 'question')} · {summary.folder}", style="dim")
    return label


class HistoryScreen(ModalScreen[int | None]):
    """Dismisses with the chosen conversation's id, or None."""

    BINDINGS = [Binding("escape", "dismiss", "Close")]

    def __init__(self, conversations: list[ConversationSummary]) -> None:
        super().__init__()
        self.conversations = conversations

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="history") as dialog:
            dialog.border_title = "History"
            if self.conversations:
                yield OptionList(*(Option(summary_label(c), id=str(c.id)) for c in self.conversations))
            else:
                yield Static("No saved conversations yet.")
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id))
