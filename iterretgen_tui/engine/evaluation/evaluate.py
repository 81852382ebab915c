"""Evaluation per iteration: run a question through the very loop the TUI drives, score
the output of every iteration t, and average the per-question records.

With greedy decoding the T=2 answer is the second iteration of a T=3 run, so one fixed
run (adaptive stop off) to the largest T scores every t. The adaptive run is derived
from that trace with the loop's own stop rules instead of running a second time; or,
where only it is wanted, each question runs as the app runs it and stops where it stops
(about half the generations on the QA sets).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from math import sqrt
from pathlib import Path
from statistics import fmean, stdev

from ..errors import IterRetGenError
from ..loop import iterretgen
from ..loop.events import FinalAnswer, IterationTrace, PassagesRetrieved, StopReason
from ..loop.generator import Generator
from ..loop.options import LoopOptions
from ..loop.queries import PassageRetriever, form_query, paper_query
from ..loop.stopping import answers_converge
from ..loop.trust import weakness
from ..passages import Passage
from . import metrics
from .datasets import Question

RECALL_KS = (5, 10, 100)
JUDGE_MAX_TOKENS = 4  # the verdict is the reply's opening word
COMPARED = ("acc", "acc_judge", "answer_recall")  # what iterating is meant to raise
Z95 = 1.96  # two-sided 95% under the normal approximation


class ConfigMismatch(IterRetGenError, ValueError):
    """Saved records were made with other settings and cannot be resumed."""


def adaptive_stop(repeats: Sequence[bool], traces: Sequence[IterationTrace], question: str) -> tuple[int, StopReason]:
    """Where the adaptive loop would have stopped, and why, replaying its two rules in the
    order the loop checks them: no new passages (``repeats``, before drafting t) or
    converged (after)."""
    for i in range(1, len(traces)):
        if repeats[i]:
            return i, StopReason.SAME_PASSAGES
        if answers_converge(traces[i - 1].answer, traces[i].answer, question):
            return i + 1, StopReason.CONVERGED
    return len(traces), StopReason.MAX_ITERATIONS


def judge(generator: Generator, question: str, prediction: str, answer: str) -> bool | None:
    reply = "".join(
        generator.stream(
            metrics.judge_messages(question, prediction, answer),
            max_tokens=JUDGE_MAX_TOKENS,
            cancel=threading.Event(),
        )
    )
    return metrics.parse_judge(reply)


def retrieval_scores(passages: Sequence[Passage], question: Question) -> dict[str, float]:
    """What one retrieval found: a gold answer in the text, and the gold documents."""
    return {
        "answer_recall": metrics.answer_recall((f"{p.title} {p.text}" for p in passages), question.answers),
        "gold_recall": metrics.gold_recall((p.source for p in passages), question.relevant),
    }


def evaluate_question(
    question: Question,
    *,
    retriever: PassageRetriever,
    generator: Generator,
    options: LoopOptions,
    gold_draft: bool = False,
    judge_with: Generator | None = None,
    stop_adaptively: bool = False,
) -> dict:
    """One question's record, JSON-ready: every iteration's query, retrieved document ids,
    draft, answer, judge verdict and scores, and where the adaptive stop would be. The
    loop runs to ``options.iterations`` without stopping and the adaptive stop is
    replayed; with ``stop_adaptively`` it stops there, and the record holds only the
    iterations run. ``gold_draft`` forms each next query from the gold answer (the
    retrieval ceiling)."""
    started = time.perf_counter()
    replayed = getattr(generator, "replayed", None)  # a CachedGenerator's record
    if replayed is not None:
        replayed.clear()
    repeats: list[bool] = []
    calls_before: list[int] = []  # generator calls made before each iteration's draft was done
    gold = question.answers[0] if question.answers else ""
    for event in iterretgen.run(
        question.text,
        retriever=retriever,
        generator=generator,
        options=replace(options, adaptive=stop_adaptively),
        next_query=(lambda text, _previous: form_query(text, gold)) if gold_draft else paper_query,
    ):
        if isinstance(event, PassagesRetrieved):
            repeats.append(event.repeats)
            calls_before.append(len(replayed) if replayed is not None else 0)
        elif isinstance(event, FinalAnswer):
            final = event
    verdicts: dict[str, bool | None] = {}  # the same answer gets the same (greedy) verdict
    steps = []
    for i, trace in enumerate(final.iterations):
        if judge_with is not None and trace.answer not in verdicts:
            verdicts[trace.answer] = judge(judge_with, question.text, trace.answer, gold)
        # A replayed generation costs what it cost when it ran; an iteration may have made
        # two calls (the draft, then the follow-up asking for its answer).
        original = _replayed_seconds(replayed, calls_before, i)
        steps.append(step_record(question, trace, original, verdicts.get(trace.answer)))
    if final.asked_back:  # nothing drafted: a question with no answer, at every t scored
        asked = IterationTrace(1, question.text, final.sources, "", "", 0.0, stated=False)
        last = 1 if stop_adaptively else options.iterations
        steps = [step_record(question, replace(asked, t=t), None, None) for t in range(1, last + 1)]
        stop_t, reason = 1, final.stop_reason
    elif stop_adaptively:
        stop_t, reason = len(final.iterations), final.stop_reason
    else:
        stop_t, reason = adaptive_stop(repeats, final.iterations, question.text)
    return {
        "id": question.id,
        "question": question.text,
        "gold": list(question.answers),
        "gold_doc_ids": sorted(question.relevant),
        "iterations": steps,
        "adaptive": {"t": stop_t, "reason": reason.value},
        # What the chat would say of the answer the loop returned (its last iteration run):
        # "unsupported", "not_found", "looped", "no_answer", or None for a plain answer.
        "weakness": weak.value if (weak := weakness(final)) else None,
        "seconds": round(time.perf_counter() - started, 3),
    }


def step_record(question: Question, trace: IterationTrace, original: float | None, verdict: bool | None) -> dict:
    """One iteration of a question's record: what it searched, read and answered, scored.
    Recall is of the passages the reader read: with ``keep_passages`` those are this
    iteration's new ones and the earlier ones carried forward."""
    return {
        "t": trace.t,
        "query": trace.query,
        "passage_ids": [p.source for p in trace.passages],
        "draft": trace.draft,
        "answer": trace.answer,
        "seconds": round(trace.seconds + (original or 0.0), 3),
        "replayed": original is not None,
        "judge": verdict,
        "looped": trace.looped,
        "stated": trace.stated,
        "asked": trace.asked,
        "asked_rest": trace.asked_rest,
        "evidence": trace.evidence.text if trace.evidence else "",
        "evidence_also": trace.evidence.also.text if trace.evidence and trace.evidence.also else "",
        "scores": {
            "em": metrics.exact_match(trace.answer, question.answers),
            "f1": metrics.f1(trace.answer, question.answers),
            "acc": metrics.accuracy(trace.answer, question.answers),
            **retrieval_scores(trace.passages, question),
            "evidence_recall": metrics.answer_recall(trace.evidence.texts if trace.evidence else [], question.answers),
        },
    }


