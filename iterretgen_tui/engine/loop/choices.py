"""A question that names its two options ("Which film has the director who died first,
A or B?") is answered with one of them. The reader often reasons through the options to
what it compares and answers with that instead ("Carl Boese", the director), although
its draft says which option it stands for ("B was directed by Carl Boese."): the answer
is traced back to that option. An answer that names neither option cannot be right, so
this never turns a right answer wrong (docs/evaluation.md, "Answers traced back to the
option they stand for").
"""

from __future__ import annotations

import re

from .answers import content_words, mentions
from .sentences import SENTENCE_GAP

# "..., A or B?": the options follow a comma and split at the last "or". Titles may hold
# commas and question marks ("Harvest: 3,000 Years", "What Will You Do When You Catch
# Me?"), so A is read as every tail of its comma-separated parts.
_OPTIONS = re.compile(r",\s*(?P<a>.+)\s+or\s+(?P<b>.+?)\s*\?*\s*$", re.IGNORECASE)
_SENTENCE = re.compile(SENTENCE_GAP)


def named_options(question: str) -> tuple[tuple[str, ...], str] | None:
    """The readings of option A (every tail of its comma-separated words) and option B,
    or None when the question does not end "..., A or B?"."""
    found = _OPTIONS.search(question)
    if found is None:
        return None
    parts = found["a"].split(", ")
    readings = tuple(", ".join(parts[k:]) for k in range(len(parts)))
    return readings, found["b"]


def option_answered(question: str, draft: str, answer: str) -> str:
    """``answer``, or the option it stands for: the option named alone in the draft's
    last sentence that also names the answer. Unchanged when the question names no
    options, the answer names one, or no sentence ties it to exactly one."""
    options = named_options(question)
    if options is None or not content_words(answer):
        return answer
    readings, b = options
    if any(mentions(answer, option) or mentions(option, answer) for option in (*readings, b)):
        return answer
    for sentence in reversed(_SENTENCE.split(draft)):
        if not mentions(sentence, answer):
            continue
        named_a = [reading for reading in readings if mentions(sentence, reading)]
        named_b = mentions(sentence, b)
        if named_a and not named_b:
            return max(named_a, key=len)  # the fullest reading the draft wrote
        if named_b and not named_a:
            return b
    return answer
