"""The conversation column: questions and their answers, the latest at the bottom."""

from __future__ import annotations

from dataclasses import dataclass

from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from ..engine.events import FinalAnswer
from ..history import answer_markdown


class AnswerView(Markdown):
    """One answer. While the loop runs it streams the current iteration's draft; at the
    end the final text (answer, reasoning, numbered sources) is rendered once."""

    @dataclass
    class Selected(Message):
        final: FinalAnswer

    def __init__(self, text: str = "_Waiting…_") -> None:
        super().__init__(text, classes="answer")
        self._stream: MarkdownStream | None = None
        self.final: FinalAnswer | None = None

    async def restart(self, heading: str) -> None:
        await self._stop()
        await self.update(heading + "\n\n")
        self._stream = Markdown.get_stream(self)

    async def write(self, text: str) -> None:
        if self._stream is not None:
            await self._stream.write(text)

    async def finish(self, final: FinalAnswer) -> None:
        self.final = final
        await self.show(answer_markdown(final))

    async def show(self, markdown: str) -> None:
        await self._stop()
        await self.update(markdown)

    async def _stop(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    def on_click(self) -> None:
        if self.final is not None:
            self.post_message(self.Selected(self.final))


class ChatLog(VerticalScroll):
    """Scrolls with new text unless the reader has scrolled up."""

    def on_mount(self) -> None:
        self.anchor()

    async def add_question(self, question: str) -> AnswerView:
        answer = AnswerView()
        await self.mount_all([Static(question, classes="question", markup=False), answer])
        return answer

    async def add_turn(self, final: FinalAnswer) -> None:
        answer = await self.add_question(final.question)
        await answer.finish(final)

    async def clear(self) -> None:
        await self.remove_children()