def _replayed_seconds(replayed: list | None, calls_before: Sequence[int], i: int) -> float | None:
    """What iteration i's replayed generations cost when they ran; None if none was replayed."""
    if not replayed:
        return None
    end = calls_before[i + 1] if i + 1 < len(calls_before) else len(replayed)
    originals = [s for s in replayed[calls_before[i] : end] if s is not None]
    return sum(originals) if originals else None


def _scores(steps: Sequence[dict], t: int, judged: bool) -> dict:
    """One question's metrics at iteration t, with the cost of getting there."""
    step = steps[t - 1]
    scores = step["scores"]
    return {  # the key order of the JSON
        "em": scores["em"],
        "f1": scores["f1"],
        "acc": scores["acc"],
        "acc_judge": float(step["judge"] is True) if judged else None,
        "answer_recall": scores["answer_recall"],
        "gold_recall": scores["gold_recall"],
        # Records saved before these were kept have none of them.
        "evidence_recall": scores.get("evidence_recall"),
        "stated": _flag(step, "stated"),
        "looped": _flag(step, "looped"),
        "llm_calls": t,
        "seconds": sum(s["seconds"] for s in steps[:t]),
    }


def _flag(step: dict, name: str) -> float | None:
    return None if name not in step else float(step[name])


def _mean(rows: Sequence[dict]) -> dict:
    """Each metric over the rows that have it (records from older versions lack some)."""
    found = {key: [r[key] for r in rows if r[key] is not None] for key in rows[0]}
    return {key: round(fmean(values), 4) if values else None for key, values in found.items()}


def summarize(records: Sequence[dict], ts: Iterable[int], *, judged: bool) -> list[dict]:
    """One row per asked t: every metric averaged over the questions."""
    return [{"t": t, **_mean([_scores(r["iterations"], t, judged) for r in records])} for t in ts]


def summarize_adaptive(records: Sequence[dict], *, judged: bool) -> dict:
    rows = [_scores(r["iterations"], r["adaptive"]["t"], judged) for r in records]
    reasons: dict[str, int] = {}
    for r in records:
        reasons[r["adaptive"]["reason"]] = reasons.get(r["adaptive"]["reason"], 0) + 1
    summary = _mean(rows)
    return {"iterations": summary["llm_calls"], **summary, "stop_reasons": reasons}


