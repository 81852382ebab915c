"""The loop guard: a draft that repeats itself is stopped at once, and what came before
the repetition is kept.

Small models fall into loops under greedy decoding ("It is a window that is shared among
all the scripts." twenty times to the token limit). Such a draft costs the whole token
budget, buries whatever it said first, and, fed back as the next query, drags retrieval
towards itself. Two signs, checked on the text so far:

- a sentence said again (one of at least ``MIN_SENTENCE_WORDS`` words), or a short one
  said ``SHORT_REPEATS`` times;
- a run of ``NGRAM`` words that already occurred (loops without sentence ends, "the the
  the ...", or a cycle spanning sentences).
"""

from __future__ import annotations

import re

MIN_SENTENCE_WORDS = 4
SHORT_REPEATS = 3
NGRAM = 10  # a chain of thought quotes passages, but never its own 10 words twice

_WORD = re.compile(r"\S+")
# Finished sentences: up to a stop that whitespace or the end follows ("config.toml" is
# no end), or a line break.
_SENTENCE = re.compile(r"[^\n]*?(?:[.!?]+(?=\s|$)|\n)")
_NORMAL = re.compile(r"[^\w\s]")


def _normal(text: str) -> str:
    return " ".join(_NORMAL.sub(" ", text.lower()).split())


def loop_start(text: str) -> int | None:
    """The offset where ``text`` starts repeating itself; None when it does not."""
    starts = [s for s in (_repeated_sentence(text), _repeated_ngram(text)) if s is not None]
    return min(starts, default=None)


def _repeated_sentence(text: str) -> int | None:
    seen: dict[str, int] = {}
    for match in _SENTENCE.finditer(text):
        key = _normal(match.group())
        if not key:
            continue
        seen[key] = seen.get(key, 0) + 1
        if seen[key] >= (2 if len(key.split()) >= MIN_SENTENCE_WORDS else SHORT_REPEATS):
            return match.start() + len(match.group()) - len(match.group().lstrip())
    return None


def _repeated_ngram(text: str) -> int | None:
    # Words that are only punctuation ("|", "---" of a table) are no evidence of a loop.
    words = [(m.start(), w) for m in _WORD.finditer(text) if (w := _normal(m.group()))]
    grams: set[tuple[str, ...]] = set()
    for i in range(len(words) - NGRAM + 1):
        gram = tuple(w for _, w in words[i : i + NGRAM])
        if gram in grams:
            return words[i][0]  # the second copy starts here; the first one is kept
        grams.add(gram)
    return None


# A phrase of up to four words said three times in a row: too short for the signs above,
# it is how a few-word reply loops ("The answer is: The answer is: The answer is:").
_STUTTER = re.compile(r"\b(\w+(?: \w+){0,3}) \1 \1\b")


def stutters(text: str) -> bool:
    return _STUTTER.search(_normal(text)) is not None


def trim_loop(text: str) -> str:
    """``text`` without its repetition (all of it when it does not repeat); a sentence
    the repetition broke off is dropped when a whole one comes before it."""
    start = loop_start(text)
    if start is None:
        return text
    kept = text[:start].rstrip()
    ends = [m.end() for m in _SENTENCE.finditer(kept)]
    return kept[: ends[-1]].rstrip() if ends and ends[-1] < len(kept) else kept


class LoopGuard:
    """Fed a draft piece by piece while it streams; says when it started looping."""

    def __init__(self) -> None:
        self.text = ""
        self.looped = False

    def feed(self, piece: str) -> bool:
        """True once the draft repeats itself: stop generating."""
        self.text += piece
        self.looped = loop_start(self.text) is not None
        return self.looped

    @property
    def kept(self) -> str:
        """The draft before its repetition."""
        return trim_loop(self.text)
