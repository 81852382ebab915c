"""Manual pages (troff with the man macros: "tar.1", "tar.1.gz" as Debian keeps them) as
`man` shows their text, one line for one, so line numbers stay true.

Read as plain text, a page was its markup: the reader quoted ".TP .BR t ", " numbered Make
numbered backups.", and keyword search could not match "--exclude", written "\\-\\-exclude".
Here requests (lines opening with "." or "'") show nothing but the text of their
arguments where they set it in a font (".B", ".BR"), headings (".SH", ".SS") become the
passages' headings, a paragraph request leaves a blank line, a tagged paragraph's tag ends
with a colon, and escapes show what they print (``\\-`` a hyphen, ``\\(bu`` a bullet, font
changes nothing). Only the man macros are read; a BSD mdoc page (".Dd", ".Nm") is
mdoc.py's.
"""

from __future__ import annotations

import re

_FIRST_LINES = 200  # a licence in comments, or Pod::Man's preamble of macros (136 lines), comes first
_TH = re.compile(r"^[.']\s*TH\s")
_REQUEST = re.compile(r"^[.']\s*(\S*)\s*(.*)$")
_ARGUMENT = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')
_COMMENT = re.compile(r'\\".*$')
# Requests that set their arguments in a font: all in one, or alternating two fonts.
_ONE_FONT = frozenset({"B", "I", "SM", "SB"})
_ALTERNATING = frozenset({"BR", "BI", "IB", "IR", "RB", "RI"})
_HEADINGS = {"SH": 2, "SS": 3}
_PARAGRAPHS = frozenset({"PP", "LP", "P", "TP", "IP", "HP", *_HEADINGS})  # each ends the paragraph before
_CODE_START = frozenset({"nf", "EX"})
_CODE_END = frozenset({"fi", "EE"})
_DEFINITION = frozenset({"de", "de1", "am", "ig"})  # a macro's body, up to "..", prints nothing here
# The end of a macro's body: "..", or ".  ." inside a conditional block (Asciidoctor's
# pages define their URL macros so, and every line after them was taken for the body).
_DEFINITION_END = re.compile(r"^\.\s*\.")
_STOPPED = re.compile(r"[.!?,;:]\s*$")  # a line that ends a sentence or a clause: no term
_BULLETS = frozenset({"•", "*", "-", "o", "+"})

# Named characters, \(xx or \[name], and the man macros' strings, \*(xx or \*[name].
_CHARACTERS = {
    "em": "—",
    "en": "–",
    "hy": "-",
    "bu": "•",
    "aq": "'",
    "dq": '"',
    "lq": '"',
    "rq": '"',
    "oq": "'",
    "cq": "'",
    "co": "©",
    "rg": "®",
    "tm": "™",
    "mu": "×",
    "de": "°",
    "ga": "`",
    "ti": "~",
    "ha": "^",
    "rs": "\\",
    "ba": "|",
    "or": "|",
    "->": "→",
    "<-": "←",
    "<=": "≤",
    ">=": "≥",
    "R": "®",
    "Tm": "™",
}
_ESCAPE = re.compile(
    r"\\(?:"
    r"\((?P<two>..)|\[(?P<named>[^\]]*)\]"  # a named character
    r"|\*(?:\((?P<s2>..)|\[(?P<sn>[^\]]*)\]|(?P<s1>.))"  # a string
    r"|f(?:\(..|\[[^\]]*\]|.)"  # a font change
    r"|[sn](?:[+-]?\d|\(..|\[[^\]]*\]|.)"  # a size or a number register
    r"|[hvwoLlDXZbxNR]'[^']*'"  # motions, boxes, drawing: nothing to read
    r"|(?P<char>.)"
    r")"
)
_SIMPLE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "'": "'", "`": "`", ".": "."}


def is_manpage(lines: list[str]) -> bool:
    """A page of the man macros: its .TH among its first lines."""
    return any(_TH.match(line) for line in lines[:_FIRST_LINES])


