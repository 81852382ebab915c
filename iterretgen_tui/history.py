"""Saved conversations: SQLite in the data dir, each turn with its full iteration trace.

Not a UI module: the TUI and scripts both use it. A turn is stored as the loop's own
``FinalAnswer`` (JSON), so reopening a conversation restores every iteration pane.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .engine.errors import IterRetGenError
from .engine.loop.answers import mentions, normalize_answer, uncited
from .engine.loop.events import FinalAnswer, StopReason
from .engine.loop.evidence import Evidence
from .engine.loop.question_kind import OPEN
from .engine.loop.serialize import final_from_dict, final_to_dict
from .engine.loop.stopping import answers_converge
from .engine.loop.trust import Weakness, restates, shown_reply, weakness, weakness_message
from .engine.passages import Passage, by_section

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    folder TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    created REAL NOT NULL,
    final TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns(conversation_id, id);
"""


class HistoryError(IterRetGenError):
    """The history database cannot be written."""


@dataclass(frozen=True)
class ConversationSummary:
    id: int
    title: str
    folder: str
    updated: float
    turns: int


@dataclass(frozen=True)
class Conversation:
    id: int
    title: str
    folder: str
    turns: tuple[FinalAnswer, ...]


def final_to_json(final: FinalAnswer) -> str:
    return json.dumps(final_to_dict(final), ensure_ascii=False)


def final_from_json(text: str) -> FinalAnswer:
    return final_from_dict(json.loads(text))


class History:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or paths.history_db()
        self._db = sqlite3.connect(self.path)  # the TUI uses it from its UI thread only
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def start(self, title: str, folder: str) -> int:
        now = time.time()
        with self._writing():
            cursor = self._db.execute(
                "INSERT INTO conversations (title, folder, created, updated) VALUES (?, ?, ?, ?)",
                (title[:200], folder, now, now),
            )
        return int(cursor.lastrowid)

    def add_turn(self, conversation_id: int, final: FinalAnswer) -> None:
        now = time.time()
        with self._writing():
            self._db.execute(
                "INSERT INTO turns (conversation_id, created, final) VALUES (?, ?, ?)",
                (conversation_id, now, final_to_json(final)),
            )
            self._db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id))

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction; a full disk or a damaged file is an error the user can act on."""
        try:
            with self._db:
                yield
        except sqlite3.Error as exc:
            raise HistoryError(f"could not save to history ({self.path}): {exc}") from None

    def recent(self, limit: int = 200) -> list[ConversationSummary]:
        rows = self._db.execute(
            "SELECT c.id, c.title, c.folder, c.updated, COUNT(t.id) FROM conversations c "
            "LEFT JOIN turns t ON t.conversation_id = c.id "
            "GROUP BY c.id ORDER BY c.updated DESC, c.id DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [ConversationSummary(*row) for row in rows]

    def get(self, conversation_id: int) -> Conversation:
        row = self._db.execute(
            "SELECT id, title, folder FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise KeyError(f"no conversation {conversation_id}")
        turns = self._db.execute(
            "SELECT final FROM turns WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        ).fetchall()
        return Conversation(*row, turns=tuple(final_from_json(t[0]) for t in turns))

    def last_in(self, folder: str) -> int | None:
        """The conversation over ``folder`` that was added to last, if any."""
        row = self._db.execute(
            "SELECT id FROM conversations WHERE folder = ? ORDER BY updated DESC, id DESC LIMIT 1", (folder,)
        ).fetchone()
        return int(row[0]) if row else None

    def delete(self, conversation_id: int) -> None:
        with self._db:
            self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))


def sources_markdown(sources: tuple[Passage, ...], stale: dict[str, str] | None = None) -> str:
    """Numbered sources, [1] first, as the model saw them: title, file and page/line (a
    title that is only the file's name, as a PDF without one has, is not said twice), a
    section's passages on one line; ``stale`` (source path -> why) marks files changed or
    deleted since indexing."""
    stale = stale or {}
    lines = []
    for section in by_section(sources):
        named = f"{_escape(section.title)} — " if section.title else ""
        changed = f" — ⚠ **file {stale[section.source]}**" if section.source in stale else ""
        if len(section.numbered) == 1:
            [(n, passage)] = section.numbered
            lines.append(f"- **[{n}]** {named}`{passage.citation}`{changed}")
        else:
            places = ", ".join(f"**[{n}]** {passage.location}".rstrip() for n, passage in section.numbered)
            lines.append(f"- {named}`{section.source}`: {places}{changed}")
    return "\n".join(lines)


def evidence_markdown(evidence: Evidence) -> str:
    """The evidence's quotes, each with its citation number and file, a line each; a
    list item's line break stays one (a Markdown hard break)."""
    quotes = [
        "“" + "\\\n".join(_escape(line) for line in quote.text.split("\n")) + f"” **[{quote.n}]** — `{quote.citation}`"
        for quote in evidence.quotes
    ]
    return "**From your documents:** " + "\\\n".join(quotes)


def answer_markdown(final: FinalAnswer, stale: dict[str, str] | None = None) -> str:
    """The answer as shown in the chat and in exports: the short answer, the reasoning
    that led to it, the evidence sentence and the numbered sources it was generated
    from. A weak answer (engine/loop/trust.py) is said to be weak, and the evidence
    leads."""
    parts = [f"_Read as: {_escape(final.standalone)}_"] if final.standalone else []
    if final.asked_back:  # nothing was drafted: the question back, and where its names are from
        parts.append(f"**{_escape(final.asked_back)}**")
    weak = weakness(final)
    if weak is not None:
        parts.append(f"⚠ {weakness_message(final, weak)}")
        if final.evidence:
            parts.append(evidence_markdown(final.evidence))
    # "Your documents don't say" shows the evidence in place of a guess; the panes keep the drafts.
    guessed = weak is not Weakness.NOT_FOUND
    headline, body = shown_reply(final) if guessed else ("", "")
    if headline:
        label = "The model's answer (unverified)" if weak else "Answer"
        parts.append(f"**{label}:** {_escape(headline)}")
    if final.kind != OPEN and body:
        parts.append(close_fences(body))
        if final.iterations and final.iterations[-1].asked_rest:
            parts.append(
                f"_The draft answered part of the question; asked next: {_escape(final.iterations[-1].asked_rest)}_"
            )
    if weak is None and final.evidence:
        parts.append(evidence_markdown(final.evidence))
    checked = checked_note(final) if guessed else ""  # no answer shown: nothing stands or changed
    if checked:
        parts.append(f"_{checked}_")
    if final.sources:
        parts.append("**Sources**\n\n" + sources_markdown(final.sources, stale))
        if stale and not stale.keys().isdisjoint(p.source for p in final.sources):
            parts.append("_A source changed since it was indexed: Ctrl+R re-indexes the folder._")
    return "\n\n".join(parts) or "_No answer._"


def checked_note(final: FinalAnswer) -> str:
    """How the first stated answer, which the chat shows while later iterations run,
    fared in them: unchanged, or what it was; "" where no iteration checked it."""
    first = next((trace for trace in final.iterations if trace.stated), None)
    if first is None or final.stop_reason is StopReason.CANCELLED or final.stopped_at == first.t:
        return ""
    why = final.stop_reason.describe(final.stopped_at)
    later = [trace for trace in final.iterations if trace.t > first.t]
    if not later:  # the next search found nothing new: nothing to check it against
        return f"Checked: the next search found only passages already considered, so the first answer stands ({why})."
    seen = {p.id for p in first.passages}
    more = len({p.id for trace in later for p in trace.passages} - seen)
    read = f"{more} more passage{'s' if more != 1 else ''}" if more else "the same passages again"
    # As the adaptive stop counts it; where the last answer only restated the question, the
    # chat shows the draft, and a draft that still says the first answer keeps it.
    same = answers_converge(first.answer, final.answer, final.searched)
    if same or (restates(final) and mentions(final.draft, first.answer)):
        return f"Checked against {read}: unchanged ({why})."
    if _begins(first.answer, final.answer):  # its first sentences, the rest left out
        return f"Checked against {read}: unchanged, said shorter ({why})."
    return f"Changed after reading {read}; the first answer was: {_escape(first.answer)} ({why})."


def _begins(answer: str, start: str) -> bool:
    """``answer`` starts with the words of ``start`` (citation marks aside): a summary
    that a check cut to its first sentence ("... run `cargo new hello_cargo` in your
    projects directory. This command creates ..." then its first sentence alone)."""
    words, begun = normalize_answer(uncited(answer)).split(), normalize_answer(uncited(start)).split()
    return bool(begun) and words[: len(begun)] == begun


def stop_summary(final: FinalAnswer) -> str:
    """Why the loop stopped and what each iteration cost, e.g. "converged at iteration 2
    · per iteration: 3.1 s, 2.7 s"."""
    times = ", ".join(f"{trace.seconds:.1f} s" for trace in final.iterations) or "none"
    return f"{final.stop_reason.describe(final.stopped_at)} · per iteration: {times}"


def to_markdown(conversation: Conversation) -> str:
    lines = [f"# {_escape(conversation.title)}", "", f"Documents: `{conversation.folder}`", ""]
    for final in conversation.turns:
        lines += [f"## {_escape(final.question)}", "", answer_markdown(final), ""]
        lines += [f"_{stop_summary(final)}_", ""]
    return "\n".join(lines).rstrip() + "\n"


def export(conversation: Conversation, path: Path) -> Path:
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_markdown(conversation), "utf-8")
    return path


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)


