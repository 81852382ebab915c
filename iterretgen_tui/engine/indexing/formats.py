"""Document formats -> numbered blocks of text, each under its nearest heading.

Every parser returns a ``Parsed``: the document's own title (or "") and its blocks in
reading order. A block is a line of a text file, a paragraph of a Word document, a
line of a PDF page or a line that OCR read from a page image; its number is what a
passage's location cites.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .. import markdown_tables
from . import manpage, mdoc, restructuredtext, vimhelp

if TYPE_CHECKING:
    from .ocr import OcrRun

# pypdf logs every recoverable defect of a damaged file; the skip reason says enough.
logging.getLogger("pypdf").setLevel(logging.ERROR)


class SkipFile(Exception):
    """A file that is not indexed; the message is the reason shown to the user.

    ``transient`` problems (a file changing while read) are retried on the next run
    instead of being remembered.
    """

    def __init__(self, reason: str, *, transient: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


@dataclass(frozen=True)
class Block:
    text: str
    number: int  # line (text, HTML source) or paragraph (docx) number, from 1
    page: int = 0  # PDF page from 1; 0 for formats without pages
    heading: str = ""  # nearest heading above the block
    ocr: bool = False  # read by OCR from an image of the page, not from its text
    continues: bool = False  # the line above's paragraph goes on here (a list item wrapped)


@dataclass(frozen=True)
class Parsed:
    title: str
    blocks: list[Block]
    unit: str  # what Block.number counts: "line" or "paragraph"


def source_lines(text: str) -> list[str]:
    """The text's lines as an editor numbers them, split at line ends alone ("\\n", "\\r\\n",
    "\\r"). str.splitlines also splits at a form feed: the LGPL's page breaks put its "NO
    WARRANTY" at line 443, which an editor shows at 435."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def plain(text: str) -> Parsed:
    """A file of a suffix no reader knows, line for line; a manual page named for its
    section and package ("ca.1ssl", "Carp.3perl") as `man` shows it (manpage.py).
    Minified code and data (a site's search index, a bundled script) are refused: their
    passages are runs of symbols that a search ranks and a reader quotes as if they said
    something."""
    lines = source_lines(text)
    longest = _minified(lines)
    if longest:
        raise SkipFile(f"minified code or data (lines of up to {longest:,} characters)")
    if (manual := _manual(lines)) is not None:
        return manual
    return Parsed("", [Block(line, n) for n, line in enumerate(lines, 1)], "line")


# A line this long was written by a program: a person's code, or a paragraph of prose
# kept on one line, rarely comes near it. Where such lines hold this share of a file and
# are this sparse in spaces (prose and JSON of prose run 14% or more), it is minified.
MINIFIED_LINE = 1000
MINIFIED_SHARE = 0.4
MINIFIED_SPACES = 0.1


def _minified(lines: list[str]) -> int:
    """The longest line's length where the file is minified, else 0."""
    long = [line for line in lines if len(line) >= MINIFIED_LINE]
    chars = sum(map(len, long))
    if not long or chars < MINIFIED_SHARE * sum(map(len, lines)):
        return 0
    spaces = sum(line.count(" ") + line.count("\t") for line in long)
    return max(map(len, long)) if spaces < MINIFIED_SPACES * chars else 0


def _manual(lines: list[str]) -> Parsed | None:
    """A manual page in troff, with the man macros or BSD's mdoc, as `man` shows it; None
    for any other text."""
    reader = manpage if manpage.is_manpage(lines) else mdoc if mdoc.is_mdoc(lines) else None
    if reader is None:
        return None
    shown, headings, title = reader.shown(lines)
    return Parsed(title, _under_headings(shown, 0, headings, set()), "line")


