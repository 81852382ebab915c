"""Asking for the answer a draft did not state.

Small models often reason without ever writing "So the answer is X.", or loop before they
get there; the answer is then a guess from the draft's last sentence. One short follow-up
turn in the same conversation ("what is the answer, in a few words?") makes them state
one. llama.cpp reuses the evaluated prompt and draft as the prefix, so the follow-up costs
only its own few tokens. When the reply states nothing either (SmolLM2 reads our question
back, or loops), the model's own reply is made to go on from its draft and "So the answer
is", the words every demo ends with; what it writes next is the answer (docs/answers.md).
An answer the demos hold and this question's turn and draft do not was copied from a
demo, not read: it is no answer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from .answers import content_words
from .drafting import short_reply
from .generator import Generator, Message
from .prompts import answer_end, extract_answer, stated_answer
from .repetition import stutters
from .sentences import SENTENCE_GAP

QUESTION = "What is the answer, in a few words? Reply with the answer only."
LEAD = "So the answer is"  # the demos' own last words, for the draft to go on from
MAX_TOKENS = 64  # a reply ends where its answer does; 24 cut the 1.5B's one-sentence answers
_QUESTION_WORDS = content_words(QUESTION)
_GAP = re.compile(SENTENCE_GAP)
_FINISHED = re.compile(r"[.!?][\"'\u201d)\]]*$")  # a full stop, then any closing quotes or brackets
_LEAD = re.compile(r"^\W*(?:so\s+)?(?:the\s+)?(?:final\s+)?answer\b(?:\s+is)?\s*:?\s*", re.IGNORECASE)


def follow_up_messages(messages: Sequence[Message], draft: str) -> list[Message]:
    return [*messages, {"role": "assistant", "content": draft}, {"role": "user", "content": QUESTION}]


def ask_for_answer(generator: Generator, messages: Sequence[Message], draft: str, cancel: threading.Event) -> str:
    """The answer the model states when asked outright, or else when its draft is made to
    go on with "So the answer is"; "" when it states none either way."""
    answer = ask_outright(generator, messages, draft, cancel)
    if (answer and not copied(answer, messages, draft)) or cancel.is_set():
        return answer
    answer = go_on_to_answer(generator, messages, draft, cancel)
    return "" if copied(answer, messages, draft) else answer


def copied(answer: str, messages: Sequence[Message], draft: str) -> bool:
    """Every word of ``answer`` is in the instruction and demos, and none in the last
    turn (the passages and the question) or the draft: the 1.5B, asked for the answer
    to "What should users of the deprecated punycode module switch to?" after a draft
    that named Punycode.js, replied "Charles Babbage", a demo's answer."""
    words = content_words(answer)
    if not words or not messages:
        return False
    demos, turn = demo_and_turn_words(messages)
    return words <= demos and not words & (turn | content_words(draft))


def demo_and_turn_words(messages: Sequence[Message]) -> tuple[set[str], set[str]]:
    """The content words of the instruction and demos (every message before the last),
    and of this turn (the last: its passages and question)."""
    demos = content_words(" ".join(message["content"] for message in messages[:-1]))
    return demos, content_words(messages[-1]["content"])


def go_on_to_answer(generator: Generator, messages: Sequence[Message], draft: str, cancel: threading.Event) -> str:
    """The answer the model writes after its own draft and "So the answer is". A last
    sentence the draft left unfinished is left out: the loop guard cuts "... in Shrek 2
    is" where it began again, and going on from there only loops again (docs/answers.md)."""
    begun = f"{finished(draft)} {LEAD}".lstrip()
    going_on = [*messages, {"role": "assistant", "content": begun}]
    reply = short_reply(generator, going_on, MAX_TOKENS, cancel, lambda text: answer_end(begun + text) is not None)
    return "" if stutters(reply) else stated_answer(begun + reply)


def finished(draft: str) -> str:
    """The draft up to the end of its last finished sentence."""
    text = draft.rstrip()
    if _FINISHED.search(text):
        return text
    gaps = list(_GAP.finditer(text))
    return text[: gaps[-1].start()] if gaps else ""


def ask_outright(generator: Generator, messages: Sequence[Message], draft: str, cancel: threading.Event) -> str:
    """The answer the model states in a follow-up turn; "" when it states none."""
    turn = follow_up_messages(messages, draft)
    reply = short_reply(generator, turn, MAX_TOKENS, cancel, lambda text: answer_line(text)[1])
    line = answer_line(reply)[0]
    if not line or stutters(reply) or echoes_question(line):  # a loop or our own words state nothing
        return ""
    return extract_answer(line)


def echoes_question(line: str) -> bool:
    """The reply only repeats the follow-up's own words ("Reply with the answer only.",
    seen with SmolLM2); an answer of no content words ("yes") is not such an echo."""
    words = content_words(line)
    return bool(words) and words <= _QUESTION_WORDS


def answer_line(reply: str) -> tuple[str, bool]:
    """The reply's first line past an "The answer is:" label, which small models often
    put on a line of its own with the answer below; and whether that line is finished."""
    line, newline, _ = _LEAD.sub("", reply.lstrip(), count=1).partition("\n")
    return line.strip(), bool(newline and line.strip())