def close_fences(markdown: str) -> str:
    """A draft cut off by the token limit can end inside a code block, which would
    swallow everything after it (the sources); close it."""
    opened = ""
    for match in _FENCE.finditer(markdown):
        fence = match.group(1)
        if not opened:
            opened = fence
        elif fence[0] == opened[0] and len(fence) >= len(opened):
            opened = ""
    return f"{markdown}\n{opened}" if opened else markdown


# Left as written, since each shows its text with any backslash in it: an inline code span,
# and a web address, which the chat's Markdown makes a link ("...strings.html\#indexing").
_AS_WRITTEN = re.compile(r"(`+)[^`]+?\1|https?://[^\s<>`]+")
# Old GNU docs quote `like this' (bash's NEWS, info manuals): code, closed by an apostrophe.
_GNU_QUOTE = re.compile(r"(?<!`)`([^`'\s][^`'\n]*)'(?![\w`])")


def _escape(text: str) -> str:
    """Keep user text from turning into Markdown structure (headings, emphasis); code
    spans ("`$ITERRETGEN_HOME`", "`--login'") and web addresses are left as they are;
    a backquote that opens none is shown as one, not left to pair with a later one."""
    text = _GNU_QUOTE.sub(r"`\1`", " ".join(text.split()))
    pieces, start = [], 0
    for span in _AS_WRITTEN.finditer(text):
        pieces += [_escape_plain(text[start : span.start()]), span.group()]
        start = span.end()
    return "".join([*pieces, _escape_plain(text[start:])])


def _escape_plain(text: str) -> str:
    # "<" too: a Markdown renderer drops what looks like a tag ("set to <keywords>, the ...").
    return text.replace("*", r"\*").replace("_", r"\_").replace("#", r"\#").replace("<", r"\<").replace("`", r"\`")
