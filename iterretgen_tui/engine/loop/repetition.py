"""The loop guard: a draft that repeats itself is stopped at once, and what came before
the repetition is kept.

Small models fall into loops under greedy decoding ("It is a window that is shared among
all the scripts." twenty times to the token limit). Such a draft costs the whole token
budget, buries whatever it said first, and, fed back as the next query, drags retrieval
towards itself. Three signs, checked on the text so far:

- a sentence said again (one of at least ``MIN_SENTENCE_WORDS`` words), or a short one
  said ``SHORT_REPEATS`` times;
- a run of ``NGRAM`` words that already occurred (loops without sentence ends, "the the
  the ...", or a cycle spanning sentences);
- a piece of a word said ``CHAR_REPEATS`` times in a row with no space between
  ("path.path.path.path..." from the 1.5B over Node.js docs): no sentence ends and no
  word recurs, so neither sign above sees it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MIN_SENTENCE_WORDS = 4
SHORT_REPEATS = 3
NGRAM = 10  # a chain of thought quotes passages, but never its own 10 words twice
CHAR_REPEATS = 6  # "haha" or "0000" occur in text; six copies of a piece in one word do not
_CYCLE = re.compile(rf"(.{{1,30}}?)\1{{{CHAR_REPEATS - 1},}}")
_LETTER = re.compile(r"[^\W\d_]")

_WORD = re.compile(r"\S+")
# A sentence ends at a stop that whitespace or the end follows ("config.toml" is no end),
# or at a line break.
_END = re.compile(r"[.!?]+(?=\s|$)|\n")
_NORMAL = re.compile(r"[^\w\s]")


def _normal(text: str) -> str:
    return " ".join(_NORMAL.sub(" ", text.lower()).split())


def loop_start(text: str) -> int | None:
    """The offset where ``text`` starts repeating itself; None when it does not."""
    signs = (_repeated_sentence(text), _repeated_ngram(text), _repeated_in_word(text))
    starts = [s for s in signs if s is not None]
    return min(starts, default=None)


def _sentences(text: str) -> Iterator[tuple[int, int]]:
    """The finished sentences' spans, each from the end of the one before. Linear in the
    text: the guard runs on every piece of a stream, and a draft without a sentence end
    (one long line) made a lazy sentence pattern rescan it from every position."""
    start = 0
    for end in _END.finditer(text):
        yield start, end.end()
        start = end.end()


def _repeated_sentence(text: str) -> int | None:
    seen: dict[str, int] = {}
    for start, end in _sentences(text):
        sentence = text[start:end]
        key = _normal(sentence)
        if not key:
            continue
        seen[key] = seen.get(key, 0) + 1
        if seen[key] >= (2 if len(key.split()) >= MIN_SENTENCE_WORDS else SHORT_REPEATS):
            return end - len(sentence.lstrip())
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


def _repeated_in_word(text: str) -> int | None:
    # Words under twelve characters are not searched (the check runs on every streamed
    # piece; a loop inside a word is caught a few copies later); a piece without a letter
    # ("----" under a heading, "0000") is no loop.
    for word in _WORD.finditer(text):
        if len(word.group()) < 2 * CHAR_REPEATS:
            continue
        for cycle in _CYCLE.finditer(word.group()):
            if _LETTER.search(cycle.group(1)):
                return word.start() + cycle.start()  # no copy is kept: none is a word
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
    ends = [end for _, end in _sentences(kept)]
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
