"""F1: what the panes mean and which keys do what."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

HELP = """\
# iterretgen-chat

Ask a question about the documents in your folder and press **Enter**.

Each answer is built by **Iter-RetGen**: the question retrieves passages, the model drafts
an answer from them (*Iteration 1*); the draft joined with the question retrieves again
and the model answers again (*Iteration 2*, ...). The right-hand panes show every
iteration as it happens: its query, the passages it found (select one to read it whole)
and the draft. It stops at the maximum number of iterations, or earlier when two answers
agree or the new retrieval finds nothing new (adaptive stop, see Settings).

Each passage in a pane is marked **new** (first read in this iteration), **again** (found
again by this iteration's searches; read first in an earlier one) or **kept** (not found
again, carried forward from an earlier iteration), with the searches that found it.

Sources are numbered **[1]**, **[2]**, ... with their file and page or lines. A source whose
file changed or was deleted since it was indexed is marked **⚠**: Ctrl+R re-indexes.

| Key | Action |
| --- | --- |
| Enter | send the question (a new one cancels the running answer) |
| Esc | cancel the running answer |
| F1 | this help |
| F2 | settings (iterations, top-k, adaptive stop, models) |
| F3 | history: reopen an earlier conversation |
| F4 | export the conversation to a Markdown file |
| F5 | models: pull a better one, switch the chat model or the embedder |
| Ctrl+R | re-index the folder (files changed, added or deleted) |
| Ctrl+N | new conversation |
| Ctrl+P | command palette |
| PgUp / PgDn | scroll the conversation while typing |
| Tab | move between the question, the answer and the passages |
| Ctrl+Q | quit |

Click an earlier answer to show its iterations again.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="help"):
            yield Markdown(HELP)
        yield Footer()
