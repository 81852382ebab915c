"""Our 3-shot chain-of-thought demos in the paper's layout (factoid questions; five for
those that choose), our 2-shot cited-summary demos (open questions,
engine/loop/question_kind.py), prompt assembly within the model's window, and answer
extraction.

The messages are laid out so that everything before the final user turn (instruction
and demos) is identical across calls: llama.cpp then reuses that prefix's evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import IterRetGenError
from ..passages import Passage
from .question_kind import FACTOID, OPEN, chooses
from .sentences import AFTER_FULL_STOP, SENTENCE_GAP

INSTRUCTION = (
    "You answer questions using the knowledge given with each question. "
    'Think step by step, then finish with one sentence of the form "So the answer is X."'
)

# (knowledge [(title, context)], question, reasoning ending in "So the answer is X.")
DEMOS: tuple[tuple[tuple[tuple[str, str], ...], str, str], ...] = (
    (
        (
            (
                "Budapest",
                "Budapest is the capital and most populous city of Hungary. "
                "The city straddles the Danube, with Buda on the west bank and Pest on the east.",
            ),
            (
                "Lake Balaton",
                "Lake Balaton is a freshwater lake in Hungary and the largest "
                "lake in Central Europe, popular for summer holidays.",
            ),
        ),
        "Which river flows through the capital of Hungary?",
        "The capital of Hungary is Budapest. The city straddles the Danube. So the answer is the Danube.",
    ),
    (
        (
            (
                "Ada Lovelace",
                "Augusta Ada King, Countess of Lovelace (10 December 1815 - "
                "27 November 1852) was an English mathematician known for her notes on the "
                "Analytical Engine.",
            ),
            (
                "Charles Babbage",
                "Charles Babbage (26 December 1791 - 18 October 1871) was an "
                "English mathematician who designed the Analytical Engine.",
            ),
        ),
        "Who was born first, Ada Lovelace or Charles Babbage?",
        "Ada Lovelace was born on 10 December 1815. Charles Babbage was born on "
        "26 December 1791. 1791 is earlier than 1815. So the answer is Charles Babbage.",
    ),
    (
        (
            (
                "On the Origin of Species",
                "On the Origin of Species is a work of scientific "
                "literature by Charles Darwin, published on 24 November 1859.",
            ),
            (
                "Charles Darwin",
                "Charles Darwin studied at Christ's College, Cambridge, "
                "after leaving the University of Edinburgh medical school.",
            ),
            (
                "Christ's College, Cambridge",
                "Christ's College is a constituent college of "
                "the University of Cambridge. It was refounded under its present name in 1505.",
            ),
        ),
        "In what year did the Cambridge college attended by the author of On the Origin "
        "of Species take its present name?",
        "On the Origin of Species was written by Charles Darwin. Darwin studied at "
        "Christ's College, Cambridge. Christ's College was refounded under its present "
        "name in 1505. So the answer is 1505.",
    ),
)

# For a factoid question that chooses (question_kind.chooses): the comparison demo names
# what it compares, and two more follow, a comparison of another attribute and a yes/no
# question answered "no". With the three above, the 1.5B compared birth dates whatever was
# asked, said yes to every yes/no question whose answer is no, and often answered before
# it read; reasoning that opens with what the question asks keeps it from that. Other
# questions keep the three: on them the five measured no better (docs/evaluation.md,
# "Demos for questions that choose").
CHOICE_DEMOS: tuple[tuple[tuple[tuple[str, str], ...], str, str], ...] = (
    DEMOS[0],
    (DEMOS[1][0], DEMOS[1][1], "The question asks who was born first, so compare their birth dates. " + DEMOS[1][2]),
    DEMOS[2],
    (
        (
            (
                "Pierre Curie",
                "Pierre Curie (15 May 1859 - 19 April 1906) was a French physicist who "
                "shared the 1903 Nobel Prize in Physics.",
            ),
            (
                "Marie Curie",
                "Marie Curie (7 November 1867 - 4 July 1934) was a physicist and chemist "
                "who conducted pioneering research on radioactivity.",
            ),
        ),
        "Who lived longer, Pierre Curie or Marie Curie?",
        "The question asks who lived longer, so compare their lifespans. Pierre Curie "
        "lived from 1859 to 1906, 46 years. Marie Curie lived from 1867 to 1934, 66 years. "
        "66 is more than 46. So the answer is Marie Curie.",
    ),
    (
        (
            (
                "Rhine",
                "The Rhine rises in the Swiss Alps and flows through Germany and the Netherlands into the North Sea.",
            ),
            (
                "Danube",
                "The Danube flows through ten countries, more than any other river, and empties into the Black Sea.",
            ),
        ),
        "Are the Rhine and the Danube both rivers that flow into the Black Sea?",
        "The question asks whether both rivers flow into the Black Sea. The Danube "
        "flows into the Black Sea. The Rhine flows into the North Sea. So the answer is no.",
    ),
)


# What the chain-of-thought demos are about. A 1.5B left without an answer in its passages
# may borrow one ("The author of On the Origin of Species should be asked ...", of a note
# that names who to ask; "Hubble ... studied at Christ's College, Cambridge"). The open
# demos' titles are common words ("Snapshots"), no subject of their own.
DEMO_SUBJECTS = frozenset(
    title for demos in (DEMOS, CHOICE_DEMOS) for knowledge, _, _ in demos for title, _ in knowledge
)


OPEN_INSTRUCTION = (
    "You answer questions using the numbered knowledge given with each question. "
    "Reply with a short answer of two or three sentences, each citing the passage it "
    "comes from as [n]. Do not repeat yourself."
)

# (knowledge [(title, context)], question, answer of a few sentences citing [n])
OPEN_DEMOS: tuple[tuple[tuple[tuple[str, str], ...], str, str], ...] = (
    (
        (
            (
                "Snapshots",
                "The backup tool keeps one snapshot per night. A snapshot stores "
                "only the blocks that changed since the previous one, and points to the rest.",
            ),
            (
                "Retention",
                "Snapshots older than 30 days are pruned every Sunday, except the "
                "first snapshot of each month, which is kept for a year.",
            ),
        ),
        "How does the backup tool keep its snapshots small?",
        "Each nightly snapshot stores only the blocks that changed since the previous "
        "snapshot and points to the unchanged ones [1]. Old snapshots are pruned after "
        "30 days, apart from one per month kept for a year [2].",
    ),
    (
        (
            (
                "Meeting notes, 4 March",
                "We decided to move the release to April so the "
                "translation team can finish. Mira owns the release checklist.",
            ),
            ("Release process", "A release needs a signed tag and green nightly builds for three days in a row."),
        ),
        "What did we decide about the release?",
        "The release moves to April so the translation team can finish, and Mira owns "
        "its checklist [1]. It still needs a signed tag and three days of green nightly "
        "builds [2].",
    ),
)


class QuestionTooLong(IterRetGenError, ValueError):
    """The question alone does not fit in the model's context window."""


