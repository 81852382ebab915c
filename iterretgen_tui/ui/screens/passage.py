"""One retrieved passage, whole."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...engine.passages import Passage


class PassageScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, passage: Passage) -> None:
        super().__init__()
        self.passage = passage

    def compose(self) -> ComposeResult:
        passage = self.passage
        with Vertical(classes="dialog", id="passage") as dialog:
            dialog.border_title = passage.title or "(untitled)"
            dialog.border_subtitle = f"score {passage.score:.3f}"
            yield Static(passage.citation, classes="citation", markup=False)
            with VerticalScroll():
                yield Static(passage.text, classes="passage-text", markup=False)
        yield Footer()
