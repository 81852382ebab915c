"""A question read with the conversation it is asked in.

What is asked is one value (``Asked``): the question as typed, the turns before it, and
the standalone question the reader writes from both ("How do I remove it?" after
"Which package manager ships with Node.js?" -> "How do I remove npm?"). Retrieval
and the paper's y(t-1) || q use the standalone question; the reader also sees the last
turns within a token budget. A question with no turns before it is not rewritten and
costs nothing; one the reader finds already standing alone (a change of topic) comes
back unchanged and is read alone.

The rewrite is few-shot and greedy, laid out like the drafts: a fixed instruction and
demos (a registered prefix, evaluated once: engine/loop/prefix_states.py), then one user
turn with the conversation. A small reader leaves many follow-ups as they were typed, so
the first search also searches the question after the user's previous turn
(``context_search``), and the loop takes the two rankings in turn: on MTRAG conversations
that beats both the rewrite alone and the two turns glued (docs/conversations.md).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .answers import NAMED_OPTION, OPTION_WORD, content_words
from .drafting import short_reply
from .events import FinalAnswer
from .generator import Generator, Message
from .repetition import stutters
from .trust import restates

TURNS_READ = 2  # earlier turns the rewrite sees: the referent is almost always in the last two
ANSWER_WORDS = 40  # of each earlier answer: its opening states what it is about
REWRITE_TOKENS = 48  # a question is one line; a reply that runs on is no question
# How much longer than the question a rewrite may be, besides the words of the question
# before it, which it may take in whole ("What is its default?" for "the setting that
# controls how many requests the s3 commands run at once"): a reply that answers instead
# of rewriting is far longer.
MAX_GROWTH = 3.0

# Words that stand for something said before ("How do I reset it?", "that timer", "the
# second one"). One that does not ("true that prices rise") only shows the turns to the draft.
POINTERS = frozenset(
    {"it", "its", "they", "them", "their", "he", "him", "his", "she", "her", "this", "that", "these", "those"}
    | {"one", "ones", "there"}
)
# A start that goes on from the last question, or corrects it ("I meant the purchase loan").
ELLIPSES = frozenset({"and", "what about", "how about", "i mean", "i meant"})


@dataclass(frozen=True)
class Turn:
    """One earlier exchange: what the user asked, and what was answered."""

    question: str
    answer: str


@dataclass(frozen=True)
class Asked:
    question: str  # as typed
    turns: tuple[Turn, ...] = ()  # the turns before it, oldest first
    standalone: str = ""  # the question rewritten to stand alone; "" when it needs no context
    # The standalone question holds all the question took from the turns (option_resolved):
    # the draft reads it without them, which it would copy.
    alone: bool = False

    @property
    def searched(self) -> str:
        """What retrieval and the reader take as the question."""
        return self.standalone or self.question


def turn_of(final: FinalAnswer) -> Turn:
    """An answered question as an earlier turn: its stated answer (an open question's
    whole reply; the draft where the answer only restates the question, as the chat
    shows it: "What does console.time do?" -> "console.time()") or the question asked
    back, or nothing where none was stated."""
    stated = bool(final.iterations) and final.iterations[-1].stated
    if not stated:
        return Turn(final.question, final.asked_back)
    return Turn(final.question, final.draft if restates(final) else final.answer)


def turns_of(finals: Sequence[FinalAnswer]) -> tuple[Turn, ...]:
    return tuple(turn_of(final) for final in finals)


REWRITE_INSTRUCTION = (
    "Rewrite the user's last question so that a reader who has not seen the conversation understands it. "
    "Words like it, they, them, this, that, these, there, he, she, the same or the second one point back to "
    "something named earlier in the conversation: write that name instead. A question that leaves out its "
    "subject takes the subject from the conversation. A question that is already complete, or that asks "
    "about something new, is repeated as it is. Reply with the rewritten question only."
)

# (earlier turns as (question, answer), last question, the rewrite); no demo shares a
# topic with the evaluation sets.
REWRITE_DEMOS: tuple[tuple[tuple[tuple[str, str], ...], str, str], ...] = (
    (
        (("Who designed the Analytical Engine?", "Charles Babbage designed the Analytical Engine."),),
        "When was he born?",
        "When was Charles Babbage born?",
    ),
    (
        (
            (
                "What is the location of the city library?",
                "The city library is at 12 Main Street, next to the town hall.",
            ),
        ),
        "Do they offer online services?",
        "Does the city library offer online services?",
    ),
    (
        (
            ("How often does the backup tool take a snapshot?", "It takes one snapshot every night."),
            ("Where are the snapshots stored?", "On the backup disk, in the folder named snapshots."),
        ),
        "How long are they kept there?",
        "How long are the backup tool's snapshots kept on the backup disk?",
    ),
    (
        (("Is the city museum open on Mondays?", "No, the city museum is closed on Mondays."),),
        "And on Sundays?",
        "Is the city museum open on Sundays?",
    ),
    (
        (("I want to renew my passport. What do I need?", "Your old passport, a recent photo and the renewal form."),),
        "Anything special for a child?",
        "Anything special I need to renew a passport for a child?",
    ),
    (
        (("What documents do I need to renew my passport?", "Your old passport and a recent photo."),),
        "By the way, what is the capital of Hungary?",
        "What is the capital of Hungary?",
    ),
    (
        (("Which plans does the gym offer?", "A monthly plan and a yearly plan."),),
        "What does the second one cost?",
        "What does the gym's yearly plan cost?",
    ),
)


def conversation_text(turns: Sequence[Turn], answer_words: int = ANSWER_WORDS) -> str:
    """The turns as the prompts show them, each answer cut to its first words."""
    lines = []
    for turn in turns:
        words = turn.answer.split()
        answer = " ".join(words[:answer_words]) + (" ..." if len(words) > answer_words else "")
        lines += [f"User: {' '.join(turn.question.split())}", f"Assistant: {answer}"]
    return "\n".join(lines)


def rewrite_turn(turns: Sequence[Turn], question: str) -> str:
    return f"Conversation:\n{conversation_text(turns)}\n\nLast question: {' '.join(question.split())}"


def rewrite_prefix() -> list[Message]:
    """The rewrite's instruction and demos: the same for every conversation."""
    messages: list[Message] = [{"role": "system", "content": REWRITE_INSTRUCTION}]
    for turns, question, rewrite in REWRITE_DEMOS:
        messages.append({"role": "user", "content": rewrite_turn([Turn(*t) for t in turns], question)})
        messages.append({"role": "assistant", "content": rewrite})
    return messages


