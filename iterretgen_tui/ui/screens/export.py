"""Ctrl+E: where to write the conversation as Markdown."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label


class ExportScreen(ModalScreen[Path | None]):
    BINDINGS = [Binding("escape", "dismiss", "Cancel")]

    def __init__(self, default: Path) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="export") as dialog:
            dialog.border_title = "Export to Markdown"
            yield Label("File to write (Enter to save):")
            yield Input(str(self.default), id="export-path")
        yield Footer()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        self.dismiss(Path(value) if value else None)
