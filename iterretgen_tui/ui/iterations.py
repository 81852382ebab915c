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

from ..engine.loop import provenance
from ..engine.loop.events import FinalAnswer, IterationTrace, QuestionRead
from ..engine.loop.provenance import AGAIN, CARRIED, NEW, Origin
from ..engine.loop.queries import DRAFT, EARLIER, LEAD, QUESTION
from ..engine.passages import Passage
from .streaming import StreamingMarkdown

QUERY_CHARS = 160  # an iteration's query holds the whole previous draft: show its gist
RANKERS = {"dense": "found by meaning", "lexical": "found by keywords", "both": "found by both"}


BADGES = {
    NEW: ("new", "bold black on green"),
    AGAIN: ("again", "bold black on yellow"),
    CARRIED: ("kept", "bold white on blue"),
}


def passage_label(n: int, passage: Passage, origin: Origin | None = None, stale: str = "") -> Text:
    """Title, citation and score; with the passage's origin (a badge and the searches
    that found it) and a warning when its file changed since it was indexed."""
    label = Text()
    label.append(f"{n}. ", style="bold")
    if origin is not None:
        text, style = BADGES[origin.kind]
        label.append(f" {text} ", style=style)
        label.append(" ")
    label.append(f"{passage.title or '(untitled)'}\n", style="bold")
    label.append(passage.citation, style="italic")
    label.append(f" · score {passage.score:.2f}", style="dim")
    if passage.ranker:  # which ranker found it, where several ran
        label.append(f" · {RANKERS[passage.ranker]}", style="dim")
    if stale:
        label.append(f"\n⚠ file {stale}", style="bold red")
    if origin is not None:
        label.append(f"\n{origin.describe(search_words)}", style="dim")
    return label


SEARCH_WORDS = {
    QUESTION: "the question",
    LEAD: "the last top passage + the question",
    DRAFT: "the draft + the question",
    EARLIER: "the turn before + the question",
}


def search_words(name: str) -> str:
    """A search the loop names by identifier, in words (turns saved before identifiers
    stored the words themselves, which pass through)."""
    return SEARCH_WORDS.get(name, name)


def search_label(name: str, lead: Passage | None) -> str:
    """``search_words``, naming the passage a "lead" search started from where known."""
    if name == LEAD and lead is not None:
        return f"the last top passage ({lead.title or lead.citation}) + the question"
    return search_words(name)


class IterationPane(Vertical):
    @dataclass
    class PassageChosen(Message):
        passage: Passage
        origin: Origin | None
        stale: str

    def __init__(self, t: int) -> None:
        super().__init__(id=f"iteration-{t}", classes="iteration")
        self.t = t
        self.border_title = f"Iteration {t}"
        self.border_subtitle = "running"
        self.passages: tuple[Passage, ...] = ()
        self.origins: tuple[Origin, ...] = ()
        self.stale: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static("", classes="read-as", markup=False)
        yield Static("Query: …", classes="query", markup=False)
        yield OptionList(classes="passages")
        yield StreamingMarkdown("", classes="draft")
        yield Static("", classes="note", markup=False)

    def show_read_as(self, read: QuestionRead) -> None:
        read_as = self.query_one(".read-as", Static)
        read_as.update(read.describe())
        read_as.display = True

    def show_query(self, query: str, searches: tuple[str, ...] = (), lead: Passage | None = None) -> None:
        short = textwrap.shorten(" ".join(query.split()), QUERY_CHARS, placeholder=" …")
        text = f"Query: {short}"
        if len(searches) > 1:  # passages and their scores come from several searches
            text += "\nSearched with " + "; ".join(search_label(name, lead) for name in searches)
        self.query_one(".query", Static).update(text)

    def show_passages(
        self, passages: tuple[Passage, ...], origins: tuple[Origin, ...] = (), stale: dict[str, str] | None = None
    ) -> None:
        """``origins``: aligned with ``passages``, or () when unknown (older history);
        ``stale``: source path -> why it is stale, for those that are."""
        self.passages, self.origins, self.stale = passages, origins, stale or {}
        options = self.query_one(".passages", OptionList)
        options.clear_options()
        options.add_options(
            Option(passage_label(n, p, self.origin(n - 1), self.stale.get(p.source, "")), id=str(n - 1))
            for n, p in enumerate(passages, 1)
        )

    def origin(self, i: int) -> Origin | None:
        return self.origins[i] if self.origins else None

    def note(self, text: str) -> None:
        self.query_one(".note", Static).update(text)

    @property
    def draft(self) -> StreamingMarkdown:
        return self.query_one(".draft", StreamingMarkdown)

    async def write(self, text: str) -> None:
        await self.draft.write(text)

    async def finish(
        self, trace: IterationTrace, origins: tuple[Origin, ...] = (), stale: dict[str, str] | None = None
    ) -> None:
        """Render the whole draft once (streamed fragments can split Markdown badly)."""
        self.show_passages(trace.passages, origins, stale)
        await self.draft.replace(trace.draft)
        self.border_subtitle = f"{trace.seconds:.1f} s"
        trimmed = " (passages trimmed to fit the model)" if trace.trimmed else ""
        looped = " · the draft repeated itself and was cut there" if trace.looped else ""
        asked = " (asked for: the draft stated none)" if trace.asked and trace.stated else ""
        if trace.asked_rest:
            asked = f" (asked next: {trace.asked_rest})"
        answer = trace.answer if trace.stated and trace.answer else "(none stated)"
        self.note(f"Answer: {answer}{asked}{looped}{trimmed}")

    async def stop(self) -> None:
        await self.draft.stop_stream()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        i = int(event.option.id)
        passage = self.passages[i]
        self.post_message(self.PassageChosen(passage, self.origin(i), self.stale.get(passage.source, "")))


