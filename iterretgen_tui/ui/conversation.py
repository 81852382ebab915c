"""The conversation column: questions and their answers, the latest at the bottom."""

from __future__ import annotations

from dataclasses import dataclass

from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from ..engine.loop.events import FinalAnswer
from ..history import answer_markdown
from .streaming import StreamingMarkdown
from .welcome import Welcome


class AnswerView(StreamingMarkdown):
    """One answer. While the loop runs it streams the current iteration's draft; at the
    end the final text (answer, reasoning, numbered sources) is rendered once."""

    @dataclass
    class Selected(Message):
        final: FinalAnswer

    def __init__(self, text: str = "_Waiting…_") -> None:
        super().__init__(text, classes="answer")
        self.final: FinalAnswer | None = None
        self._placeholder = True  # the text shown is a note, replaced by the first draft text
        self.first = ""  # the first stated answer, shown while later iterations check it

    async def restart(self, note: str) -> None:
        """A new iteration: say ``note`` until its draft starts streaming; with a first
        answer, above it (the draft streams in its pane only)."""
        if self.first:
            await self.replace(f"_First answer; checking it: {note[:1].lower()}{note[1:]}_\n\n{self.first}")
        else:
            await self.replace(f"_{note}_")
            self._placeholder = True

    async def show_first(self, first: FinalAnswer) -> None:
        """The first stated answer, in place of its draft, until the final one replaces it."""
        self.first = answer_markdown(first)
        await self.restart("Later iterations read more passages…")

    async def write(self, text: str) -> None:
        if self.first:
            return
        if self._placeholder and text:
            self._placeholder = False
            await self.update("")
        await super().write(text)

    async def finish(self, final: FinalAnswer, stale: dict[str, str] | None = None) -> None:
        """``stale``: source path -> why, for sources whose file changed since indexing."""
        self.final, self.first = final, ""
        await self.replace(answer_markdown(final, stale))

    async def add_note(self, note: str) -> None:
        """Keep what was streamed so far (the first answer, where one is shown) and say
        what happened to it."""
        await self.stop_stream()
        await self.update(f"{self.first or self.source}\n\n{note}")

    def on_click(self) -> None:
        if self.final is not None:
            self.post_message(self.Selected(self.final))


class ChatLog(VerticalScroll):
    """Scrolls with new text unless the reader has scrolled up."""

    def on_mount(self) -> None:
        self.anchor()

    async def add_question(self, question: str) -> AnswerView:
        await self.query(Welcome).remove()  # the welcome is for the empty conversation only
        answer = AnswerView()
        await self.mount_all([Static(question, classes="question", markup=False), answer])
        return answer

    async def add_turn(self, final: FinalAnswer, stale: dict[str, str] | None = None) -> None:
        answer = await self.add_question(final.question)
        await answer.finish(final, stale)

    async def clear(self) -> None:
        await self.remove_children()
