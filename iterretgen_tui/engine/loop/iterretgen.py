"""Iter-RetGen (Shao et al., 2023): retrieve with q, draft y1; for t = 2..T retrieve
with y(t-1) || q and draft y_t from the new passages; return y_T.

``run`` is a plain generator of typed events (engine/loop/events.py) and records the trace
of every iteration. Beyond the paper: an adaptive stop (consecutive answers agree, or
the new retrieval brings nothing new to read) and optionally carrying earlier
iterations' passages forward.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator, Protocol, Sequence

from .answers import normalize_answer, token_f1
from .events import (
    ContextTrimmed,
    DraftDone,
    Event,
    FinalAnswer,
    IterationStarted,
    IterationTrace,
    PassagesRetrieved,
    QueryFormed,
    Stopped,
    StopReason,
    Token,
)
from .generator import Generator
from ..passages import Passage
from .prompts import answer_complete, build_prompt
from .evidence import SentenceEmbedder
from .outcome import draft_outcome, query_draft  # issue 17
from .question_kind import question_kind
from .repetition import LoopGuard

CONVERGENCE_F1 = 0.8  # token-F1 between consecutive answers that counts as "the same"
# How iteration t >= 2 retrieves: "draft" is the paper's y(t-1) || q alone; "fusion" merges
# the rankings of q and y(t-1) || q by reciprocal rank; "interleave" takes their passages
# in turn (q's best, the draft's best, q's second, ...), so a weak draft cannot push the
# question's best passages out and a good one always gets slots; "feedback" interleaves
# three rankings: q's, that of the previous iteration's top passage (title, text) || q
# (what a two-hop question's first hop found names its bridge), and the draft's. The app's
# settings default to feedback (run() itself defaults to the paper). Answer recall at t=2
# minus t=1 (scripts/query_formation.py, full sets, OpenVINO int8 MiniLM, top 5; docs/
# evaluation.md), hotpotqa / musique / 2wiki, with SmolLM2-135M's iteration-1 drafts: draft
# -3.5 / +5.0 / -7.9, fusion +1.0 / +4.5 / -1.2, interleave +1.0 / +4.5 / +1.2, feedback
# +4.0 / +6.0 / +7.3; with the gold answer as the draft: draft +10.0 / +23.5 / +8.5, fusion
# +5.0 / +9.5 / +3.6, interleave +6.0 / +18.5 / +7.9, feedback +8.0 / +20.0 / +11.0.
QUERY_MODES = ("draft", "fusion", "interleave", "feedback")
FUSION_DEPTH = 50  # ranks read from each list before fusing
RRF_K = 60  # reciprocal rank fusion's usual damping constant


class PassageRetriever(Protocol):
    embedder: SentenceEmbedder  # also scores the evidence sentences

    def retrieve(self, query: str, k: int) -> list[Passage]: ...

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]: ...


def form_query(question: str, draft: str) -> str:
    """The paper's generation-augmented query: the previous output, then the question."""
    return f"{draft}\n{question}"


def fuse(rankings: Sequence[Sequence[Passage]], k: int) -> list[Passage]:
    """Reciprocal rank fusion; a passage keeps its best similarity score for display."""
    fused: dict[int, float] = {}
    best: dict[int, Passage] = {}
    for ranking in rankings:
        for rank, passage in enumerate(ranking):
            fused[passage.id] = fused.get(passage.id, 0.0) + 1.0 / (RRF_K + rank + 1)
            if passage.id not in best or passage.score > best[passage.id].score:
                best[passage.id] = passage
    order = sorted(fused, key=lambda i: -fused[i])  # stable: ties keep first-seen order
    return [best[i] for i in order[:k]]


def interleave(rankings: Sequence[Sequence[Passage]], k: int) -> list[Passage]:
    """The rankings' passages in turn, rank by rank, each passage once."""
    taken: dict[int, Passage] = {}
    for tier in zip(*rankings):
        for passage in tier:
            taken.setdefault(passage.id, passage)
    return list(taken.values())[:k]


def searches(question: str, query: str, mode: str, lead: Passage | None = None) -> dict[str, str]:
    """Iteration t >= 2's search texts by name, in the order their rankings are merged;
    ``lead`` is the previous iteration's top passage ("feedback" mode), given as the
    index embedded it (title, then text). The names go into the trace and the UI."""
    if mode not in QUERY_MODES:
        raise ValueError(f"query mode must be one of {', '.join(QUERY_MODES)}, not {mode!r}")
    if mode == "draft":
        return {"the draft + the question": query}
    named = {"the question": question}
    if mode == "feedback" and lead is not None:
        named[f"the last top passage ({lead.title or lead.citation}) + the question"] = form_query(
            question, f"{lead.title}\n{lead.text}" if lead.title else lead.text
        )
    named["the draft + the question"] = query
    return named


def retrieve_with_draft(
    question: str, query: str, retriever: PassageRetriever, k: int, mode: str, lead: Passage | None = None
) -> list[Passage]:
    """Iteration t >= 2's passages for its draft-augmented ``query`` (see ``searches``)."""
    return merge_searches(searches(question, query, mode, lead), retriever, k, mode)


