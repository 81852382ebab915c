"""A persistent memo of greedy generations, for evaluation.

Greedy decoding makes a generation a function of (model, prompt, max_tokens), and an eval
repeats prompts a lot: iteration 1 of a ``--draft-source gold`` run is iteration 1 of the
model run, a gold draft forms the same query at t=2 and t=3, and a draft query often
retrieves the very passages of the previous iteration. Replaying those from SQLite cut
the full-set model runs by 12-22% and the gold-draft runs by about 80% on a CPU. Each hit reports the seconds the original
generation took, so the eval's costs stay those of a run without the memo.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Generator as Stream
from collections.abc import Sequence
from pathlib import Path

from ..loop.generator import Generator, Message


class CachedGenerator:
    """Wraps a greedy Generator. ``replayed`` lists, per ``stream`` call, the seconds a
    replayed generation originally took, or None for a fresh one; the caller clears it."""

    def __init__(self, inner: Generator, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.identity = inner.identity
        self.n_ctx = inner.n_ctx
        self.passage_order = inner.passage_order
        self.replayed: list[float | None] = []
        self._db = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")  # two evals may share the memo
        self._db.execute("CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, text TEXT, seconds REAL)")
        # ended: 1 when the model itself stopped (end of text, token limit); 0 when the
        # reader stopped reading, so a reader that wants more gets it generated.
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(generations)")}
        if "ended" not in columns:
            self._db.execute("ALTER TABLE generations ADD COLUMN ended INTEGER NOT NULL DEFAULT 0")
        self._db.commit()
        if hasattr(inner, "yes_probability"):  # only a reader that gives one has it (loop/grounding.py)
            self.yes_probability = self._yes_probability

    def _yes_probability(self, messages: Sequence[Message]) -> float:
        """The inner reader's probability of yes, kept like a generation."""
        key = "yes:" + self._key(messages, 1)
        row = self._db.execute("SELECT text FROM generations WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return float(row[0])
        probability = self.inner.yes_probability(messages)
        self._db.execute("INSERT OR REPLACE INTO generations VALUES (?, ?, 0, 1)", (key, repr(probability)))
        self._db.commit()
        return probability

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def _key(self, messages: Sequence[Message], max_tokens: int) -> str:
        blob = json.dumps([self.identity, self.n_ctx, max_tokens, list(messages)], sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int, cancel: threading.Event
    ) -> Stream[str, None, None]:
        key = self._key(messages, max_tokens)
        row = self._db.execute("SELECT text, seconds, ended FROM generations WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.replayed.append(None)
            yield from self._generate(key, messages, max_tokens, cancel)
            return
        recorded, seconds, ended = row
        self.replayed.append(seconds)
        if recorded:
            yield recorded
        if ended:
            return
        # The reader wants more than an earlier reader took (its stopping rule changed):
        # generate afresh and go on after what it has already read.
        self.replayed[-1] = None
        if not (yield from self._generate(key, messages, max_tokens, cancel, replayed=recorded)):
            self.replayed[-1] = seconds  # it got the replay alone, as before

    def _generate(
        self, key: str, messages: Sequence[Message], max_tokens: int, cancel: threading.Event, *, replayed: str = ""
    ) -> Stream[str, None, bool]:
        """A fresh generation, streamed and kept; after a replay, only what follows it.
        False when the model now writes something else than the replay (llama.cpp is not
        bit-exact across prompt-cache states): the stream then ends where the replay did."""
        text = ""
        started = time.perf_counter()
        stored = False  # whether what was read is a generation worth keeping
        ended = False
        inner = self.inner.stream(messages, max_tokens=max_tokens, cancel=cancel)
        try:
            for piece in inner:
                sent = max(len(text), len(replayed))
                text += piece
                if len(text) < len(replayed):
                    continue
                if not text.startswith(replayed):
                    return False
                if len(text) > sent:
                    yield text[sent:]
            stored = ended = not cancel.is_set()
        except GeneratorExit:
            # The consumer stopped reading (the answer was complete): what it read is the
            # generation; a cancelled one is not.
            stored = not cancel.is_set()
            raise
        finally:
            inner.close()  # stops decoding at once, as the loop's own close would
            if stored:
                self._db.execute(
                    "INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?)",
                    (key, text, time.perf_counter() - started, int(ended)),
                )
                self._db.commit()
        return True
