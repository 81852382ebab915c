"""Where a sentence ends, one rule for the answer a draft states and the evidence taken
from passages: a stop after an initial ("J. M. Barrie", "U.S.A.") or a title or case
abbreviation ("Craig v. Boren", "St. Louis") or a Latin one ("the builder (i.e. whatever
runs it)", "as in C code, i. e. starting with 0x": a lone small letter) ends nothing, which
once cut both short; a stop after an acronym ("NASA.") does."""

from __future__ import annotations

ABBREVIATIONS = ("v", "vs", "St", "Mt", "Ft", "Dr", "Mr", "Mrs", "Ms", "Jr", "Sr", "Prof", "Gen", "Lt", "Col")
# Written inside sentences; a stop after "etc." often ends one, so it is not here.
LATIN = (r"i\.e", r"I\.e", r"e\.g", r"E\.g", "cf", "Cf", "viz")

# The position just after a full stop that ends a sentence (not an ellipsis either; an
# initial, or a lone small letter, is a letter after a space, a stop or an opening bracket
# or quote, '("J. M. Barrie"', "i. e.", so "Ctrl+Q." ends one).
AFTER_FULL_STOP = r"(?<=[^\s.]\.)(?<![\s.(\[\"'“‘][A-Za-z]\.)(?<!^[A-Z]\.)" + "".join(
    rf"(?<!\b{a}\.)" for a in (*ABBREVIATIONS, *LATIN)
)
# The whitespace between two sentences.
SENTENCE_GAP = rf"(?:{AFTER_FULL_STOP}|(?<=[!?]))\s+"
