"""LaTeX sources (.tex) read as their typeset text, line for line, so line numbers stay
true. Read as written, a paper's first passage was its preamble and every sentence carried
its commands ("The \\textbf{grey heron} waits \\cite{smith}").

Headings (\\section{...} and its kin) title their passages, \\title the document; the
preamble, comments, labels and layout commands show nothing; emphasis and other commands
show their text, \\texttt and verbatim blocks are code, a list's \\item starts with "- ",
and \\cite and \\ref show their keys in brackets. Mathematics is kept as written.
"""

from __future__ import annotations

import re

from .formats import Block, Parsed, source_lines

MAX_WRAPPED = 4  # lines an argument may run on past its command's
_BRACED = r"\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}"  # an argument, braces nested twice
_HEADING = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?(?:\[[^\]]*\])?" + _BRACED)
_TITLE = re.compile(r"\\title(?:\[[^\]]*\])?" + _BRACED)
_COMMENT = re.compile(r"(?<!\\)%.*")
_BEGIN = re.compile(r"\\(begin|end)\{([A-Za-z*]+)\}(?:\[[^\]]*\])?")
_VERBATIM = {"verbatim", "verbatim*", "lstlisting", "minted", "Verbatim"}
_ITEM = re.compile(r"\\item(?:\[([^\]]*)\])?\s*")
_GONE = re.compile(
    r"\\(?:label|vspace|hspace|includegraphics|bibliographystyle|bibliography|input|include|usepackage"
    r"|documentclass|setlength|newcommand|renewcommand|maketitle|tableofcontents|centering|noindent"
    r"|newpage|clearpage|small|large|Large|footnotesize|normalsize)\*?(?:\[[^\]]*\])*(?:" + _BRACED + r")*"
)
_CODE = re.compile(r"\\(?:texttt|verb)" + _BRACED)
_KEYS = re.compile(r"\\(?:cite[a-z]*|[a-z]*ref)\*?(?:\[[^\]]*\])*" + _BRACED)
_LINK = re.compile(r"\\href" + _BRACED + r"\s*" + _BRACED)
_TEXT_COMMAND = re.compile(r"\\[A-Za-z]+\*?(?:\[[^\]]*\])?" + _BRACED)
_BARE_COMMAND = re.compile(r"\\[A-Za-z]+\*?(?![A-Za-z{])")
_ESCAPES = (("\\%", "%"), ("\\&", "&"), ("\\_", "_"), ("\\#", "#"), ("\\$", "$"), ("\\\\", " "), ("~", " "))
_MATH = re.compile(r"((?<!\\)\$[^$]*(?<!\\)\$)")
_QUOTES = (("``", "“"), ("''", "”"), ("---", "—"), ("--", "–"))


def latex(text: str) -> Parsed:
    written = source_lines(text)
    lines = [_COMMENT.sub("", line) for line in written]
    body_start = next((i + 1 for i, line in enumerate(lines) if "\\begin{document}" in line), 0)
    body_end = next((i for i, line in enumerate(lines) if "\\end{document}" in line), len(lines))
    title = next((_plain(m[1]) for line in lines[:body_end] for m in [_TITLE.search(line)] if m), "")
    blocks, heading, verbatim = [], "", False
    i = body_start - 1
    while i + 1 < body_end:
        i += 1
        line = lines[i]
        begin = _BEGIN.search(line)
        if begin and begin[2] in _VERBATIM:
            verbatim = begin[1] == "begin"
            blocks.append(Block("```", i + 1, heading=heading))
            continue
        if verbatim:
            blocks.append(Block(written[i], i + 1, heading=heading))  # a "%" in code is no comment
            continue
        first = i
        while _open_braces(line) > 0 and i + 1 < body_end and i - first < MAX_WRAPPED:
            i += 1  # an argument wrapped onto the next lines: read as one line, the first's
            line += " " + lines[i].strip()
        found = _HEADING.search(line)
        if found:
            heading = " ".join(_plain(found[2]).split())
            line = line[: found.start()] + line[found.end() :]
        shown = _shown(line)
        if shown.strip():
            blocks.append(Block(shown, first + 1, heading=heading))
    return Parsed(title, blocks, "line")


def _open_braces(line: str) -> int:
    line = line.replace("\\{", "").replace("\\}", "")
    return line.count("{") - line.count("}")


def _shown(line: str) -> str:
    line = _BEGIN.sub("", line)
    line = _ITEM.sub(lambda m: f"- {m[1]}: " if m[1] else "- ", line)
    return _plain(line)


def _plain(text: str) -> str:
    """Text with its commands rendered; inline mathematics ($...$) is kept as written."""
    pieces = _MATH.split(text)
    return "".join(piece if n % 2 else _rendered(piece) for n, piece in enumerate(pieces))


def _rendered(text: str) -> str:
    text = _GONE.sub("", text.replace("}{", "} {"))  # \moduleauthor{Joe}{joe@example.org}: two words
    text = _CODE.sub(r"`\1`", text)
    text = _LINK.sub(r"\2", text)
    text = _KEYS.sub(r"[\1]", text)
    for _ in range(3):  # \emph{\textbf{x}}: a command inside another's text
        text = _TEXT_COMMAND.sub(r"\1", text)
    text = _BARE_COMMAND.sub("", text)
    for written, shown in (*_ESCAPES, *_QUOTES):
        text = text.replace(written, shown)
    return text.replace("{", "").replace("}", "")
