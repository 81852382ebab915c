"""Markdown that grows fragment by fragment, then is rendered whole once."""

from __future__ import annotations

from markdown_it import MarkdownIt
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream


def _without_html() -> MarkdownIt:
    """Textual's parser with HTML read as text: a model's or a document's "<name>" (a
    placeholder, a tag in prose) is shown, not dropped as a tag it cannot draw."""
    return MarkdownIt("gfm-like", {"html": False})


class StreamingMarkdown(Markdown):
    """Fragments go through Textual's MarkdownStream, which coalesces appends when they
    come faster than the widget can render; ``replace`` shows a final text in one go."""

    _stream: MarkdownStream | None = None

    def __init__(self, markdown: str = "", *, classes: str | None = None) -> None:
        super().__init__(markdown, classes=classes, parser_factory=_without_html)

    async def write(self, text: str) -> None:
        # The stream is made on the first real fragment: its writes yield to the event
        # loop, so the stream's task has started before anyone can stop it (stopping a
        # task that never ran would raise CancelledError in the caller).
        if not text:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(text)

    async def stop_stream(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    async def replace(self, markdown: str) -> None:
        await self.stop_stream()
        await self.update(markdown)