# -- Markdown ------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
# What starts a block of its own rather than going on with a paragraph above it.
_BLOCK_START = re.compile(rf"{_LIST_ITEM.pattern}|^ {{0,3}}(?:[>|#]|```|~~~|(?:[-*_][ \t]*){{3,}}$)")
_FRONT_TITLE = re.compile(r"^title:\s*['\"]?(.*?)['\"]?\s*$")
# What a rendered page does not show: comments, "[name]: url" link definitions (where
# links point), footnote marks ("Thanks to[^1]", "[^1]: " before a footnote's text, which
# stays), the tags of inline HTML and the targets of links, whose text stays. Left in, they
# were quoted as evidence ("<!-- YAML added: v0.9.1 -->", "Use [`clearTimeout()`][]
# instead"; docs/answers.md) and shown in a passage's title ("Thanks to[^thanks_to]").
_CODE_SPAN = re.compile(r"(?P<ticks>`+).*?(?P=ticks)")
_LINK_DEFINITION = re.compile(r"""^ {0,3}\[[^\]^][^\]]*\]:[ \t]*\S+(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*$""")
_HTML_TAGS = "a|abbr|b|br|code|del|details|div|em|i|img|ins|kbd|mark|p|s|small|span|strong|sub|summary|sup|u"
# Scanned left to right, a code span is met whole, so what looks like markup inside it stays.
_INLINE = re.compile(
    rf"(?P<code>{_CODE_SPAN.pattern})"
    r"|^ {0,3}\[\^[^\]\s]+\]:[ \t]*|\[\^[^\]\s]+\]"  # a footnote's mark, where it is defined or referred to
    r"|!?\[(?P<text>(?:`[^`]*`|[^\]`])*)\]"  # [text](url "title"), [text][ref], ![alt](src)
    r"""(?:\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:"[^"]*"|'[^']*'))?\)|\[[^\]]*\])"""
    rf"|</?(?:{_HTML_TAGS})\b[^<>]*>"
    # Strong emphasis as its text ("__Zstandard__, or zstd ..." was quoted as written); a
    # dunder name in prose ("__init__") is left as it is.
    r"|\*\*(?P<strong>[^*\s](?:[^*]*[^*\s])?)\*\*"
    r"|(?<!\w)__(?P<under>(?-i:(?![a-z0-9_]+__))[^_\s](?:[^_]*[^_\s])?)__(?!\w)",
    re.IGNORECASE,
)

# Strong emphasis a line break splits ("**Never pass unsanitized user input to this" /
# "function ... execution.**", a Node.js warning), which the line-by-line pass leaves:
# an opener not inside a word ("2**31" and "2 ** 31" are arithmetic) and a closer after
# a word or its closing sign, in the same paragraph.
_STRONG_OPEN = re.compile(r"(?<![\w*\\])\*\*(?=[\w`])")
_STRONG_CLOSE = re.compile(r"(?<=[\w`.,;!?:)'\"])\*\*(?![\w*])")

# A line of pictures alone ("![The models screen](models.png)", a README's linked badges) is
# a figure: the page shows the picture, and its alt text, read as a sentence, was quoted as
# evidence ("The models screen during a pull"). A picture inside a sentence keeps its alt.
_FIGURES = re.compile(r"""^[ \t]*(?:\[?!\[[^\]]*\]\([^)\s]*(?:\s+"[^"]*")?\)(?:\]\([^)\s]*\))?[ \t]*)+$""")


def markdown(text: str) -> Parsed:
    lines = source_lines(text)
    title, start = _front_matter_title(lines)
    lines[start:] = _strong_across_lines(_rendered(lines[start:]))
    headings: dict[int, tuple[int, str]] = {}  # line index -> (level, heading text)
    fenced = False
    for i in range(start, len(lines)):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        atx = _ATX.match(line)
        if atx:
            headings[i] = (len(atx.group(1)), atx.group(2))
        elif i + 1 < len(lines) and line.strip() and _SETEXT.match(lines[i + 1]):
            # `---` under a paragraph line is a level-2 heading, not a rule.
            headings[i] = (1 if lines[i + 1].strip()[0] == "=" else 2, line.strip())
    if not title:
        # The one top-level heading is the document's title; of several, none is.
        tops = [h for level, h in headings.values() if level == 1]
        title = tops[0] if len(tops) == 1 else ""
    return Parsed(title, _under_headings(lines, start, headings, _item_lines_wrapped(lines, start, lazy=True)), "line")


def _item_lines_wrapped(lines: list[str], start: int, *, lazy: bool) -> set[int]:
    """The lines that go on with a list item's paragraph: not blank, starting no block of
    their own, and indented under the item or, where ``lazy`` (Markdown's lazy
    continuation lines), not. The passage keeps them on the item's line: stored without
    their indentation, "Where is that file on" then "Linux?" read as two statements, the
    item ended at a capital."""
    wrapped: set[int] = set()
    item = None  # the indentation of the item whose paragraph runs on, if one does
    fenced = False
    for i in range(start, len(lines)):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        indent = len(line) - len(line.lstrip())
        if fenced or not line.strip():
            item = None
        elif _LIST_ITEM.match(line):
            item = indent
        elif item is not None and not _BLOCK_START.match(line) and (lazy or indent > item):
            wrapped.add(i)
        else:
            item = None
    return wrapped


