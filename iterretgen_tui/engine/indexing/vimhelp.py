"""Vim's help files as Vim shows them, one line for one, so line numbers stay true.

Vim's user manual and every plugin's doc/ are plain text with a help file's marks: a line
ending in ">" opens an example (its indented lines, closed by a line starting with "<"),
"|name|" links to a tag, "*name*" defines one, and " ~" ends a highlighted line. Read as
written, the reader quoted "You can see a list of files by typing the command > :oldfiles
< 1: ~/.viminfo ~". Here an example is fenced with ``` as in Markdown, a link is its name,
a tag beside the text (an anchor at the right margin), the marks and the modeline show
nothing.
"""

from __future__ import annotations

import re

from .restructuredtext import FENCE

# The modeline that makes a text file a help file ("vim:tw=78:ts=8:noet:ft=help:norl:").
_MODELINE = re.compile(r"(?:^|\s)vim?:.*\b(?:ft|filetype)=help\b")
_EXAMPLE = re.compile(r"(?:^|\s)>(?:[a-z]+)?\s*$")  # ">" or, in newer files, ">vim"
_LINK = re.compile(r"(?<![|\w])\|([^\s|]+)\|(?![|\w])")
# A tag beside the text (mostly at the right margin: "The vimrc file	*vimrc-intro*") is an
# anchor for links; one that starts a line is its name ("*05.1*	The vimrc file").
_TAG_BESIDE = re.compile(r"(?<=\s)\*[^\s*|]+\*(?=\s|$)")
_TAG_FIRST = re.compile(r"^\*([^\s*|]+)\*")
_HIGHLIGHT = re.compile(r"\s~\s*$|^~\s*$")


def is_help(lines: list[str]) -> bool:
    """A help file: its modeline, among its last lines, says so."""
    return any(_MODELINE.search(line) for line in lines[-5:])


def shown(lines: list[str]) -> list[str]:
    """Each line as Vim shows it ("" where nothing shows). A fence rides on the line that
    opens an example and on the one that closes it, after or before a newline."""
    out = list(lines)
    code: set[int] = set()
    i = 0
    while i < len(lines):
        if not _EXAMPLE.search(lines[i]):
            i += 1
            continue
        lead = _EXAMPLE.sub("", out[i]).rstrip()  # a closing "<" line may open the next example
        out[i] = f"{lead}\n{FENCE}" if lead.strip() else FENCE
        end = i + 1
        while (
            end < len(lines) and not lines[end].startswith("<") and (not lines[end].strip() or lines[end][0].isspace())
        ):
            end += 1
        last = max((k for k in range(i + 1, end) if lines[k].strip()), default=i)
        code.update(range(i + 1, last + 1))
        if end < len(lines) and lines[end].startswith("<"):
            rest = lines[end][1:]
            out[end] = f"{FENCE}\n{rest}" if rest.strip() else FENCE
            i = end
        elif last + 1 < len(lines) and not lines[last + 1].strip():
            out[last + 1] = FENCE
            i = last + 1
        else:
            out[last] += "\n" + FENCE
            i = last + 1
    return [line if n in code else _prose(line) for n, line in enumerate(out)]


def untagged(line: str) -> str:
    """A line without the tags beside its text, and a tag that starts it as its name."""
    return _TAG_FIRST.sub(r"\1", _TAG_BESIDE.sub("", line))


def _prose(line: str) -> str:
    if _MODELINE.search(line):
        return ""
    return _LINK.sub(r"\1", untagged(_HIGHLIGHT.sub("", line)))