def knowledge_line(title: str, text: str, n: int | None = None) -> str:
    """One passage; open prompts number them, [n], for the answer to cite."""
    number = f"[{n}] " if n is not None else ""
    return f"{number}Title: {title} Context: {' '.join(text.split())}"


EARLIER_LABEL = "Earlier in this conversation:"
KNOWLEDGE_LABEL = "Knowledge:"
QUESTION_LABEL = "Question:"
# A line of the question's turn's own layout, which a draft that copies its passages on
# may run into: it has then begun a prompt of its own.
_TURN_LINE = re.compile(rf"(?<=\n)(?:{KNOWLEDGE_LABEL}|{EARLIER_LABEL}|{QUESTION_LABEL})")


def user_turn(knowledge: Sequence[str], question: str, kind: str = FACTOID, earlier: str = "") -> str:
    """The question's turn; ``earlier``: the conversation before it, where it has one."""
    lines = "\n".join(knowledge)
    ask = "Answer in two or three sentences, citing [n]." if kind == OPEN else "Let's think step by step."
    return f"{turn_start(earlier)}\n{lines}\n\n{QUESTION_LABEL} {question}\n{ask}"


def turn_start(earlier: str = "") -> str:
    """What the question's turn says before its passages: the same for every follow-up
    after the same turns, so it can be evaluated before the question comes."""
    before = f"{EARLIER_LABEL}\n{earlier}\n\n" if earlier else ""
    return f"{before}{KNOWLEDGE_LABEL}"


def turn_echo(draft: str) -> int | None:
    """Where ``draft`` starts writing a question's turn ("Knowledge:", "Question: ..." on a
    line of their own); None where it does not."""
    match = _TURN_LINE.search(draft)
    return match.start() if match else None