def _rendered(lines: list[str]) -> list[str]:
    """The lines as a rendered page shows them (see _LINK_DEFINITION), one for one, so line
    numbers stay true. Code blocks and code spans are left as they are; a comment that
    never closes is kept as text, so a stray "<!--" cannot hide the rest of a file."""
    last_close = max((i for i, line in enumerate(lines) if "-->" in line), default=-1)
    out, fenced, in_comment = [], False, False
    for i, line in enumerate(lines):
        if not in_comment and _FENCE.match(line):
            fenced = not fenced
        if fenced or not (in_comment or "<" in line or "]" in line or "**" in line or "__" in line):
            out.append(line)
            continue
        if not in_comment and _FIGURES.match(line):
            out.append("")
            continue
        shown, in_comment = _shown(line, in_comment, closes_later=i < last_close)
        out.append("" if not in_comment and _LINK_DEFINITION.match(shown) else shown)
    return out


def _strong_across_lines(lines: list[str]) -> list[str]:
    """The markers of strong emphasis that runs from one line of a paragraph to a later
    one taken out (see _STRONG_OPEN), the lines one for one."""
    out = list(lines)
    opened: tuple[int, int] | None = None  # (line, column) of an opener not closed on its line
    fenced = False
    for i, line in enumerate(lines):
        fence = _FENCE.match(line) is not None
        fenced ^= fence
        if fenced or fence or not line.strip():
            opened = None
            continue
        if "**" not in line:
            continue
        markers = [m for m in re.finditer(r"\*\*", line) if not _in_code(line, m.start())]
        if opened is not None:
            close = next((m for m in markers if _STRONG_CLOSE.match(line, m.start())), None)
            if close is not None:
                row, column = opened
                out[row] = out[row][:column] + out[row][column + 2 :]
                out[i] = line[: close.start()] + line[close.end() :]
                opened = None
                continue
        if markers and _STRONG_OPEN.match(line, markers[-1].start()):  # the line's pairs are gone
            opened = (i, markers[-1].start())
    return out


def _in_code(line: str, column: int) -> bool:
    return any(span.start() <= column < span.end() for span in _CODE_SPAN.finditer(line))


def _shown(line: str, in_comment: bool, closes_later: bool) -> tuple[str, bool]:
    """One line as rendered (see _INLINE), and whether a comment runs on past it."""
    parts, pos = [], 0
    while pos < len(line):
        if in_comment:
            end = line.find("-->", pos)
            if end < 0:
                break
            pos, in_comment = end + 3, False
            continue
        code = _CODE_SPAN.search(line, pos)
        start = line.find("<!--", pos)
        if start >= 0 and (code is None or start < code.start()) and (closes_later or "-->" in line[start:]):
            parts.append(line[pos:start])
            pos, in_comment = start + 4, True
        elif code is not None:
            parts += [line[pos : code.start()], code.group()]
            pos = code.end()
        else:
            parts.append(line[pos:])
            break
    return _INLINE.sub(_rendered_inline, "".join(parts)), in_comment


def _rendered_inline(match: re.Match) -> str:
    """A code span as it is, a link or strong emphasis as its text, an HTML tag or a
    footnote's mark as nothing."""
    if match["code"] is not None:
        return match["code"]
    return match["text"] or match["strong"] or match["under"] or ""


def _front_matter_title(lines: list[str]) -> tuple[str, int]:
    """YAML front matter: its `title:` and the first line after it."""
    if not lines or lines[0].strip() != "---":
        return "", 0
    title = ""
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return title, i + 1
        match = _FRONT_TITLE.match(lines[i])
        if match:
            title = match.group(1)
    return "", 0  # no closing line: not front matter


def _under_headings(
    lines: list[str], start: int, headings: dict[int, tuple[int, str]], wrapped: set[int]
) -> list[Block]:
    """A block per line; a line a reader rendered as two (a code block's closing fence on
    its last line) gives two blocks of its number."""
    blocks, heading = [], ""
    for i in range(start, len(lines)):
        if i in headings:
            heading = headings[i][1]
        parts = lines[i].split("\n")
        blocks += [
            Block(part, i + 1, heading=heading, continues=i in wrapped and k == 0) for k, part in enumerate(parts)
        ]
    return blocks


# -- Jupyter notebooks ---------------------------------------------------------------------

OUTPUT_LINES = 10  # a result's start says what it is; a training log's thousandth line does not
OUTPUT_CHARS = 600
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def notebook(text: str) -> Parsed:
    """A notebook as it is shown: markdown cells read as Markdown, code cells as fenced
    code, each followed by the start of its text output (stdout, the cell's value).
    Warnings, tracebacks and pictures are left out. Read as JSON, every passage was keys,
    quotes and base64. Blocks are numbered by cell."""
    try:
        document = json.loads(text)
        cells = document.get("cells")
        if cells is None:  # nbformat 3 kept its cells in worksheets
            cells = [cell for sheet in document.get("worksheets", []) for cell in sheet.get("cells", [])]
        metadata = document.get("metadata") or {}
    except (ValueError, AttributeError) as exc:
        raise SkipFile(f"not a Jupyter notebook: {brief(exc)}") from None
    language = (metadata.get("kernelspec") or {}).get("language") or ""
    lines: list[str] = []
    cell_of: list[int] = []
    for number, cell in enumerate(cells, 1):
        shown = _cell_lines(cell, language)
        lines += [*shown, ""]
        cell_of += [number] * (len(shown) + 1)
    parsed = markdown("\n".join(lines))
    blocks = [replace(block, number=cell_of[block.number - 1]) for block in parsed.blocks]
    return Parsed(parsed.title or str(metadata.get("title") or ""), blocks, "cell")


