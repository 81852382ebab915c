"""Blocks -> passages of about N words with an overlap, the unit that is embedded.

A passage never crosses a PDF page or a heading, so its title and location stay exact;
nor does it mix text read by OCR with a text layer, so its location can say which it is.
Words keep their line, so a passage reads with its original line breaks. A passage inside
a table (Markdown's rows, as HTML and Word tables are written too) holds whole rows and
carries the table's header first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby

from ..errors import ConfigError
from ..markdown_tables import is_row, is_rule
from .formats import Block, Parsed

# Runs longer than this (URLs, base64, text without spaces) count as several words,
# so a passage stays near the embedder's input length; they are rejoined without spaces.
MAX_WORD_CHARS = 24
_RUN = re.compile(r"\S+")
SECTION = " › "  # between a document's title and a section's heading in a passage's title
_PADDED_RULE = re.compile(r"-{3,}")  # a table rule's cell, however wide the column was drawn


@dataclass(frozen=True)
class Chunk:
    text: str
    location: str  # "p. 3", "lines 10-24", "paragraphs 2-5"; ", OCR" follows for text read by OCR
    heading: str = ""  # title taken from the document itself; "" when it has none


@dataclass(frozen=True)
class _Word:
    text: str
    number: int
    glued: bool  # continues the previous word with no space between
    # Which block (line) of its section the word is on, a wrapped line's being the one it
    # goes on: a passage's lines are its blocks'.
    # An HTML page draws several on one source line (a paragraph, then a fenced code
    # block), and joined by their number a fence ran into the code after it.
    block: int


@dataclass(frozen=True)
class ChunkOptions:
    """How documents are split into passages; a change re-splits every file."""

    words: int = 100
    overlap: int = 20

    def __post_init__(self) -> None:
        if self.words < 1:
            raise ConfigError(f"passage_words must be at least 1, not {self.words}")
        if not 0 <= self.overlap < self.words:
            raise ConfigError("passage_overlap must be at least 0 and below passage_words")


def split(parsed: Parsed, options: ChunkOptions = ChunkOptions()) -> list[Chunk]:
    words, overlap = options.words, options.overlap
    chunks = []
    for (page, heading, ocr), group in groupby(parsed.blocks, key=lambda b: (b.page, b.heading, b.ocr)):
        section = list(group)
        tokens = _words(section)
        heads = _table_heads([b.text for b in section])
        title = _title(parsed.title, heading)
        start = 0
        while tokens:
            window = _whole_rows(tokens[start : start + words + 1], words, heads)
            location = _location(parsed.unit, page, window) + (", OCR" if ocr else "")
            head = heads.get(window[0].block, "")
            chunks.append(Chunk(head + _join(window), location, title))
            after = start + words - overlap
            if after >= len(tokens) - overlap:
                break
            # A passage starts at a table row's beginning, the row cut in the one before.
            row_start = _block_start(tokens, after) if tokens[after].block in heads else after
            start = row_start if row_start > start else after
    return chunks


def _table_heads(lines: list[str]) -> dict[int, str]:
    """By table line, the header lines (header and rule) a passage starting on it lacks:
    without them its rows were cells with no column names ("" for the header itself)."""
    heads: dict[int, str] = {}
    k = 0
    while k + 1 < len(lines):
        if is_row(lines[k]) and is_rule(lines[k + 1]):
            # Spaced as the passage's own lines are.
            header = " ".join(lines[k].split()) + "\n"
            rule = _PADDED_RULE.sub("---", " ".join(lines[k + 1].split())) + "\n"
            heads[k], heads[k + 1] = "", header
            end = k + 2
            while end < len(lines) and is_row(lines[end]):
                heads[end] = header + rule
                end += 1
            k = end
        else:
            k += 1
    return heads


def _whole_rows(ahead: list[_Word], words: int, heads: dict[int, str]) -> list[_Word]:
    """A passage's words (``ahead`` holds one more), less a table row that runs on past
    them: the next passage starts at that row."""
    window = ahead[:words]
    if len(ahead) > words and ahead[words].block == window[-1].block and window[-1].block in heads:
        return window[: _block_start(window, words - 1)] or window
    return window


def _block_start(tokens: list[_Word], i: int) -> int:
    while i > 0 and tokens[i - 1].block == tokens[i].block:
        i -= 1
    return i


def _words(blocks: Iterable[Block]) -> list[_Word]:
    out = []
    line = -1
    for k, block in enumerate(blocks):
        line = line if block.continues and line >= 0 else k  # a wrapped line joins the one it goes on
        for run in _RUN.findall(block.text):
            for i in range(0, len(run), MAX_WORD_CHARS):
                out.append(_Word(run[i : i + MAX_WORD_CHARS], block.number, glued=i > 0, block=line))
    return out


def _join(window: list[_Word]) -> str:
    lines = []
    for _, same_line in groupby(window, key=lambda w: w.block):
        lines.append("".join(("" if w.glued else " ") + w.text for w in same_line).lstrip())
    return "\n".join(lines)


def _location(unit: str, page: int, window: list[_Word]) -> str:
    if page:
        return f"p. {page}"
    return _numbered(unit, window[0].number, window[-1].number)


def _numbered(unit: str, first: int, last: int) -> str:
    return f"{unit} {first}" if first == last else f"{unit}s {first}-{last}"


_NUMBERED = re.compile(r"(line|paragraph)s? (\d+)(?:-(\d+))?(.*)")


def spanning(first: str, last: str) -> str:
    """One location over two passages of the same file ("lines 3-9" and "lines 8-20":
    "lines 3-20"); the first one as it is when they are not line or paragraph ranges."""
    a, b = _NUMBERED.fullmatch(first), _NUMBERED.fullmatch(last)
    if not a or not b or a[1] != b[1] or a[4] != b[4]:
        return first
    numbers = [int(n) for n in (a[2], a[3], b[2], b[3]) if n]
    return _numbered(a[1], min(numbers), max(numbers)) + a[4]


def document_of(title: str) -> str:
    """The document's part of a passage's title ("Guide" of "Guide › Setup"); a title
    without a section's heading is all the document's."""
    return title.partition(SECTION)[0]


def heading_of(title: str) -> str:
    """The section's heading in a passage's title ("Setup" of "Guide › Setup"); a title
    without one is the whole title."""
    return title.rpartition(SECTION)[2].strip()


def _title(document_title: str, heading: str) -> str:
    if heading and document_title and heading != document_title:
        return f"{document_title}{SECTION}{heading}"
    return heading or document_title