def differences(records: Sequence[dict], ts: Sequence[int], *, judged: bool, adaptive: bool) -> dict:
    """Paired differences on the same questions, each with its 95% interval: every later t
    against the first, and the adaptive run against the largest t. A few points' gain on
    200 questions can be noise; the interval says whether it is."""
    first, last = min(ts), max(ts)
    pairs = [(f"t={t} vs t={first}", lambda r, t=t: t, first) for t in sorted(ts) if t != first]
    if adaptive:
        pairs.append((f"adaptive vs t={last}", lambda r: r["adaptive"]["t"], last))
    found = {}
    for name, t_of, base in pairs:
        rows = [(_scores(r["iterations"], t_of(r), judged), _scores(r["iterations"], base, judged)) for r in records]
        found[name] = {
            metric: paired([a[metric] - b[metric] for a, b in rows])
            for metric in COMPARED
            if rows and rows[0][0][metric] is not None
        }
    return found


def paired(diffs: Sequence[float]) -> dict:
    half = Z95 * stdev(diffs) / sqrt(len(diffs)) if len(diffs) > 1 else None
    return {"mean": round(fmean(diffs), 4), "ci95": None if half is None else round(half, 4)}


def retrieval_rows(
    questions: Sequence[Question], retriever, *, top_k: int = 5, batch_size: int = 64
) -> list[dict[str, float]]:
    """Question-only retrieval, one row per question: recall@5/10/100 and nDCG@10 against
    the qrels and, where the set has answers, what iteration 1 reads: answer and gold
    recall of the top ``top_k``."""
    rows = []
    for start in range(0, len(questions), batch_size):
        chunk = questions[start : start + batch_size]
        texts = [q.text for q in chunk]
        # The top k asked for on their own, as the loop asks: a fusion reads its rankings
        # to a depth that depends on k, so the first k of 100 may differ from them.
        tops = retriever.retrieve_many(texts, top_k) if any(q.answers for q in chunk) else [()] * len(chunk)
        for question, ranked, top in zip(chunk, retriever.retrieve_many(texts, max(RECALL_KS)), tops):
            ids = [p.source for p in ranked]
            row = {f"recall@{k}": metrics.recall_at(ids, question.relevant, k) for k in RECALL_KS}
            row["ndcg@10"] = metrics.ndcg_at(ids, question.relevant, 10)
            if question.answers:
                row.update({f"{name}@{top_k}": value for name, value in retrieval_scores(top, question).items()})
            rows.append(row)
    return rows


def retrieval_metrics(questions: Sequence[Question], retriever, *, top_k: int = 5) -> dict[str, float]:
    """``retrieval_rows`` averaged over the questions."""
    return _mean(retrieval_rows(questions, retriever, top_k=top_k))


def compare_retrieval(questions: Sequence[Question], retrievers: dict, *, base: str, top_k: int = 5) -> dict:
    """Every retrieval setting scored on the same questions, and each one's paired
    differences from ``base`` with their 95% intervals."""
    rows = {name: retrieval_rows(questions, retriever, top_k=top_k) for name, retriever in retrievers.items()}
    return {
        "settings": {name: _mean(found) for name, found in rows.items()},
        "differences": {
            f"{name} vs {base}": {
                metric: paired([a[metric] - b[metric] for a, b in zip(found, rows[base])]) for metric in found[0]
            }
            for name, found in rows.items()
            if name != base and found
        },
    }


class RecordLog:
    """Per-question records as JSONL: a header with the settings, then one line per
    question, flushed as each finishes so an interrupted run resumes where it stopped."""

    def __init__(self, path: Path, config: dict) -> None:
        self.path = Path(path)
        self.config = config
        self.records: dict[str, dict] = {}
        if self.path.exists() and self.path.stat().st_size:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"config": config}) + "\n", "utf-8")

    def _load(self) -> None:
        lines = self.path.read_text("utf-8").splitlines()
        header = json.loads(lines[0]).get("config") if lines[0].startswith("{") else None
        if header != self.config:
            raise ConfigMismatch(
                f"{self.path} holds records made with other settings ({header}); delete it or choose another --out"
            )
        for line in lines[1:]:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the line being written when the run was killed
            self.records[record["id"]] = record
        # Rewrite without a torn last line, so appends start on a fresh line.
        body = [json.dumps(r, ensure_ascii=False) for r in self.records.values()]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("\n".join([lines[0], *body]) + "\n", "utf-8")
        tmp.replace(self.path)

    def append(self, record: dict) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.records[record["id"]] = record