def rewrite_messages(turns: Sequence[Turn], question: str) -> list[Message]:
    return [*rewrite_prefix(), {"role": "user", "content": rewrite_turn(turns[-TURNS_READ:], question)}]


def next_rewrite(turns: Sequence[Turn]) -> list[Message]:
    """The rewrite's messages for the question that will follow ``turns``, up to that
    question: all of its prompt that can be evaluated before the question is asked
    (``Generator.prefill``; the chat does it while the user reads the answer)."""
    return rewrite_messages(turns, "")


_LABEL = re.compile(r"^\W*(?:rewritten|standalone|last)?\s*question\s*:\s*", re.IGNORECASE)
# Words that tie a question to the talk before it, which a question standing alone has no
# use for: "By the way, what exit code does the AWS CLI return ...?" was shown as read, and
# the answer began "By the way, the AWS CLI returns ...". A leading "And" stays: without
# it, a follow-up pair's rewrite was answered worse (docs/conversations.md).
_TIE = re.compile(r"^(?:by the way|btw|also|oh|ok|okay|well),\s*(?=\w)", re.IGNORECASE)
# Words that open a question on another subject. Rewritten with the turns, such a question
# took a name from them: "By the way, how much does a licence cost per month?" came back
# with the name of the key the talk before it was about written into it.
_NEW_TOPIC = re.compile(
    r"^\W*(?:by the way|btw|incidentally|unrelated(?:ly)?|changing the subject|on (?:another|a different) note"
    r"|(?:a |one )?(?:different|new|another|other) (?:question|topic|subject))\b",
    re.IGNORECASE,
)


def clean_rewrite(reply: str) -> str:
    """The reply's first line, without a "Question:" label, quotes around it, or words
    that tie it to the talk before it ("By the way, ...")."""
    line = reply.strip().split("\n", 1)[0].strip()
    line = _LABEL.sub("", line).strip()
    if len(line) > 1 and line[0] == line[-1] and line[0] in "\"'`":
        line = line[1:-1].strip()
    untied = _TIE.sub("", line)
    return untied[:1].upper() + untied[1:] if untied != line else line