def demo_messages(kind: str = FACTOID, *, choice: bool = False) -> list[dict[str, str]]:
    if kind == OPEN:
        instruction, demos = OPEN_INSTRUCTION, OPEN_DEMOS
    else:
        instruction, demos = INSTRUCTION, CHOICE_DEMOS if choice else DEMOS
    messages = [{"role": "system", "content": instruction}]
    for knowledge, question, reasoning in demos:
        lines = [_line(title, text, n, kind) for n, (title, text) in enumerate(knowledge, 1)]
        messages.append({"role": "user", "content": user_turn(lines, question, kind)})
        messages.append({"role": "assistant", "content": reasoning})
    return messages


def every_demo_prefix() -> list[list[dict[str, str]]]:
    """Every instruction-and-demos prefix a prompt can start with, in the order their
    states are made (the rarest, a question that chooses, last)."""
    return [demo_messages(FACTOID), demo_messages(OPEN), demo_messages(FACTOID, choice=True)]


def _line(title: str, text: str, n: int, kind: str) -> str:
    return knowledge_line(title, text, n if kind == OPEN else None)


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    passages: tuple[Passage, ...]  # the passages given to the model, in prompt order
    tokens: int
    dropped: int  # passages left out entirely
    truncated: int  # passages shortened to fit
    # What the model read of each given passage; a later iteration reads a kept one the same
    # way, so llama.cpp reuses the evaluation of the prompt's start (compression.py).
    texts: tuple[str, ...]


def build_prompt(
    question: str,
    passages: Sequence[Passage],
    *,
    count_tokens: Callable[[str], int],
    budget: int,
    per_message: int = 8,
    kind: str = FACTOID,
    earlier: str = "",
    texts: Sequence[str] | None = None,
) -> Prompt:
    """Demos, then the passages in rank order while they fit ``budget`` tokens; the last
    one that only partly fits is cut at a word boundary. Demos are dropped (last first)
    before the question's own passages would all be lost. ``earlier``: the conversation
    before the question, shown above the passages; ``texts``: what the model reads of
    each passage (engine/loop/compression.py), where not the whole of it."""
    demos = demo_messages(kind, choice=chooses(question))  # an open question keeps its own demos
    question_turn = user_turn([], question, kind, earlier)
    fixed = sum(count_tokens(m["content"]) + per_message for m in demos)
    own = count_tokens(question_turn) + per_message
    if count_tokens(demos[0]["content"]) + per_message + own > budget:
        raise QuestionTooLong(f"the question is too long for the model's context window ({budget} tokens)")
    min_room = 64  # tokens kept free for at least one useful passage
    while fixed + own + min_room > budget and len(demos) > 1:
        demos = demos[:-2]
        fixed = sum(count_tokens(m["content"]) + per_message for m in demos)
    room = budget - fixed - own
    kept: list[Passage] = []
    read: list[str] = []
    lines: list[str] = []
    truncated = 0
    for passage, text in zip(passages, texts or [p.text for p in passages]):
        line = _line(passage.title, text, len(kept) + 1, kind)
        cost = count_tokens(line) + 1
        fits = cost <= room
        if not fits:  # the last passage, cut to what room is left
            cut = room >= 32 and _cut_to_fit(
                passage.title, text, room - 1, count_tokens, _line_maker(len(kept) + 1, kind)
            )
            if not cut:
                break
            text = cut
            line = _line(passage.title, text, len(kept) + 1, kind)
            truncated += 1
        kept.append(passage)
        read.append(text)
        lines.append(line)
        if not fits:
            break
        room -= cost
    content = user_turn(lines, question, kind, earlier)
    messages = demos + [{"role": "user", "content": content}]
    tokens = fixed + count_tokens(content) + per_message
    return Prompt(messages, tuple(kept), tokens, len(passages) - len(kept), truncated, tuple(read))


def _line_maker(n: int, kind: str) -> Callable[[str, str], str]:
    return lambda title, text: _line(title, text, n, kind)


def _cut_to_fit(
    title: str, text: str, room: int, count_tokens: Callable[[str], int], line: Callable[[str, str], str]
) -> str:
    """The longest word prefix of ``text``, marked cut, whose line fits ``room``; "" if none."""
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(line(title, " ".join(words[:mid]) + " ...")) <= room:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + " ..." if lo else ""


# "So the answer is X." as the demos end; small models also open a line with
# "The answer is:" or "Answer:".
_ANSWER = re.compile(
    r"(?:\bso the (?:final )?answer is|^\W*the (?:final )?answer is|^\W*answer\s*:)\s*:?\s*",
    re.IGNORECASE | re.MULTILINE,
)
# The answer ends with its sentence or line.
_SENTENCE_END = re.compile(rf"{AFTER_FULL_STOP}(?:\s|$)")
_SENTENCE_GAP = re.compile(SENTENCE_GAP)


