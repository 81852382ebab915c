"""reStructuredText lines as Sphinx renders them, one for one, so line numbers stay true.

Read as written, a page of Sphinx documentation (CMake's, most Python projects') gave the
reader ".. only:: html", ".. code-block:: cmake" glued to the sentence before it, and
":command:`target_sources`". Here a directive becomes what it shows: code is fenced with
``` as in Markdown, a note or a version note is its label ("New in version 3.11:") and
its text, a table of contents, an index entry, a comment or a link target is nothing, and
any other directive is its argument (a function's signature). Roles and inline literals
read as code spans, links as their text.
"""

from __future__ import annotations

import re

FENCE = "```"
_EXPLICIT = re.compile(r"^(\s*)\.\.(?:\s|$)")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+([A-Za-z][\w:+.-]*)::(?:\s+(.*?))?\s*$")
_FOOTNOTE = re.compile(r"^\s*\.\.\s+(\[[^\]]+\])\s*(.*)$")
_OPTION = re.compile(r"^\s*:[\w -]+:(?:\s.*)?$")
_CODE = {"code-block", "code", "sourcecode", "doctest", "testcode", "testoutput", "parsed-literal", "math"}
_LEFT_OUT = {"contents", "toctree", "index", "raw", "include", "literalinclude", "highlight", "image", "meta"}
_SILENT = {"only", "ifconfig", "container", "rst-class"}  # shows its body alone
_LABELS = {
    "note": "Note:",
    "warning": "Warning:",
    "tip": "Tip:",
    "hint": "Hint:",
    "important": "Important:",
    "caution": "Caution:",
    "danger": "Danger:",
    "attention": "Attention:",
    "error": "Error:",
    "seealso": "See also:",
    "versionadded": "New in version {}:",
    "versionchanged": "Changed in version {}:",
    "deprecated": "Deprecated since version {}:",
}

_LITERAL = re.compile(r"``(.+?)``")
_ROLE = re.compile(r":(?:[\w-]+:)*([\w-]+):`([^`]+)`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]*>`__?")
_REFERENCE = re.compile(r"`([^`]+)`__?(?!\w)")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
# Roles whose text is prose, not a name of code ("see :ref:`the install guide <install>`").
_PROSE_ROLES = {"ref", "doc", "term", "abbr", "emphasis", "strong", "dfn", "title-reference", "numref", "pep", "rfc"}


def shown(lines: list[str]) -> list[str]:
    """Each line as rendered ("" where nothing shows). A fence that closes a block where
    no blank line follows it rides on the block's last line, after a newline."""
    out = list(lines)
    code: set[int] = set()
    i = 0
    while i < len(lines):
        explicit = _EXPLICIT.match(lines[i])
        literal = _literal_block_start(lines, i) if explicit is None else None
        if explicit is None and literal is None:
            i += 1
            continue
        if literal is not None:
            out[i], start = literal, i + 1
            end = _body_end(lines, start, indentation(lines[i]))
            out[start] = FENCE  # the blank line a literal block starts after
            _close(out, end)
            code.update(range(start + 1, end))
            i = end
            continue
        end = _body_end(lines, i + 1, len(explicit.group(1)))
        directive = _DIRECTIVE.match(lines[i])
        if directive is None:
            footnote = _FOOTNOTE.match(lines[i])
            if footnote:
                out[i] = f"{footnote[1]} {footnote[2]}".rstrip()
                i += 1
            else:  # a comment, a link target, a substitution: nothing shows
                out[i:end] = [""] * (end - i)
                i = end
            continue
        name, argument = directive[1].lower().rsplit(":", 1)[-1], directive[2] or ""
        body = i + 1
        while body < end and _OPTION.match(lines[body]):
            out[body] = ""
            body += 1
        if name in _LEFT_OUT:
            out[i:end] = [""] * (end - i)
            i = end
        elif name in _CODE:
            out[i] = FENCE
            _close(out, end)
            if name != "parsed-literal":  # whose roles and links are rendered
                code.update(range(body, end))
            i = end
        else:
            out[i] = _label(name, argument)
            i = body  # the body is read on, with what it holds
    return _inline_all(out, code)


def _inline_all(lines: list[str], code: set[int]) -> list[str]:
    """Inline markup rendered outside code; a role or link wrapped onto the next line
    (":ref:`rules of variable" / "evaluation <cmake-language-variables>`") is rendered
    across the two."""
    prose = [n not in code and not lines[n].startswith(FENCE) for n in range(len(lines))]
    out, n = [], 0
    while n < len(lines):
        if not prose[n]:
            out.append(lines[n])
        elif lines[n].count("`") % 2 and n + 1 < len(lines) and prose[n + 1]:
            first, *rest = _inline(lines[n] + "\n" + lines[n + 1]).split("\n")
            out += [first, " ".join(rest)]
            n += 1
        else:
            out.append(_inline(lines[n]))
        n += 1
    return out


def _label(name: str, argument: str) -> str:
    """A directive's line as shown: "Note: its text", "New in version 3.11: its text", or
    its argument alone."""
    if name in _SILENT:
        return ""
    label = _LABELS.get(name)
    if label is None:
        return argument
    if "{}" not in label:
        return f"{label} {argument}".strip()
    version, _, rest = argument.partition(" ")
    return f"{label.format(version)} {rest}".strip() if version else label.replace(" {}", "")


def _literal_block_start(lines: list[str], i: int) -> str | None:
    """A paragraph line ending in "::" before a blank line and an indented block: the line
    as shown ("Example::" -> "Example:", "Example ::" and "::" alone -> their words)."""
    line = lines[i].rstrip()
    if not line.endswith("::") or i + 2 >= len(lines) or lines[i + 1].strip():
        return None
    after = next((later for later in lines[i + 2 :] if later.strip()), "")
    if indentation(after) <= indentation(line):
        return None
    words = line[:-2]
    return words + ":" if words and not words[-1].isspace() else words.rstrip()


def _body_end(lines: list[str], start: int, indent: int) -> int:
    """The index after the last line of the block indented past ``indent`` from ``start``."""
    end = last = start
    while end < len(lines) and (not lines[end].strip() or indentation(lines[end]) > indent):
        if lines[end].strip():
            last = end + 1
        end += 1
    return last


def _close(out: list[str], end: int) -> None:
    if end < len(out) and not out[end].strip():
        out[end] = FENCE
    else:
        out[end - 1] += "\n" + FENCE


def indentation(line: str) -> int:
    """The width of a line's leading whitespace."""
    return len(line) - len(line.lstrip())


def _inline(line: str) -> str:
    if "`" not in line and "**" not in line:
        return line
    line = _LITERAL.sub(r"`\1`", line)
    line = _ROLE.sub(_role, line)
    line = _LINK.sub(r"\1", line)
    line = _REFERENCE.sub(r"\1", line)
    return _STRONG.sub(r"\1", line)


def _role(match: re.Match) -> str:
    """ ":command:`add_executable`" -> "`add_executable`"; a titled reference or a prose
    role -> its text ("the install guide"); "~pkg.mod.Name" -> "Name"."""
    role, text = match[1].lower(), match[2].strip()
    titled = re.fullmatch(r"(.*?)\s*<[^<>]+>", text, re.DOTALL)
    if titled and titled[1]:
        return titled[1]
    text = text.lstrip("!")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    return text if role in _PROSE_ROLES else f"`{text}`"