def merge_searches(named: dict[str, str], retriever: PassageRetriever, k: int, mode: str) -> list[Passage]:
    """Run ``searches``' texts and merge their rankings as ``mode`` does."""
    texts = list(named.values())
    if mode == "fusion":
        return fuse(retriever.retrieve_many(texts, max(k, FUSION_DEPTH)), k)
    return interleave(retriever.retrieve_many(texts, k), k)


def answers_converge(previous: str, current: str) -> bool:
    if not normalize_answer(current):
        return False
    return (
        normalize_answer(previous) == normalize_answer(current)
        or token_f1(previous, current) >= CONVERGENCE_F1
    )


def no_new_passages(retrieved: Sequence[Passage], previous: Sequence[Passage]) -> bool:
    """Greedy decoding over the same passages would repeat the last draft."""
    return {p.id for p in retrieved} <= {p.id for p in previous}


def _carry_forward(new: Sequence[Passage], earlier: Sequence[Passage]) -> list[Passage]:
    """New passages first, then earlier ones not retrieved again (the budget trims the tail)."""
    seen = {p.id for p in new}
    return list(new) + [p for p in earlier if p.id not in seen]


def run(
    question: str,
    *,
    retriever: PassageRetriever,
    generator: Generator,
    iterations: int = 3,
    top_k: int = 5,
    adaptive: bool = True,
    keep_passages: bool = False,
    query_mode: str = "draft",
    max_tokens: int = 256,
    cancel: threading.Event | None = None,
    draft_for_query: Callable[[str], str] | None = None,
) -> Iterator[Event]:
    """``draft_for_query`` maps a draft to the text used in the next query (the eval's
    gold-draft diagnostic replaces it); by default the draft itself."""
    if not question.strip():
        raise ValueError("the question is empty")
    cancel = cancel or threading.Event()
    budget = generator.n_ctx - max_tokens
    kind = question_kind(question)  # issue 17: the factoid or the open prompt
    traces: list[IterationTrace] = []
    reason = StopReason.MAX_ITERATIONS
    t = 1  # the iteration being worked on when the loop stops
    for t in range(1, iterations + 1):
        if cancel.is_set():
            reason = StopReason.CANCELLED
            break
        started = time.perf_counter()
        yield IterationStarted(t, iterations)
        previous = traces[-1] if traces else None
        if previous is None:
            query, searched = question, ("the question",)
            yield QueryFormed(t, query, searched)
            retrieved = retriever.retrieve(query, top_k)
        else:
            query = form_query(question, (draft_for_query or (lambda d: d))(query_draft(previous)))
            lead = previous.passages[0] if previous.passages else None
            named = searches(question, query, query_mode, lead)
            searched = tuple(named)
            yield QueryFormed(t, query, searched)
            retrieved = merge_searches(named, retriever, top_k, query_mode)
        yield PassagesRetrieved(t, tuple(retrieved))
        if adaptive and previous and no_new_passages(retrieved, previous.passages):
            reason = StopReason.SAME_PASSAGES
            break
        candidates = _carry_forward(retrieved, previous.passages) if keep_passages and previous else retrieved
        prompt = build_prompt(
            question, candidates, count_tokens=generator.count_tokens, budget=budget, kind=kind
        )
        if prompt.dropped or prompt.truncated:
            yield ContextTrimmed(t, len(prompt.passages), prompt.dropped, prompt.truncated)
        stream = generator.stream(prompt.messages, max_tokens=max_tokens, cancel=cancel)
        guard = LoopGuard()  # issue 17: holds the draft; a draft that repeats itself stops at once
        try:
            for piece in stream:
                yield Token(t, piece)
                if guard.feed(piece):
                    break  # looping: nothing more of use will come
                if answer_complete(guard.text, kind):
                    break  # the answer is stated: whatever follows would be discarded
        finally:
            stream.close()  # stops decoding at once
        if cancel.is_set():
            reason = StopReason.CANCELLED
            break
        # issue 17: the draft before any loop, its stated answer, the evidence sentence
        outcome = draft_outcome(question, kind, guard, prompt, generator, retriever.embedder, cancel)
        trace = IterationTrace(
            t=t,
            query=query,
            searches=searched,
            passages=prompt.passages,
            seconds=time.perf_counter() - started,
            prompt_tokens=prompt.tokens,
            trimmed=bool(prompt.dropped or prompt.truncated),
            **outcome,
        )
        traces.append(trace)
        yield DraftDone(t, trace)
        if adaptive and previous and answers_converge(previous.answer, trace.answer):
            reason = StopReason.CONVERGED
            break
    last = traces[-1] if traces else None
    yield Stopped(t, reason)
    yield FinalAnswer(
        question=question,
        answer=last.answer if last else "",
        draft=last.draft if last else "",
        sources=last.passages if last else (),
        stop_reason=reason,
        iterations=tuple(traces),
        stopped_at=t,
        evidence=last.evidence if last else None,  # issue 17
        kind=kind,
    )