def _last_marker(output: str) -> re.Match | None:
    """The last answer marker ("So the answer is", "Answer:"); None when there is none."""
    matches = list(_ANSWER.finditer(output))
    return matches[-1] if matches else None


def _answer_start(output: str) -> int | None:
    """Where the text after the last answer marker starts; None when there is none."""
    marker = _last_marker(output)
    return marker.end() if marker else None


def _answer_text(output: str) -> str | None:
    """What follows the last "(So) the answer is", up to the end of its line or sentence;
    a bare "The answer is:" takes the next non-empty line."""
    start = _answer_start(output)
    if start is None:
        return None
    lines = [line for line in output[start:].split("\n") if line.strip()]
    return _SENTENCE_END.split(lines[0])[0] if lines else ""


def extract_answer(output: str) -> str:
    """The X of the last "So the answer is X."; else the output's last sentence."""
    answer = _answer_text(output)
    if answer is None:
        sentences = [s for s in _SENTENCE_GAP.split(output.strip()) if s.strip()]
        answer = sentences[-1] if sentences else ""
    return _clean(answer)


def stated_answer(output: str, kind: str = FACTOID) -> str:
    """The answer the output states, or "" when it states none: a factoid's X of "So the
    answer is X."; an open question's whole reply (its "Answer:" label dropped)."""
    if kind == OPEN:
        reply = output.strip()
        label = _ANSWER.match(reply)
        return reply[label.end() :].strip() if label else reply
    answer = _answer_text(output)
    return _clean(answer) if answer is not None else ""


def reasoning(output: str) -> str:
    """A factoid draft without the sentence that states its answer at its end ("So the
    answer is X."), which the chat shows as the headline; the draft as it is where no
    such sentence ends it."""
    marker = _last_marker(output)
    stated = output[marker.end() :].strip() if marker else ""
    if "\n" in stated or len([part for part in _SENTENCE_END.split(stated) if part.strip()]) != 1:
        return output
    return output[: marker.start()].rstrip()


def _clean(answer: str) -> str:
    # The stop may sit outside the quotes ("`/`.") or inside them ("**U.S.A.**").
    raw = answer.strip().rstrip(".").strip()
    text = raw.strip("*\"'` ").rstrip(".").strip()
    if not text:  # the answer is punctuation, quotes included: "`'.'`" (the current directory)
        return raw.strip("*` ")
    # A quote stripped from an end that closes or opens one inside the answer is part of
    # it: ocr = "off" (apostrophes are left alone: Macy's has one of its own).
    start = raw.find(text)
    head, tail = raw[:start], raw[start + len(text) :]
    if any(quote in head and quote in tail and quote in text for quote in "\"'`"):
        return raw.strip("* ")  # "`'jwk'` and `'raw'`": its ends open and close quotes inside it
    for quote in '"`':
        if text.count(quote) % 2 == 0:
            continue
        if quote in tail:
            text += quote
        elif quote in head:
            text = quote + text
    return text


_CLOSING = ")]}\"'`*”’"  # a mark a sentence's full stop may follow


def answer_end(output: str, kind: str = FACTOID) -> int | None:
    """Where the stated answer's sentence or line ends in ``output``, once it is there in
    full: generation can stop there (small models otherwise ramble or repeat themselves up
    to the token limit), and the draft ends there. None before that, and always for an
    open question, whose answer is the whole reply. A stop after a digit or a symbol at the
    end of the text so far waits for the next token: it may be a decimal point ("4." of
    "4.23", which once stopped the answer at "4") or a path's ("~/." of "~/.vimrc"), and
    so does one inside a `code span`."""
    if kind == OPEN:
        return None
    start = _answer_start(output)
    if start is None:
        return None
    rest = output[start:]
    stated = rest.lstrip()
    start += len(rest) - len(stated)
    line, newline, _ = stated.partition("\n")
    if not line.strip():
        return None
    stop = _SENTENCE_END.search(line)  # stop.start(): just after the full stop
    # At the end of the text so far, a stop may go on: one after anything but a letter or a
    # closing mark (a decimal point after a digit; "~/." of "~/.vimrc", once cut to "~/"),
    # or inside a code span ("`~/." of "`~/.npm`"). A backtick never closed cannot hold
    # back a stop that a space follows.
    before = line[stop.start() - 2] if stop else ""
    goes_on = (
        stop and stop.start() == len(line) and (not (before.isalpha() or before in _CLOSING) or line.count("`") % 2)
    )
    if stop and not goes_on:
        return start + stop.start()
    return start + len(line) if newline else None