def _cell_lines(cell: dict, language: str) -> list[str]:
    source = _joined(cell.get("source"))
    if cell.get("cell_type") != "code":  # markdown, and raw cells as the text they are
        return source.splitlines()
    if not source.strip():
        return []
    results = []
    for output in cell.get("outputs") or []:
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            results.append(_joined(output.get("text")))
        elif output.get("output_type") in ("execute_result", "pyout"):
            results.append(_joined((output.get("data") or {}).get("text/plain", output.get("text"))))
    shown = [f"```{language}", *source.splitlines(), "```"]
    result = [line for line in _ANSI.sub("", "".join(results)).splitlines() if line.strip()]
    if result:
        start = "\n".join(result[:OUTPUT_LINES])
        cut = start[:OUTPUT_CHARS].splitlines() + (
            ["…"] if len(start) > OUTPUT_CHARS or len(result) > OUTPUT_LINES else []
        )
        shown += ["Output:", "```", *cut, "```"]
    return shown


def _joined(source) -> str:
    """A notebook's text: a string, or a list of lines as nbformat writes it."""
    return "".join(source) if isinstance(source, list) else str(source or "")


# -- reStructuredText ----------------------------------------------------------------------

# Two characters at least: an underline as long as its title ("If" over "--", CMake's).
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+<>:._])\1+\s*$")


def rst(text: str) -> Parsed:
    """Section titles are lines underlined (optionally overlined) by a punctuation run;
    directives and roles read as Sphinx shows them (restructuredtext.py)."""
    lines = source_lines(text)
    title, start = _file_metadata(lines)
    lines[:start] = [""] * start
    parsed = _underlined(lines, lambda lines, i: True, restructuredtext.shown)
    return replace(parsed, title=title) if title else parsed


_FIELD = re.compile(r"^:(\w[\w -]*):(?:\s+(.*))?$")  # ":title: AWS CLI Return Codes", not ":ref:`x`"


def _file_metadata(lines: list[str]) -> tuple[str, int]:
    """A field list before any other markup is the file's metadata, which Sphinx shows
    none of (quoted, ":title: AWS CLI Return Codes :description: ..." ran into the first
    sentence); its `:title:` (the AWS CLI's topics, Pelican's pages) titles the document,
    its first section title then a section's. The title and the first line after the list."""
    title, end = "", 0
    for i, line in enumerate(lines):
        field = _FIELD.match(line)
        if field:
            if field[1].lower() == "title":
                title = (field[2] or "").strip()
            end = i + 1
        elif end and line[:1].isspace() and line.strip():
            end = i + 1  # a field's value goes on, indented
        elif end or line.strip():
            break  # the list ended, or other markup comes first (blank lines before it are skipped)
    return title, end


def text_file(text: str) -> Parsed:
    """Plain prose (.txt) titles its sections the same way (a README.txt, Debian's
    specifications), so a title is underlined as in reStructuredText, starts a paragraph
    and does not end like a sentence: a rule drawn under a paragraph's last line is none.
    It also titles them alone on their line between blank ones: after a rule drawn across
    the page, or in capitals (Vim's help files, every plugin's doc/ among them; a manual
    page saved as text). A Vim help file reads as Vim shows it (vimhelp.py), a manual
    page in troff ("tar.1") as `man` shows its text (manpage.py)."""

    def titled(lines: list[str], i: int) -> bool:
        above = lines[i - 1] if i else ""
        starts = not above.strip() or bool(_RST_ADORNMENT.match(above))
        return starts and not lines[i].rstrip().endswith((".", ",", ";", ":"))

    lines = source_lines(text)
    if (manual := _manual(lines)) is not None:
        return manual
    return _underlined(lines, titled, vimhelp.shown if vimhelp.is_help(lines) else list, _titles_alone(lines))


_RULE = re.compile(r"^([=\-*_#~])\1{19,}\s*$")  # a rule across the page, not an underline's length
MAX_TITLE_WORDS = 10
# A note's first line alone ("My S3 notes") titles it, where it is words (one of three
# letters at least), not code or a checksum, and text follows (a line alone is its text).
_WORDS_ONLY = re.compile(r"[^\W_][\w '&/+-]*")


