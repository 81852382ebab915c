"""Typed, immutable events yielded by the Iter-RetGen loop.

The TUI, the headless ``ask`` command and the evaluation harness all consume this
one stream; every field is plain data so events can cross thread boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..counting import counted
from ..passages import Passage
from .evidence import Evidence
from .question_kind import FACTOID


class StopReason(str, Enum):
    CONVERGED = "converged"  # consecutive answers agree
    SAME_PASSAGES = "same_passages"  # the searches found nothing new at their top
    MAX_ITERATIONS = "max_iterations"
    CANCELLED = "cancelled"
    ASKED_BACK = "asked_back"  # the question can mean several things the passages name

    def describe(self, t: int) -> str:
        return {
            StopReason.CONVERGED: f"converged at iteration {t}",
            StopReason.SAME_PASSAGES: f"same top passages at iteration {t}",
            StopReason.MAX_ITERATIONS: f"reached the maximum of {t} iterations",
            StopReason.CANCELLED: f"cancelled during iteration {t}",
            StopReason.ASKED_BACK: f"asked which one is meant at iteration {t}",
        }[self]


@dataclass(frozen=True)
class IterationEvent:
    """Something that happened during iteration ``t``."""

    t: int


@dataclass(frozen=True)
class IterationStarted(IterationEvent):
    max_t: int


@dataclass(frozen=True)
class QuestionRead(IterationEvent):
    """The question was read with the conversation before it (engine/loop/conversation.py)."""

    standalone: str  # the question rewritten to stand alone; "" when it stands alone as asked
    turns: int  # earlier turns it was read with
    shown: int = 0  # of those, the last ones the reader sees above its passages (iterretgen.Reading)

    def describe(self) -> str:
        """How it was read: rewritten, or as asked, and how many of the turns the reader
        sees above its passages; the chat's pane and `ask` say the same."""
        if self.standalone:
            return f"Read as: {self.standalone}"
        if self.shown:
            last = "the turn" if self.shown == 1 else f"the last {self.shown} turns"
            return f"Read as asked, with {last} it points back to shown to the reader"
        return f"Read as asked (it needs none of the {counted(self.turns, 'earlier turn')})"


@dataclass(frozen=True)
class QueryFormed(IterationEvent):
    query: str  # the paper's query: the question at t = 1, the last draft + question after
    searches: tuple[str, ...] = ()  # every search the iteration merges, by identifier (loop/queries.py)


@dataclass(frozen=True)
class PassagesRetrieved(IterationEvent):
    passages: tuple[Passage, ...]
    found_by: tuple[tuple[str, ...], ...] = ()  # per passage, the searches that found it (provenance.py)
    repeats: bool = False  # nothing new at the top of the searches (the adaptive stop's rule)
    kept: int = 0  # earlier passages the prompt carries beside these (keep_passages), before trimming


@dataclass(frozen=True)
class ContextTrimmed(IterationEvent):
    """Passages were shortened or dropped so the prompt fits the model's window."""

    kept: int
    dropped: int
    truncated: int


@dataclass(frozen=True)
class Token(IterationEvent):
    text: str


@dataclass(frozen=True)
class IterationTrace:
    t: int
    query: str
    passages: tuple[Passage, ...]
    draft: str
    answer: str
    seconds: float
    prompt_tokens: int = 0
    trimmed: bool = False
    searches: tuple[str, ...] = ()  # as in QueryFormed; () in history saved before it
    # Per passage, the searches that found it; () for one carried forward (provenance.py).
    # Empty altogether in history saved before it.
    found_by: tuple[tuple[str, ...], ...] = ()
    # What the draft amounts to (engine/loop/outcome.py); defaults are what history saved before them reads as.
    looped: bool = False  # the draft repeated itself and was cut where the repetition began
    stated: bool = True  # an answer was stated, in the draft or when asked (follow_up.py)
    asked: bool = False  # the draft stated none, so the model was asked for it
    # The rest of a two-hop question whose draft answered its inner part, asked afresh:
    # its answer is ``answer`` (bridges.py).
    asked_rest: str = ""
    evidence: Evidence | None = None  # the passages' sentence closest to the question


@dataclass(frozen=True)
class DraftDone(IterationEvent):
    trace: IterationTrace


@dataclass(frozen=True)
class Stopped(IterationEvent):
    reason: StopReason


@dataclass(frozen=True)
class FinalAnswer:
    question: str
    answer: str  # extracted short answer ("So the answer is X." -> X)
    draft: str  # the full last output y_T
    sources: tuple[Passage, ...]  # the passages y_T was generated from, numbered [1].. in order
    stop_reason: StopReason
    iterations: tuple[IterationTrace, ...]
    stopped_at: int  # the iteration during which the loop stopped (see StopReason.describe)
    evidence: Evidence | None = None  # the last iteration's (engine/loop/evidence.py)
    kind: str = FACTOID  # the question's kind (engine/loop/question_kind.py)
    # The question as read with the conversation, when that changed it ("Read as").
    standalone: str = ""
    # The reader's say, after its last draft, on whether the passages state the answer:
    # the probability it gives yes (engine/loop/grounding.py; 1 or 0 from a reader that
    # only replies, and in history written before); None where it was not asked or gave none.
    grounded: float | None = None
    # Seconds from the question to the first draft that stated an answer; None for none.
    first_answer_seconds: float | None = None
    # Why the passages read seem not to state an answer, so the reply says so: "evidence"
    # (the nearest sentence is far from the question) or "reader" (its check said no, or
    # its draft says the passages do not mention it and answers only yes or no);
    # "" where they seem to (engine/loop/grounding.py).
    unsaid: str = ""
    # The question back to the user when the question can mean several things the
    # passages name (engine/loop/ambiguity.py); then nothing was drafted.
    asked_back: str = ""

    @property
    def searched(self) -> str:
        """The question as retrieval and the reader took it (conversation.Asked.searched)."""
        return self.standalone or self.question


@dataclass(frozen=True)
class FirstAnswer(IterationEvent):
    """The first stated answer, while later iterations check it: the answer as it stands
    after iteration ``t`` (its stop reason is the one a loop ending there would have)."""

    answer: FinalAnswer
    seconds: float  # from the question


Event = (
    IterationStarted
    | QuestionRead
    | QueryFormed
    | PassagesRetrieved
    | ContextTrimmed
    | Token
    | DraftDone
    | FirstAnswer
    | Stopped
    | FinalAnswer
)