PANES_HINT = (
    "Each iteration of the answer appears here as it happens: the query it searched with, "
    "the passages it found (marked new, again or kept, with the search that found them) "
    "and the draft the model writes from them."
)


class IterationPanes(VerticalScroll):
    """Holds the panes of the answer being shown (the running one, or a past one); says
    what they will show while there are none."""

    shown: FinalAnswer | None = None  # the finished answer on show, if any
    following: IterationPane | None = None  # the live pane whose top is kept in view
    followed_y: float = 0.0  # where following last scrolled: a reader scrolling elsewhere ends it

    def on_mount(self) -> None:
        self.mount(Static(PANES_HINT, classes="panes-hint"))

    def watch_virtual_size(self) -> None:
        """Bring the live pane's top into view each time the panes grow: its place (and how
        far there is to scroll) is known only once its passages and draft are laid out."""
        pane = self.following
        if pane is None or self.scroll_y != self.followed_y:
            self.following = None
            return
        self.followed_y = min(pane.virtual_region.y, self.max_scroll_y)
        # forced: the scrollbar that allows scrolling is added only after this layout
        self.scroll_to(y=self.followed_y, animate=False, immediate=True, force=True)

    async def reset(self) -> None:
        self.shown = None
        self.following = None
        for pane in self.query(IterationPane):
            await pane.stop()
        await self.remove_children()
        await self.mount(Static(PANES_HINT, classes="panes-hint"))

    def origins(self, t: int, passages, found_by) -> tuple[Origin, ...]:
        """Iteration ``t``'s marks, against the passages the panes before it read."""
        earlier = [(p.t, p.passages) for p in self.query(IterationPane) if p.t < t]
        return provenance.origins(t, passages, found_by, earlier)

    async def start(self, t: int, follow: bool = True) -> IterationPane:
        await self.query(".panes-hint").remove()
        pane = IterationPane(t)
        await self.mount(pane)
        if follow:  # a live iteration is the one to watch
            self.following, self.followed_y = pane, self.scroll_y
        return pane

    def pane(self, t: int) -> IterationPane | None:
        panes = self.query(f"#iteration-{t}")
        return panes.first(IterationPane) if panes else None

    def lead(self, t: int) -> Passage | None:
        """The passage iteration t's "lead" search started from: t - 1's top passage."""
        previous = self.pane(t - 1)
        return previous.passages[0] if previous is not None and previous.passages else None

    async def show(self, final: FinalAnswer, stale: dict[str, str] | None = None) -> None:
        """Rebuild the panes of a finished answer from its trace."""
        await self.reset()
        for trace, origins in zip(final.iterations, provenance.trace_origins(final.iterations)):
            lead = self.lead(trace.t)
            pane = await self.start(trace.t, follow=False)
            if trace.t == 1 and final.standalone:
                pane.show_read_as(QuestionRead(1, final.standalone, 0))
            pane.show_query(trace.query, trace.searches, lead)
            await pane.finish(trace, origins, stale)
        self.shown = final