def accepted(rewrite: str, question: str, turns: Sequence[Turn]) -> bool:
    """A rewrite that is a question of about the question's size with the question before
    it, built from the words of the question and the turns: no empty reply, no loop, no
    answer instead."""
    if not content_words(rewrite) or stutters(rewrite) or not keeps_question(rewrite, question):
        return False
    known = content_words(question) | content_words(conversation_text(turns[-TURNS_READ:]))
    new = content_words(rewrite) - known
    before = len(turns[-1].question.split()) if turns else 0
    limit = MAX_GROWTH * max(len(question.split()), 6) + before
    return len(rewrite.split()) <= limit and len(new) <= max(2, len(content_words(rewrite)) // 3)


def keeps_question(rewrite: str, question: str) -> bool:
    """The rewrite still asks what the question asks: a question stays a question, and
    some word of the question's own is in it (by its first five letters: "hunt" in
    "hunting"; "give applications" may become "provide"). The 1.5B sometimes writes the
    previous question again instead ("And on most Linux systems, what does it work
    like?" -> the question before it) or a statement ("And cont?" -> "And continues
    running code")."""
    if question.rstrip().endswith("?") and not rewrite.rstrip().endswith("?"):
        return False
    own = content_words(question)
    written = content_words(rewrite)
    return not own or any(other.startswith(word[:5]) or word.startswith(other[:5]) for word in own for other in written)


def read_question(
    question: str,
    turns: Sequence[Turn],
    generator: Generator,
    cancel: threading.Event,
) -> Asked:
    """The question read with the turns before it: rewritten by the reader where it needs
    them. Without turns nothing is generated. A rewrite that only repeats the question, or
    that fails ``accepted``, leaves the question as typed."""
    turns = tuple(turns)
    if not turns:
        return Asked(question)
    if changes_topic(question):
        return Asked(question, turns)
    chosen = ordinal_resolved(question, turns[-1].answer)
    if chosen:
        return Asked(question, turns, chosen)
    other = option_resolved(question, turns)
    if other:
        return Asked(question, turns, other, alone=True)
    kind = kind_resolved(question, turns)
    if kind:  # "Which command removes its proxies again?" still needs the turns for "its"
        return Asked(question, turns, kind, alone=not points_back(kind))
    messages = rewrite_messages(turns, question)
    reply = short_reply(generator, messages, REWRITE_TOKENS, cancel, lambda text: "\n" in text.strip())  # one line
    rewrite = clean_rewrite(reply)
    if cancel.is_set() or not accepted(rewrite, question, turns) or same_question(rewrite, question):
        return Asked(question, turns)
    return Asked(question, turns, rewrite)


MAX_LIST_WORDS = 12  # a longer answer is a sentence, whose commas list no choices
MAX_ITEM_WORDS = 5
_ORDINAL = re.compile(r"\bthe\s+(?:(first|second|third|fourth|fifth|last)\s+one|(former|latter))\b", re.IGNORECASE)
_PLACES = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1, "former": 0, "latter": -1}
_LIST_SEPARATOR = re.compile(r"\s*[,;]\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def ordinal_resolved(question: str, answer: str) -> str:
    """The question with "the second one" (or "the first one", "the last one", "the
    former", "the latter") replaced by that item of the last answer, where the answer is
    a short list ("Yarn and pnpm"): "Which binary names does the second one provide?" ->
    "Which binary names does pnpm provide?". "" where there is nothing to resolve. Told
    to write the name in, the 1.5B left that question as it was, and its draft named
    the first item's binaries."""
    found = _ORDINAL.search(question)
    words = answer.split()
    if not found or not words or len(words) > MAX_LIST_WORDS:
        return ""
    items = [item.strip() for item in _LIST_SEPARATOR.split(answer.strip().rstrip(".")) if item.strip()]
    place = _PLACES[(found[1] or found[2]).lower()]
    if len(items) < 2 or place >= len(items) or any(len(item.split()) > MAX_ITEM_WORDS for item in items):
        return ""
    return f"{question[: found.start()]}{items[place]}{question[found.end() :]}"


# A follow-up that only names another option of the same command ("And -d?", "What about
# the --count flag?").
_OTHER_OPTION = re.compile(
    rf"^\W*(?:and|what about|how about)\s+(?:the\s+)?(?P<option>{NAMED_OPTION.pattern})"
    rf"(?:\s+{OPTION_WORD})?\s*\?*\s*$",
    re.IGNORECASE,
)


def option_resolved(question: str, turns: Sequence[Turn]) -> str:
    """The last full question that named one option, with ``question``'s option in its
    place: "And -d?" after "What does uniq -c do?" -> "What does uniq -d do?"; "" where
    ``question`` is no such follow-up or no such question came before. Asked to rewrite
    "And -d?", the 1.5B answered it instead ("The command uniq -d prints ..."), and shown
    the turns, its draft of "What does uniq -u do?" said what -c does ("prints the number
    of occurrences")."""
    asked = _OTHER_OPTION.match(question)
    if not asked:
        return ""
    for turn in reversed(turns):
        if _OTHER_OPTION.match(turn.question):
            continue  # an earlier "And -c?": the full question is before it
        named = list(NAMED_OPTION.finditer(turn.question))
        if len(named) != 1:
            return ""
        return f"{turn.question[: named[0].start()]}{asked['option']}{turn.question[named[0].end() :]}"
    return ""


# "And which one ...?": the kind of thing asked for is the last "Which ...?" question's.
_WHICH_ONE = re.compile(r"^\W*(?:and\s+)?which\s+ones?\s+(?P<rest>\w.*)$", re.IGNORECASE)
_WHICH_KIND = re.compile(r"^\W*(?:and\s+)?which\s+(?P<words>.+)$", re.IGNORECASE)
# Where the kind's words end: an auxiliary or a joining word ("Which file name does ...",
# "Which part of ..."), an adverb ("Which class automatically retries ..."), or a verb's
# -s after the first word ("Which message mode stops ...").
_KIND_ENDS = frozenset(
    {"is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "will", "would", "must", "may"}
    | {"has", "have", "of", "in", "on", "for", "to", "the", "a", "an", "with", "from", "by", "at", "as"}
)
MAX_KIND_WORDS = 3


def kind_resolved(question: str, turns: Sequence[Turn]) -> str:
    """ "And which one ...?" with the kind of thing the last "Which ...?" question asked
    for in place of "one": after "Which key re-indexes the folder?", "And which one starts
    a new conversation?" -> "Which key starts a new conversation?"; "" where ``question``
    is no such follow-up, names its own choices ("which one, A or B?") or its group
    ("which one of them"), or no "Which <kind>" question came before ("Which is faster?"). Left to the 1.5B, such a follow-up was answered with the last
    answer ("Fixes:" for the trailer of other references) or with it beside the right one."""
    asked = _WHICH_ONE.match(question)
    # "which one of them ...", "which one, A or B?": not a kind's question of its own
    if not asked or re.search(r"\bor\b|^of\b", asked["rest"], re.IGNORECASE):
        return ""
    for turn in reversed(turns):
        if _WHICH_ONE.match(turn.question):
            continue  # an earlier "And which one ...?": the full question is before it
        before = _WHICH_KIND.match(turn.question)
        if not before:
            return ""
        kind: list[str] = []
        for word in (w.strip(",;:?") for w in before["words"].split()[:MAX_KIND_WORDS]):
            bare = word.lower()
            if not bare.isalpha() or bare in _KIND_ENDS or (kind and bare.endswith(("s", "ly"))):
                break
            kind.append(word)
        return f"Which {' '.join(kind)} {asked['rest']}" if kind else ""
    return ""


def context_search(asked: Asked) -> str:
    """The question as read after the user's turn before it: the first search beside the
    question's own ("" without turns, or for a change of topic). The reader often leaves a
    follow-up as it was ("Library parking", "Do they provide online services?"); this
    search still finds what the conversation is about (docs/conversations.md)."""
    if not asked.turns or changes_topic(asked.question):
        return ""
    return f"{asked.turns[-1].question}\n{asked.searched}"


def changes_topic(question: str) -> bool:
    """The question says it turns to another subject ("By the way, ...", "BTW ...",
    "Unrelated, ...", "Another question: ...") and nothing in it points back: it is read
    alone, with no rewrite and no search of the turns ("By the way, does it work offline?"
    still points back)."""
    return bool(_NEW_TOPIC.match(question)) and not points_back(question)


def same_question(rewrite: str, question: str) -> bool:
    """The rewrite adds no word to the question (it may drop a "by the way"): the
    question stood alone."""
    return content_words(rewrite) <= content_words(question)


def points_back(question: str) -> bool:
    """The question leans on the turns before it, whatever the reader made of it: a word
    that stands for something said before ("Which function cancels it?", "that timer",
    "the second one"; not the "there" of "is there") or a start that goes on from the
    last question or corrects it ("And cont?", "What about Windows?", "No, I meant
    the other one")."""
    words = re.findall(r"\w+", question.lower())
    start = words[1:] if words[:1] == ["no"] else words
    if start[:1] and (start[0] in ELLIPSES or " ".join(start[:2]) in ELLIPSES):
        return True
    existential = ("is", "are", "was", "were")  # "is there": no place named before
    return any(
        word in POINTERS and not (word == "there" and i and words[i - 1] in existential) for i, word in enumerate(words)
    )


def recent_turns(turns: Sequence[Turn], budget: int, count_tokens: Callable[[str], int]) -> tuple[Turn, ...]:
    """The last turns whose text fits ``budget`` tokens, oldest first (none when even the
    last does not fit)."""
    kept: list[Turn] = []
    for turn in reversed(turns):
        if count_tokens(conversation_text([turn, *kept])) > budget:
            break
        kept.insert(0, turn)
    return tuple(kept)
