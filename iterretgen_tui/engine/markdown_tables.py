"""A Markdown table's lines: a row ("| pnpm | `pnpm`, `pnpx` |"), its cells split at
unescaped pipes, and the rule under its header (cells of "---", ":--:"). HTML and Word
tables are written as such rows; the chunker keeps a table's header with its rows, and
the evidence reads each row as a statement."""

from __future__ import annotations

import re

_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_CELL_EDGE = re.compile(r"(?<!\\)\|")
_RULE_CELL = re.compile(r":?-+:?")


def is_row(line: str) -> bool:
    return bool(_ROW.match(line))


def is_rule(line: str) -> bool:
    """The line under a table's header: a row of "---" cells."""
    return is_row(line) and all(_RULE_CELL.fullmatch(cell) for cell in cells(line))


def cells(row: str) -> list[str]:
    return [cell.strip().replace("\\|", "|") for cell in _CELL_EDGE.split(row.strip())[1:-1]]


def row(texts: list[str]) -> str:
    """A row of cells' texts, as Markdown writes it ("| top_k | 5 |"; a pipe escaped)."""
    escaped = (text.replace("|", "\\|") for text in texts)
    return " ".join(("| " + " | ".join(escaped) + " |").split())


def rule(columns: int) -> str:
    return "|" + " --- |" * columns