def _titles_alone(lines: list[str]) -> dict[int, tuple[str, str]]:
    """Titles alone on their line, a blank one under them: after a page-wide rule, in
    capitals and not indented (an indented line is an example), or the file's first line
    where it is words alone (a note's). Each with its kind, which tells siblings apart as
    an underline's character does."""
    titles: dict[int, tuple[str, str]] = {}
    first = next((i for i, line in enumerate(lines) if line.strip()), -1)
    for i, line in enumerate(lines):
        below = lines[i + 1] if i + 1 < len(lines) else ""
        if _titles_a_list(lines, i):
            titles[i] = ("list", " ".join(line.split()))
        if not line.strip() or below.strip() or _RST_ADORNMENT.match(line) or line[:1].isspace():
            continue
        title = " ".join(vimhelp.untagged(line).split())  # "*05.1*	The vimrc file	*vimrc-intro*"
        if not _title_like(title):
            continue
        if i and _RULE.match(lines[i - 1]):
            titles[i] = ("rule", title)
        elif (i == 0 or not lines[i - 1].strip()) and title.isupper() and sum(c.isalpha() for c in title) >= 4:
            titles[i] = ("capitals", title)
        elif (
            i == first and _WORDS_ONLY.fullmatch(title) and re.search(r"\b[^\W\d_]{3,}\b", title) and len(lines) > i + 2
        ):
            titles[i] = ("first", title)
    return titles


def _titles_a_list(lines: list[str], i: int) -> bool:
    """A line alone over a list, a blank line or the file's start above it, that ends no
    sentence and introduces nothing: a NEWS file's "shared-mime-info 2.2 (2022-03-27)" over
    that release's changes, a note's "Standup 3 March" over its points. Left in the text,
    the release was in none of the passages cut from its list but the first, and which
    release added a type was answered from another release's line."""
    line, below = lines[i], lines[i + 1] if i + 1 < len(lines) else ""
    if not line.strip() or line[:1].isspace() or _LIST_ITEM.match(line) or not _LIST_ITEM.match(below):
        return False
    title = " ".join(line.split())
    return (i == 0 or not lines[i - 1].strip()) and _title_like(title) and not title.endswith("?")


def _title_like(title: str) -> bool:
    """Words a title may be: a letter among them, ``MAX_TITLE_WORDS`` at most, and no
    sentence's or clause's end ("Go back by minutes.", "Run:")."""
    return (
        bool(re.search(r"[^\W\d_]", title))
        and len(title.split()) <= MAX_TITLE_WORDS
        and not title.endswith((".", ",", ";", ":", "!"))
    )


def _underlined(
    lines: list[str],
    titled: Callable[[list[str], int], bool],
    render: Callable[[list[str]], list[str]] = list,
    alone: dict[int, tuple[str, str]] | None = None,
) -> Parsed:
    headings: dict[int, tuple[int, str]] = {}
    for i in range(len(lines) - 1):
        line = lines[i].strip()
        under = lines[i + 1].rstrip()
        adorned = line and not _RST_ADORNMENT.match(line) and _RST_ADORNMENT.match(under)
        if adorned and len(under) >= len(line) and titled(lines, i):
            headings[i] = (0, line)
    overlined = {i for i in headings if i and _RST_ADORNMENT.match(lines[i - 1])}
    # A line under a title's underline starts its section's text, however long the underline.
    alone = {i: kind_title for i, kind_title in (alone or {}).items() if i - 2 not in headings}
    headings |= {i: (0, title) for i, (_kind, title) in alone.items()}

    def adornment(i: int) -> tuple[str, bool]:  # its underline's character, and an overline or none
        return (alone[i][0], False) if i in alone else (lines[i + 1].strip()[0], i in overlined)

    # The first title is the document's where no other is adorned alike (as docutils takes
    # it): a FAQ's "1. Background" titled "2. Compiling ..." and every section after it.
    first = min(headings, default=None)
    lone = first is not None and [adornment(i) for i in headings].count(adornment(first)) == 1
    title = headings[first][1] if lone else ""
    # A section title and its adornments title the section's passages; in their text they
    # ran into its first sentence ("Holiday ======= The office closes ...").
    underlined = [i for i in headings if i not in alone]
    ruled = {i - 1 for i, (kind, _title) in alone.items() if kind == "rule"}
    drawn = {*headings, *(i + 1 for i in underlined), *(i - 1 for i in overlined), *ruled}
    shown = render(["" if i in drawn else line for i, line in enumerate(lines)])
    return Parsed(title, _under_headings(shown, 0, headings, _item_lines_wrapped(shown, 0, lazy=False)), "line")


