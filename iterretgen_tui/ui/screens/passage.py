"""One retrieved passage, whole, with why it is there and whether its file changed."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...engine.loop.provenance import Origin
from ...engine.passages import Passage
from ..iterations import search_words


class PassageScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, passage: Passage, origin: Origin | None = None, stale: str = "") -> None:
        super().__init__()
        self.passage = passage
        self.origin = origin
        self.stale = stale

    def compose(self) -> ComposeResult:
        passage = self.passage
        with Vertical(classes="dialog", id="passage") as dialog:
            dialog.border_title = passage.title or "(untitled)"
            dialog.border_subtitle = f"score {passage.score:.3f}"
            yield Static(passage.citation, classes="citation", markup=False)
            if self.origin is not None:
                yield Static(self.origin.describe(search_words), classes="origin", markup=False)
            if self.stale:
                yield Static(
                    Text(
                        f"⚠ The file {self.stale}: this text may no longer be what it says. Ctrl+R re-indexes the folder."
                    ),
                    classes="stale",
                )
            with VerticalScroll():
                yield Static(passage.text, classes="passage-text", markup=False)
        yield Footer()