def text(line: str, strings: dict[str, str] | None = None) -> str:
    """A line's text as printed: comments left out, escapes as what they print; ``strings``:
    those the page defined (``.ds``), before the man macros' own."""
    line = _COMMENT.sub("", line)
    strings = strings or {}
    line = line[:-1] if line.endswith("\\") and not line.endswith("\\\\") else line  # a line that goes on

    def printed(match: re.Match) -> str:
        string = match["s2"] or match["sn"] or match["s1"]
        if string is not None:
            return strings.get(string, _CHARACTERS.get(string, ""))
        named = match["two"] or match["named"]
        if named is not None:
            return _CHARACTERS.get(named, "")
        char = match["char"]
        return _SIMPLE.get(char, "") if char is not None else ""

    return _ESCAPE.sub(printed, line)


def arguments(rest: str) -> list[str]:
    """A request's arguments, "quoted ones" whole ("" in them a quote)."""
    return [m[1].replace('""', '"') if m[1] is not None else m[2] for m in _ARGUMENT.finditer(rest)]


def shown(lines: list[str]) -> tuple[list[str], dict[int, tuple[int, str]], str]:
    """Each line as shown ("" where nothing shows; code between ``` fences), the headings
    by line index (level, text), and the page's title, "name(section)" as .TH gives them."""
    out = [""] * len(lines)
    headings: dict[int, tuple[int, str]] = {}
    title, heading_next, lead = "", 0, ""
    skipping = code = tag_next = hanging = False
    last = -1  # the last line that shows text
    strings: dict[str, str] = {}

    def show(i: int, shown_text: str) -> None:
        nonlocal lead, tag_next, last
        if shown_text.strip():
            (shown_text, lead), last = led(lead, shown_text), i
            if tag_next:
                shown_text, tag_next = term(shown_text), False
        out[i] = shown_text

    for i, line in enumerate(lines):
        request = _REQUEST.match(line)
        if skipping:
            skipping = not _DEFINITION_END.match(line)
            continue
        if request is None:  # a text line
            shown_text = text(line, strings)
            show(i, shown_text)
            if heading_next and shown_text.strip():
                headings[i] = (heading_next, shown_text.strip())
                heading_next, last = 0, -1  # a heading is no paragraph to describe
            continue
        name, args = request[1], [text(a, strings) for a in arguments(request[2])]
        if name in _DEFINITION:
            skipping = True
        elif name == "ds":  # a string; Pod::Man defines each for nroff first, as `man` shows it
            defined, _, value = request[2].partition(" ")
            value = value.lstrip()
            strings.setdefault(defined, text(value[1:] if value.startswith('"') else value, strings))
        elif name == "TH" and args:
            title = f"{args[0]}({args[1]})" if len(args) > 1 else args[0]
        elif name in _HEADINGS:
            if args:
                headings[i] = (_HEADINGS[name], " ".join(args))
                out[i], last = " ".join(args), -1
            else:  # the heading is the next line
                heading_next = _HEADINGS[name]
        elif name in _ONE_FONT:
            show(i, " ".join(args))
        elif name in _ALTERNATING:
            show(i, "".join(args))
        elif name == "TP":  # a tagged paragraph: its next line is the tag
            tag_next = True
        elif name == "RS" or (name == "IP" and not (args and args[0].strip()) and hanging):
            # Indented under a one-line paragraph, its description: Asciidoctor's lists
            # (.RS), help2man's (.HP the option, an untagged .IP what it does).
            if last > 0 and not out[last - 1].strip() and not _STOPPED.search(out[last]):
                out[last] = term(out[last])
        elif name == "IP" and args and args[0].strip():  # a list item's tag, before its text
            lead = "• " if args[0].strip() in _BULLETS else f"{args[0].strip()} "
        elif name in (_CODE_END if code else _CODE_START):  # pages end no-fill where none began
            out[i], code = "```", not code
        if name in _PARAGRAPHS:
            hanging = name == "HP"
    return out, headings, title


def led(lead: str, shown_text: str) -> tuple[str, str]:
    """A line as shown after a list item's ``lead`` ("• ", an .IP tag), and the lead left
    for the next line: it goes on the first line that shows text."""
    return (f"{lead}{shown_text}", "") if shown_text.strip() else (shown_text, lead)


def term(line: str) -> str:
    """A tag ("-i, --ignore-case") with a colon, as a definition's term, so that its
    description, on the lines under it, reads as what it defines (evidence.py)."""
    return line if line.rstrip().endswith(":") else f"{line.rstrip()}:"
