"""The right-hand column: one pane per Iter-RetGen iteration, filled as it happens."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..engine.loop.events import FinalAnswer, IterationTrace
from ..engine.passages import Passage
from .streaming import StreamingMarkdown

QUERY_CHARS = 160  # an iteration's query holds the whole previous draft: show its gist


def passage_label(n: int, passage: Passage) -> Text:
    label = Text()
    label.append(f"{n}. {passage.title or '(untitled)'}\n", style="bold")
    label.append(passage.citation, style="italic")
    label.append(f" · score {passage.score:.2f}", style="dim")
    return label


class IterationPane(Vertical):
    @dataclass
    class PassageChosen(Message):
        passage: Passage

    def __init__(self, t: int) -> None:
        super().__init__(id=f"iteration-{t}", classes="iteration")
        self.t = t
        self.border_title = f"Iteration {t}"
        self.border_subtitle = "running"
        self.passages: tuple[Passage, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static("Query: …", classes="query", markup=False)
        yield OptionList(classes="passages")
        yield StreamingMarkdown("", classes="draft")
        yield Static("", classes="note", markup=False)

    def show_query(self, query: str, searches: tuple[str, ...] = ()) -> None:
        short = textwrap.shorten(" ".join(query.split()), QUERY_CHARS, placeholder=" …")
        text = f"Query: {short}"
        if len(searches) > 1:  # passages and their scores come from several searches
            text += "\nSearched with " + "; ".join(searches)
        self.query_one(".query", Static).update(text)

    def show_passages(self, passages: tuple[Passage, ...]) -> None:
        self.passages = passages
        options = self.query_one(".passages", OptionList)
        options.clear_options()
        options.add_options(
            Option(passage_label(n, p), id=str(n - 1)) for n, p in enumerate(passages, 1)
        )

    def note(self, text: str) -> None:
        self.query_one(".note", Static).update(text)

    @property
    def draft(self) -> StreamingMarkdown:
        return self.query_one(".draft", StreamingMarkdown)

    async def write(self, text: str) -> None:
        await self.draft.write(text)

    async def finish(self, trace: IterationTrace) -> None:
        """Render the whole draft once (streamed fragments can split Markdown badly)."""
        self.show_passages(trace.passages)
        await self.draft.replace(trace.draft)
        self.border_subtitle = f"{trace.seconds:.1f} s"
        trimmed = " (passages trimmed to fit the model)" if trace.trimmed else ""
        looped = " · the draft repeated itself and was cut there" if trace.looped else ""
        asked = " (asked for: the draft stated none)" if trace.asked and trace.stated else ""
        answer = trace.answer if trace.stated and trace.answer else "(none stated)"
        self.note(f"Answer: {answer}{asked}{looped}{trimmed}")

    async def stop(self) -> None:
        await self.draft.stop_stream()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.PassageChosen(self.passages[int(event.option.id)]))


class IterationPanes(VerticalScroll):
    """Holds the panes of the answer being shown (the running one, or a past one)."""

    async def reset(self) -> None:
        for pane in self.query(IterationPane):
            await pane.stop()
        await self.remove_children()

    async def start(self, t: int) -> IterationPane:
        pane = IterationPane(t)
        await self.mount(pane)
        # The new iteration is the one to watch (once laid out, so its place is known).
        self.call_after_refresh(pane.scroll_visible, top=True, animate=False)
        return pane

    def pane(self, t: int) -> IterationPane | None:
        panes = self.query(f"#iteration-{t}")
        return panes.first(IterationPane) if panes else None

    async def show(self, final: FinalAnswer) -> None:
        """Rebuild the panes of a finished answer from its trace."""
        await self.reset()
        for trace in final.iterations:
            pane = await self.start(trace.t)
            pane.show_query(trace.query, trace.searches)
            await pane.finish(trace)