# -- HTML ----------------------------------------------------------------------------------

_INVISIBLE = ["script", "style", "noscript", "template", "head", "svg", "iframe", "object"]
# A page's controls, menus and navigation are on every page alike and answer nothing: an
# mdBook page began "Press ← or → to navigate between chapters ... Auto Light Rust Coal".
_CHROME = ["nav", "button", "select", "textarea", "input"]
_CHROME_ROLES = ["navigation", "menu", "menubar", "search", "dialog", "toolbar"]
_NOT_DRAWN = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# An overlay a page opens on demand, hidden by its stylesheet until then: newer mdBook pages
# carry a "mdbook-help-popup" of keyboard shortcuts ("Press S or / to search in the book"),
# a passage of every page of the Rust book and its error index.
_OVERLAY = re.compile(r"(?:^|[-_\s])(?:popup|modal)(?:$|[-_\s])", re.IGNORECASE)
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Elements a page draws on lines of their own; the rest (a, code, em, span) flow in the
# line. Each text piece was a line before, and "called <code>rustdoc</code>. Its job" was
# quoted "called rustdoc . Its job", the stop cut off from its sentence.
_BLOCKS = {
    *_HEADINGS,
    *("address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "div", "dl", "dt"),
    *("fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main", "ol", "p", "pre"),
    *("section", "summary", "table", "td", "th", "tr", "ul"),
}
_STOPS = (":", ".", "?", "!")


def html(text: str) -> Parsed:
    """Visible text only, as a page draws it: a line for each line of a block (paragraph,
    list item, cell) in the source, numbered by its source line."""
    from bs4 import BeautifulSoup, NavigableString, Tag
    from bs4.element import PreformattedString

    soup = BeautifulSoup(text, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    _leave_out_chrome(soup)
    if not title:
        h1 = soup.find("h1")
        title = h1.get_text(" ", strip=True) if h1 else ""
    _tables_as_rows(soup)
    starts, term_ends = _items(soup)
    # A preformatted block is fenced as in Markdown: drawn apart, it was read into the
    # sentence before it ("... document this code: #![allow(unused)] fn main() { ...").
    fences = set()
    for pre in soup.find_all("pre"):
        opening, closing = NavigableString("```"), NavigableString("```")
        pre.insert(0, opening)
        pre.append(closing)
        fences |= {id(opening), id(closing)}
    # [source line, text, heading, wrapped], the last one open while its block goes on;
    # wrapped: a source line of a paragraph's text, which the page draws as one line with it.
    lines: list[list] = []
    heading, line, owner, is_open = "", 1, None, False
    for node in soup.descendants:
        if isinstance(node, Tag):
            line = node.sourceline or line
            if node.name in _HEADINGS:
                heading = node.get_text(" ", strip=True)
            if node.name in _BLOCKS or node.name == "br":
                is_open = False
        elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            # Comments, doctypes and CDATA are PreformattedStrings: never visible. A heading
            # titles its section's passages; in their text it ran into the first sentence
            # ("Holiday The office closes on 24 December.").
            if node.find_parent(_HEADINGS):
                line += node.count("\n")
                continue
            if id(node) in fences:
                lines.append([line, str(node), heading, False])
                is_open = False
                continue
            block = node.find_parent(_BLOCKS)
            is_open = is_open and block is owner
            owner = block
            piece = f"- {node.lstrip()}" if id(node) in starts else str(node)
            if id(node) in term_ends and not piece.rstrip().endswith(_STOPS):
                piece = piece.rstrip() + ":"
            for offset, part in enumerate(piece.split("\n")):
                if offset == 0 and is_open:
                    lines[-1][1] += part
                else:
                    lines.append([line + offset, part, heading, offset > 0 and not node.find_parent("pre")])
                is_open = True
            line += node.count("\n")
    blocks: list[Block] = []
    for n, text, h, wrapped in lines:
        text = " ".join(text.split())
        # A source line that a piece of code opens is no list item: "<code>*</code> dereference
        # operator" was quoted as the item "• dereference operator" (the Rust book).
        if wrapped and blocks and _LIST_ITEM.match(text):
            blocks[-1] = Block(f"{blocks[-1].text} {text}".lstrip(), blocks[-1].number, heading=h)
        else:
            blocks.append(Block(text, n, heading=h))
    return Parsed(title, [block for block in blocks if block.text], "line")


def _leave_out_chrome(soup) -> None:
    """Remove what a page does not show (scripts, hidden elements, overlays) and its
    controls, menus and navigation."""
    hidden = [
        *soup.find_all(attrs={"hidden": True}),
        *soup.find_all(attrs={"aria-hidden": "true"}),
        *soup.find_all(style=_NOT_DRAWN),
        *soup.find_all(id=_OVERLAY),
        *soup.find_all(class_=_OVERLAY),
    ]
    for tag in [*soup.find_all(_INVISIBLE + _CHROME), *hidden, *soup.find_all(role=_CHROME_ROLES)]:
        tag.decompose()


def _tables_as_rows(soup) -> None:
    """Each data table's rows as Markdown's ("| top_k | 5 |"), a header row (all <th>, or
    the table's <thead>) with its rule, so a passage and the evidence read a row with its
    column names (chunking, markdown_tables). Drawn a cell to a line, a row was lost among
    them. A table holding a table or preformatted text lays a page out: left as it is."""
    for table in soup.find_all("table"):
        if table.find(["table", "pre"]):
            continue
        rows = [row for row in table.find_all("tr") if row.find_parent("table") is table]
        grid = [row.find_all(["th", "td"], recursive=False) for row in rows]
        if len(rows) < 2 or max(len(cells) for cells in grid) < 2:
            continue
        drawn = soup.new_tag("div")
        for k, (row, cells) in enumerate(zip(rows, grid)):
            lines = [markdown_tables.row([cell.get_text() for cell in cells])]
            if k == 0 and (row.find_parent("thead") or all(cell.name == "th" for cell in cells)):
                lines.append(markdown_tables.rule(len(cells)))
            for text in lines:
                line = soup.new_tag("p")
                line.string = text
                line.sourceline = row.sourceline
                drawn.append(line)
        table.replace_with(drawn)


def _items(soup) -> tuple[set[int], set[int]]:
    """The text pieces (by id) that start a list item or a definition list's term, and
    those that end a term. Drawn on a line of its own on the page, an item ran into the
    one before as text, and a term into its description after the entry before ("...
    they had uid 41. nobody, nogroup Daemons that ...", and the reader took 41 for
    nobody's uid). An item starts with "- ", as in Markdown, and a term's last words end
    in a colon: its description goes on the term's item."""
    starts, term_ends = set(), set()
    for tag in soup.find_all(["li", "dt"]):
        pieces = [piece for piece in tag.find_all(string=True) if piece.strip()]
        if pieces:
            starts.add(id(pieces[0]))
            if tag.name == "dt":
                term_ends.add(id(pieces[-1]))
    return starts, term_ends


# -- PDF -----------------------------------------------------------------------------------


# A page whose text layer has fewer letters and digits than this is a scan (or a scan
# with a stray page number in its text layer): its image is read by OCR instead.
MIN_PAGE_CHARS = 16
RUNNING_PAGES = 3
_NUMBERS = re.compile(r"\d+")
_END_NUMBERS = re.compile(r"^(\d+)\b|\b(\d+)$")
# A contents page's dot leaders ("2.3 Simple parsing . . . . . . 4"): every dot was a word.
_LEADER = re.compile(r"[ \t]*(?:\.[ \t]*){5,}")


def pdf(data: bytes, ocr: OcrRun | None = None) -> Parsed:
    """Each page's text layer; pages without a usable one are read by OCR (``ocr`` None:
    they give no text)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("encrypted PDF (password protected)")
        pages = list(reader.pages)
        title = (reader.metadata or {}).get("/Title") or ""
    except SkipFile:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise SkipFile(f"cannot read PDF: {brief(exc)}") from None
    texts: list[str | None] = []
    for page in pages:
        try:
            texts.append(page.extract_text() or "")
        except Exception:  # one damaged page should not cost the others
            texts.append(None)
    scanned = [n for n, text in enumerate(texts, 1) if text is None or _unusable(text)]
    read = {}
    if scanned and ocr is not None:
        from .ocr import pdf_pages

        read = pdf_pages(ocr, data, scanned)
    lines = [(text or "").splitlines() for text in texts]
    running = _running(lines)
    blocks = []
    for number, text in enumerate(texts, 1):
        if read.get(number):
            blocks += _ocr_blocks(read[number], page=number)
        elif text:
            page = lines[number - 1]
            start, end = _within_running(page, running)
            blocks += [Block(_LEADER.sub(" … ", page[n]), n + 1, page=number) for n in range(start, end)]
    if pages and not read and all(text is None for text in texts):
        raise SkipFile("cannot read PDF: no page could be decoded")
    return Parsed(str(title).strip(), blocks, "line")


def _running(pages: list[list[str]]) -> set[str]:
    """Running heads and feet: a line among the first two or the last two of
    ``RUNNING_PAGES`` or more pages, numbers made alike ("Chapter 4: Function reference
    12", a page number alone); and one on two pages that carries the page's printed
    number, as those lines do (a short chapter's "Chapter 2: ASN.1 structure handling 3",
    which began a passage and a quote). Read as text, a book's title began every page's
    first sentence ("Shared MIME-info Database • A magic-deleteall element ...")."""
    edges = [{*lines[:2], *lines[-2:]} for lines in pages]
    seen = Counter(_alike(line) for lines in edges for line in lines)
    running = {line for line, count in seen.items() if count >= RUNNING_PAGES and line}
    # The printed number is the page's index less an offset that the running lines agree on.
    offsets = Counter(
        n - number
        for n, lines in enumerate(edges, 1)
        for line in lines
        if _alike(line) in running
        for number in _end_numbers(line)
    )
    [(offset, pages_agreeing)] = offsets.most_common(1) or [(0, 0)]
    if pages_agreeing < RUNNING_PAGES:
        return running
    return running | {
        _alike(line)
        for n, lines in enumerate(edges, 1)
        for line in lines
        if seen[_alike(line)] >= 2 and n - offset in _end_numbers(line)
    }


def _end_numbers(line: str) -> set[int]:
    """The numbers a line starts or ends with (where a page's number is printed)."""
    found = _END_NUMBERS.findall(line.strip())
    return {int(a or b) for a, b in found}


def _within_running(lines: list[str], running: set[str]) -> tuple[int, int]:
    """The range of a page's lines between its running head and its running foot."""
    start, end = 0, len(lines)
    while start < end and _alike(lines[start]) in running:
        start += 1
    while end > start and _alike(lines[end - 1]) in running:
        end -= 1
    return start, end


def _alike(line: str) -> str:
    return _NUMBERS.sub("#", line.strip())


def _unusable(text: str) -> bool:
    return sum(ch.isalnum() for ch in text) < MIN_PAGE_CHARS


# -- images --------------------------------------------------------------------------------


def image(data: bytes, ocr: OcrRun | None) -> Parsed:
    """An image file read by OCR; each frame of a multi-page TIFF is a page."""
    if ocr is None:
        raise SkipFile('image: OCR is off (set ocr = "auto" to read images)')
    from .ocr import image_pages

    pages = image_pages(ocr, data)
    if len(pages) == 1:
        return Parsed("", _ocr_blocks(pages[0], page=0), "line")
    blocks = []
    for number, lines in enumerate(pages, 1):
        blocks += _ocr_blocks(lines, page=number)
    return Parsed("", blocks, "line")


def _ocr_blocks(lines: list[str], *, page: int) -> list[Block]:
    return [Block(line, n, page=page, ocr=True) for n, line in enumerate(lines, 1)]


# -- Word ----------------------------------------------------------------------------------


def docx(data: bytes) -> Parsed:
    import docx as python_docx
    from docx.table import Table

    try:
        document = python_docx.Document(io.BytesIO(data))
        content = list(document.iter_inner_content())
        title = document.core_properties.title or ""
    except Exception as exc:  # a damaged zip or XML part: BadZipFile, KeyError, lxml errors
        raise SkipFile(f"cannot read Word document: {brief(exc)}") from None
    blocks, heading = [], ""
    for number, item in enumerate(content, 1):
        if isinstance(item, Table):
            blocks += [Block(row, number, heading=heading) for row in _word_table_rows(item)]
            continue
        text = item.text
        style = item.style.name if item.style is not None else ""
        # A title or heading titles the passages after it; in their text it ran into
        # the first sentence ("Thermostat manual To reset the thermostat, ...").
        if style == "Title":
            title = title or text.strip()
            continue
        if style.startswith("Heading") and text.strip():
            heading = text.strip()
            continue
        if text.strip():
            blocks.append(Block(text, number, heading=heading))
    return Parsed(title.strip(), blocks, "paragraph")


def _word_table_rows(table) -> list[str]:
    """A Word table's rows as Markdown's, each a line (run together, a table was one line
    of cells); its first row a header, with the rule under it, where Word repeats it on
    each page or all its text is bold, so each row reads with its column names."""
    rows = [[cell.text.strip() for cell in row.cells] for row in table.rows]
    lines = [markdown_tables.row(cells) for cells in rows if any(cells)]
    if len(lines) > 1 and any(rows[0]) and (_repeated(table.rows[0]) or _bold(table.rows[0])):
        lines.insert(1, markdown_tables.rule(len(rows[0])))
    return lines


def _repeated(row) -> bool:
    return bool(row._tr.xpath("./w:trPr/w:tblHeader"))  # python-docx has no public name for it


def _bold(row) -> bool:
    runs = [run for cell in row.cells for paragraph in cell.paragraphs for run in paragraph.runs if run.text.strip()]
    return bool(runs) and all(run.bold for run in runs)


def brief(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}"[:200] if message else type(exc).__name__
