"""Iter-RetGen (Shao et al., 2023): retrieve with q, draft y1; for t = 2..T retrieve
with y(t-1) || q and draft y_t from the new passages; return y_T.

``run`` is a plain generator of typed events (engine/loop/events.py) and records the
trace of every iteration. Each iteration is the paper's two steps: generation-augmented
retrieval (``retrieve``) and retrieval-augmented generation (``generate``). Beyond the
paper: an adaptive stop (engine/loop/stopping.py) and optionally carrying earlier
iterations' passages forward.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator as Steps
from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, replace

from ..passages import Passage
from . import provenance
from .ambiguity import ambiguity, read_reply
from .bridges import Redraft
from .compression import SentenceMemo, read_parts
from .conversation import Asked, Turn, context_search, conversation_text, points_back, recent_turns
from .drafting import stream_draft
from .events import (
    ContextTrimmed,
    DraftDone,
    Event,
    FinalAnswer,
    FirstAnswer,
    IterationStarted,
    IterationTrace,
    PassagesRetrieved,
    QueryFormed,
    QuestionRead,
    Stopped,
    StopReason,
    Token,
)
from .evidence import SentenceEmbedder
from .generator import Generator, Message
from .grounding import found_probability, unsaid
from .options import LoopOptions
from .outcome import draft_outcome
from .prompts import Prompt, build_prompt, demo_messages, turn_start
from .queries import (
    PassageRetriever,
    QueryFormer,
    first_searches,
    paper_query,
    search_again,
    search_first,
    searches,
)
from .question_kind import FACTOID, question_kind
from .repetition import LoopGuard
from .stopping import answers_converge

# The turns after a draft, their questions and replies: follow_up's (64 tokens of reply)
# is the longest.
AFTER_DRAFT_TOKENS = 128


def run(
    question: str,
    *,
    retriever: PassageRetriever,
    generator: Generator,
    options: LoopOptions = LoopOptions(),
    cancel: threading.Event | None = None,
    next_query: QueryFormer = paper_query,
    turns: Sequence[Turn] = (),
) -> Iterator[Event]:
    """``turns``: the conversation before the question, oldest first; with them the
    question is first read as a standalone one (engine/loop/conversation.py), which the
    loop then takes as its q."""
    if not question.strip():
        raise ValueError("the question is empty")
    cancel = cancel or threading.Event()
    began = time.perf_counter()
    first_seconds: float | None = None  # to the first draft that states an answer
    sentences = SentenceMemo(retriever.embedder) if retriever.embedder is not None else None
    # The evidence support under which the documents seem not to say (grounding.py).
    below = retriever.embedder.unsaid_below if options.check_evidence and retriever.embedder is not None else 0.0
    asked = Asked(question, tuple(turns))
    reading: Reading | None = None  # made once the question is read
    traces: list[IterationTrace] = []
    last_prompt: Prompt | None = None
    # The passages the last prompt was chosen from, read or not (all so far where they are
    # kept): a factoid's "same passages" (retrieve).
    weighed: set[int] = set()
    reason = StopReason.MAX_ITERATIONS
    t = 1  # the iteration being worked on when the loop stops
    for t in range(1, options.iterations + 1):
        if cancel.is_set():
            reason = StopReason.CANCELLED
            break
        started = time.perf_counter()
        yield IterationStarted(t, options.iterations)
        if reading is None:
            if asked.turns:
                asked = read_reply(question, asked.turns, generator, cancel)
            reading = Reading.of(asked, generator, options)
            if asked.turns:
                yield QuestionRead(t, asked.standalone, len(asked.turns), reading.shown)
        previous = traces[-1] if traces else None
        retrieved = yield from retrieve(t, reading, previous, weighed, retriever, options, next_query)
        weighed = (weighed if options.keep_passages else set()) | {p.id for p in retrieved.passages}
        if options.adaptive and retrieved.repeats:
            reason = StopReason.SAME_PASSAGES
            break
        back = ambiguity(asked, retrieved.passages) if options.ask_back and previous is None else ""
        if back:  # a draft would pick one of the things meant: ask which instead
            yield Stopped(t, StopReason.ASKED_BACK)
            yield replace(
                final_answer(asked, traces, StopReason.ASKED_BACK, t), sources=retrieved.passages, asked_back=back
            )
            return
        drafted = yield from generate(
            t, reading, retrieved, last_prompt, generator, retriever, sentences, options, cancel, started
        )
        if drafted is None:
            reason = StopReason.CANCELLED
            break
        trace, last_prompt = drafted
        traces.append(trace)
        yield DraftDone(t, trace)
        if first_seconds is None and trace.stated:
            first_seconds = time.perf_counter() - began
            if t < options.iterations:  # later iterations check it: the chat shows it meanwhile
                first = final_answer(asked, traces, StopReason.MAX_ITERATIONS, t, below=below)
                yield FirstAnswer(t, first, first_seconds)
        if options.adaptive and previous and answers_converge(previous.answer, trace.answer, reading.question):
            reason = StopReason.CONVERGED
            break
    yield Stopped(t, reason)
    grounded = None
    if options.check_found and traces and traces[-1].stated and not cancel.is_set():
        grounded = found_probability(generator, last_prompt.messages, cancel)
    yield final_answer(asked, traces, reason, t, grounded, first_seconds, below)


@dataclass(frozen=True)
class Reading:
    """What the reader is asked: the question (standalone where the conversation made
    one), its kind, and the turns before it that it sees, as text ("" for none)."""

    question: str
    kind: str  # the factoid or the open prompt (engine/loop/question_kind.py)
    earlier: str = ""
    context: str = ""  # the first search beside the question's, where there are turns (conversation.py)
    said: str = ""  # the answer of the last turn shown ("" for none): a draft may copy it (outcome.py)
    # It points back at its turns as typed, unrewritten, or read by a rule that drafts it
    # alone ("And which one is used for other references?"): alone it says little ("Does
    # it work offline too?"), so the evidence's support also scores the context.
    as_typed: bool = False
    shown: int = 0  # the turns ``earlier`` holds

    @classmethod
    def of(cls, asked: Asked, generator: Generator, options: LoopOptions) -> Reading:
        # The turns are shown where the question was rewritten or still points back at them
        # (the 1.5B leaves "Which binary names does the second one provide?" as it was);
        # a question that stands alone is read alone: its turns would only cost tokens.
        leans = not asked.alone and bool(asked.standalone or points_back(asked.question))
        shown = shown_turns(asked.turns, generator, options) if leans else ()
        kind = question_kind(asked.searched)
        said = shown[-1].answer if shown else ""
        as_typed = (bool(shown) and not asked.standalone) or (asked.alone and points_back(asked.question))
        return cls(asked.searched, kind, conversation_text(shown), context_search(asked), said, as_typed, len(shown))


def shown_turns(turns: Sequence[Turn], generator: Generator, options: LoopOptions) -> tuple[Turn, ...]:
    """The last turns the draft of a question that leans on them sees."""
    return recent_turns(turns, options.history_tokens, generator.count_tokens)


def next_draft_start(turns: Sequence[Turn], generator: Generator, options: LoopOptions) -> list[Message]:
    """The draft's messages for a factoid follow-up after ``turns`` that leans on them, up
    to its passages: all of its prompt that can be evaluated before it is asked
    (``Generator.prefill``; the chat does it while the user reads the answer)."""
    earlier = conversation_text(shown_turns(turns, generator, options))
    return [*demo_messages(FACTOID), {"role": "user", "content": turn_start(earlier)}]


@dataclass(frozen=True)
class Retrieved:
    """What an iteration searched with and found."""

    query: str  # the paper's query: the question at t = 1, the last draft + question after
    searches: tuple[str, ...]  # every search merged, by identifier (engine/loop/queries.py)
    passages: tuple[Passage, ...]
    found_by: dict[int, tuple[str, ...]]  # passage id -> the searches that found it (provenance.py)
    repeats: bool  # nothing new at the top of the searches: the adaptive stop's "same passages"


def retrieve(
    t: int,
    reading: Reading,
    previous: IterationTrace | None,
    weighed: Set[int],
    retriever: PassageRetriever,
    options: LoopOptions,
    next_query: QueryFormer,
) -> Steps[Event, None, Retrieved]:
    """Generation-augmented retrieval: the question at t = 1 (in a conversation, taking
    turns with the question after the turn before it), then the last draft's query.
    ``weighed``: the passages the last prompt was chosen from. For a factoid, searches that
    find nothing else stop the loop (the same passages) even where the reading budget took
    nothing of some: a check would choose from them again for a draft that names its
    answer. An open question's check reads sentences of them that the budget left out, and
    an explanation gains by them, so its stop counts only the passages read
    (docs/performance.md, "Reading passages in part")."""
    question = reading.question
    if previous is None:
        texts = first_searches(question, reading.context)
        query, named = question, tuple(texts)
        yield QueryFormed(t, query, named)
        rankings, first = search_first(texts, retriever, options.top_k)
        found, repeats, again_by, kept = tuple(first), False, {}, 0
    else:
        query = next_query(question, previous)
        lead = previous.passages[0] if previous.passages else None
        texts = searches(question, query, options.query_mode, lead)
        named = tuple(texts)
        yield QueryFormed(t, query, named)
        again = search_again(
            texts,
            retriever,
            options.top_k,
            options.query_mode,
            previous.passages,
            skip_read=options.keep_passages,
            weighed=weighed if reading.kind == FACTOID else frozenset(),
        )
        rankings, found, repeats = again.unread, tuple(again.passages), again.repeats
        # A kept passage that this iteration's searches ranked again says so in the pane.
        again_by = provenance.found_again(previous.passages, again.rankings, options.top_k)
        kept = len(carry_forward(found, previous.passages)) - len(found) if options.keep_passages else 0
    found_by = provenance.found_by(found, rankings, options.top_k)
    yield PassagesRetrieved(t, found, found_by, repeats, kept)
    return Retrieved(query, named, found, again_by | dict(zip((p.id for p in found), found_by)), repeats)


def generate(
    t: int,
    reading: Reading,
    retrieved: Retrieved,
    before: Prompt | None,
    generator: Generator,
    retriever: PassageRetriever,
    sentences: SentenceEmbedder | None,
    options: LoopOptions,
    cancel: threading.Event,
    started: float,
) -> Steps[Event, None, tuple[IterationTrace, Prompt] | None]:
    """Retrieval-augmented generation: draft y_t from the passages (``before``: the last
    iteration's prompt), streamed, stopped as soon as it states its answer or repeats
    itself; the trace and the prompt it was drafted from, or None if cancelled."""
    question, kind = reading.question, reading.kind
    tokens = options.read_budget(t)
    prompt = order_passages(reading, retrieved, before, generator, sentences, options, tokens)
    if prompt.dropped or prompt.truncated:
        yield ContextTrimmed(t, len(prompt.passages), prompt.dropped, prompt.truncated)
    guard = LoopGuard()  # holds the draft; a draft that repeats itself stops at once
    for piece in stream_draft(generator, prompt.messages, kind, options.max_tokens, guard, cancel):
        yield Token(t, piece)
    if cancel.is_set():
        return None
    # The draft before any loop, its stated answer (asked for if missing), the evidence.
    # A folder's index knows each passage's neighbours in its file (cut sentences are mended).
    around = getattr(getattr(retriever, "index", None), "around", None)
    outcome = draft_outcome(
        question,
        kind,
        guard,
        prompt,
        generator,
        sentences,
        cancel,
        redrafter(prompt, generator, sentences, options, tokens, cancel),
        around,
        reading.said,
        reading.context if reading.as_typed else "",
    )
    if cancel.is_set():
        return None
    trace = IterationTrace(
        t=t,
        query=retrieved.query,
        searches=retrieved.searches,
        passages=prompt.passages,
        seconds=time.perf_counter() - started,
        prompt_tokens=prompt.tokens,
        trimmed=bool(prompt.dropped or prompt.truncated),
        found_by=tuple(retrieved.found_by.get(p.id, ()) for p in prompt.passages),  # (): carried forward
        **outcome,
    )
    return trace, prompt


def redrafter(
    prompt: Prompt,
    generator: Generator,
    sentences: SentenceEmbedder | None,
    options: LoopOptions,
    tokens: int,
    cancel: threading.Event,
) -> Redraft:
    """A fresh draft to another question over the same passages, read for that question
    and without the conversation (whole passages share everything before the question
    with this prompt, which llama.cpp reuses; read in part, the other question picks its
    own sentences)."""

    def redraft(question: str, kind: str) -> str:
        again = fitted_prompt(Reading(question, kind), prompt.passages, generator, sentences, options, tokens)
        guard = LoopGuard()
        for _ in stream_draft(generator, again.messages, kind, options.max_tokens, guard, cancel):
            pass
        return guard.kept.strip()

    return redraft


def order_passages(
    reading: Reading,
    retrieved: Retrieved,
    before: Prompt | None,
    generator: Generator,
    sentences: SentenceEmbedder | None,
    options: LoopOptions,
    tokens: int,
) -> Prompt:
    """The prompt of this iteration's passages, with the earlier ones (``before``'s, read
    as they were) kept when asked. ``new-first``: the new retrieval, then the earlier
    passages it did not find again. ``earlier-first``: the last prompt's passages as they
    were, then the new ones, so llama.cpp reuses the last prompt's evaluation
    (docs/performance.md); when not all fit, new-first, so the budget never trims away
    what this iteration found. ``auto``: the order measured best for this reader
    (docs/evaluation.md)."""

    found = retrieved.passages
    if not (options.keep_passages and before):
        return fitted_prompt(reading, found, generator, sentences, options, tokens, retrieved.query)
    read_before = dict(zip((p.id for p in before.passages), before.texts))

    def build(passages: Sequence[Passage]) -> Prompt:
        return fitted_prompt(reading, passages, generator, sentences, options, tokens, retrieved.query, read_before)

    order = generator.passage_order if options.passage_order == "auto" else options.passage_order
    if order == "earlier-first":
        prompt = build(carry_forward(before.passages, found))
        if not (prompt.dropped or prompt.truncated):
            return prompt
    return build(carry_forward(found, before.passages))


def fitted_prompt(
    reading: Reading,
    passages: Sequence[Passage],
    generator: Generator,
    sentences: SentenceEmbedder | None,
    options: LoopOptions,
    tokens: int,
    query: str = "",
    read_before: Mapping[int, str] = {},
) -> Prompt:
    """The prompt of what the reader reads of ``passages`` (engine/loop/compression.py:
    what bears on the question and ``query``, the iteration's search, within ``tokens``
    with the budget read mode; kept passages as ``read_before`` has them) that leaves the
    model room for a whole draft and the short turns after it (asking for its answer,
    checking it): llama.cpp refuses a turn that would overflow its window."""
    asked = (reading.question, query) if query and query != reading.question else (reading.question,)
    parts = read_parts(
        passages,
        asked,
        sentences,
        mode=options.read,
        tokens=tokens,
        count_tokens=generator.count_tokens,
        read_before=read_before,
    )
    given = [(passage, text) for passage, text in zip(passages, parts) if text is not None]
    budget = generator.n_ctx - options.max_tokens - AFTER_DRAFT_TOKENS
    return build_prompt(
        reading.question,
        [passage for passage, _ in given],
        count_tokens=generator.count_tokens,
        budget=budget,
        kind=reading.kind,
        earlier=reading.earlier,
        texts=[text for _, text in given],
    )


def carry_forward(first: Sequence[Passage], then: Sequence[Passage]) -> tuple[Passage, ...]:
    """``first``, then the passages of ``then`` not among them (the budget trims the tail)."""
    seen = {p.id for p in first}
    return tuple(first) + tuple(p for p in then if p.id not in seen)


def final_answer(
    asked: Asked,
    traces: Sequence[IterationTrace],
    reason: StopReason,
    t: int,
    grounded: float | None = None,
    first_seconds: float | None = None,
    below: float = 0.0,
) -> FinalAnswer:
    last = traces[-1] if traces else None
    return FinalAnswer(
        question=asked.question,
        answer=last.answer if last else "",
        draft=last.draft if last else "",
        sources=last.passages if last else (),
        stop_reason=reason,
        iterations=tuple(traces),
        stopped_at=t,
        evidence=last.evidence if last else None,
        kind=question_kind(asked.searched),
        standalone=asked.standalone,
        grounded=grounded,
        first_answer_seconds=first_seconds,
        unsaid=unsaid(last, grounded, below) if last and last.stated else "",
    )
