"""Evaluation on conversations (MTRAG-UN's layout, ../shared/data/README.md): each task's
earlier turns as given, its last user turn answered as the chat answers it.

Per task: the first search made from the last turn alone and the one the app makes (the
standalone question), each scored against the gold passages; the reply the chat shows,
scored against the reference answer (MTRAG's Recall: the share of the reference's words
the reply holds; ROUGE-L; K-Precision: the share of the reply's content words found in
the passages read); whether it declined (right for an unanswerable task) or asked back
(right for an underspecified one). Optionally the same task asked alone, as the app did
before it read conversations, for paired differences.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean, median

from ..loop import iterretgen
from ..loop.ambiguity import ambiguity, read_reply
from ..loop.answers import content_words, normalize_answer
from ..loop.conversation import Asked, Turn, context_search
from ..loop.events import FinalAnswer
from ..loop.generator import Generator
from ..loop.options import LoopOptions
from ..loop.queries import PassageRetriever, first_searches, search_first
from ..loop.trust import asks_back, declined, read_texts, reply_text, weakness
from ..passages import Passage
from . import metrics
from .datasets import DatasetError, _jsonl
from .evaluate import paired

CONVERSATIONS = "conversations.jsonl"
ANSWERABLE = ("ANSWERABLE", "PARTIAL")  # a reference answer the documents (partly) hold
UNANSWERABLE, UNDERSPECIFIED = "UNANSWERABLE", "UNDERSPECIFIED"
SEARCH_DEPTH = 10  # nDCG@10


@dataclass(frozen=True)
class Task:
    id: str
    turns: tuple[Turn, ...]  # the conversation before the question, as given
    question: str  # the last user turn
    reference: str
    answerability: str
    relevant: dict[str, int]  # gold passage id -> relevance
    multi_turn: str  # Follow-up, Clarification or N/A


def has_conversations(directory: Path) -> bool:
    return (Path(directory) / CONVERSATIONS).is_file()


def load_tasks(directory: Path) -> tuple[Task, ...]:
    path = Path(directory) / CONVERSATIONS
    tasks = []
    for number, record in _jsonl(path):
        try:
            said = [(t["role"], str(t["text"])) for t in record["turns"]]
            if not said or said[-1][0] != "user":
                raise DatasetError(f"{CONVERSATIONS} line {number}: the last turn must be the user's")
            tasks.append(
                Task(
                    id=str(record["_id"]),
                    turns=pair_turns(said[:-1]),
                    question=said[-1][1],
                    reference=str((record.get("answers") or [""])[0]),
                    answerability=str(record.get("answerability", "ANSWERABLE")),
                    relevant={str(d): 1 for d in record.get("gold_doc_ids", [])},
                    multi_turn=_first(record.get("multi_turn")) or "N/A",
                )
            )
        except (KeyError, TypeError) as exc:
            raise DatasetError(f"{CONVERSATIONS} line {number}: missing or malformed {exc}") from None
    if not tasks:
        raise DatasetError(f"{path} has no conversations")
    return tuple(tasks)


def _first(value) -> str:
    return str(value[0]) if isinstance(value, list) and value else str(value or "")


def pair_turns(said: Sequence[tuple[str, str]]) -> tuple[Turn, ...]:
    """(role, text) turns as exchanges: each user turn with the assistant turn after it
    (an unanswered one with ""); consecutive user turns are joined."""
    turns: list[Turn] = []
    question = ""
    for role, text in said:
        if role == "user":
            question = f"{question} {text}".strip()
        else:
            turns.append(Turn(question, text))
            question = ""
    if question:
        turns.append(Turn(question, ""))
    return tuple(turns)


def token_recall(reply: str, reference: str) -> float:
    """The share of the reference's words (normalised, with repeats) the reply holds."""
    ref, got = Counter(normalize_answer(reference).split()), Counter(normalize_answer(reply).split())
    return sum((ref & got).values()) / sum(ref.values()) if ref else 0.0


def rouge_l(reply: str, reference: str) -> float:
    """ROUGE-L F1: the longest common subsequence of the normalised words."""
    a, b = normalize_answer(reply).split(), normalize_answer(reference).split()
    if not a or not b:
        return 0.0
    previous = [0] * (len(b) + 1)
    for word in a:
        row = [0]
        for j, other in enumerate(b, 1):
            row.append(previous[j - 1] + 1 if word == other else max(previous[j], row[j - 1]))
        previous = row
    lcs = previous[-1]
    if not lcs:
        return 0.0
    precision, recall = lcs / len(a), lcs / len(b)
    return 2 * precision * recall / (precision + recall)


def k_precision(reply: str, passages_text: Sequence[str]) -> float:
    """The share of the reply's content words found in the passages read (faithfulness)."""
    words = content_words(reply)
    if not words:
        return 0.0
    read = set(normalize_answer(" ".join(passages_text)).split())
    return len(words & read) / len(words)


def first_found(retriever: PassageRetriever, asked: Asked, k: int) -> list[Passage]:
    """The passages of the first search the loop makes for ``asked`` (with its
    conversation's search beside it, where it has turns)."""
    return search_first(first_searches(asked.searched, context_search(asked)), retriever, k)[1]


def search_scores(
    retriever: PassageRetriever, asked: Asked, task: Task, top_k: int, found: Sequence[Passage] | None = None
) -> dict[str, float]:
    """The first search for ``asked`` scored against the gold passages; ``found``: its top
    ``top_k`` where the caller has them already."""
    ranked = [p.source for p in first_found(retriever, asked, SEARCH_DEPTH)]
    # As the loop asks: a fusion's top k may differ from the deeper ranking's first k.
    top = [p.source for p in (found if found is not None else first_found(retriever, asked, top_k))]
    return {
        "gold_recall_at_5": metrics.gold_recall(top, task.relevant),
        "ndcg_at_10": metrics.ndcg_at(ranked, task.relevant, SEARCH_DEPTH),
    }


def answer_task(
    task: Task,
    turns: Sequence[Turn],
    *,
    retriever: PassageRetriever,
    generator: Generator,
    options: LoopOptions,
) -> dict:
    """The task's last turn answered as the chat answers it after ``turns``, scored."""
    started = time.perf_counter()
    final: FinalAnswer | None = None
    for event in iterretgen.run(
        task.question, retriever=retriever, generator=generator, options=options, cancel=threading.Event(), turns=turns
    ):
        if isinstance(event, FinalAnswer):
            final = event
    reply = reply_text(final)
    weak = weakness(final)
    asked = Asked(task.question, tuple(turns), final.standalone)
    return {
        "standalone": final.standalone,
        "search": search_scores(retriever, asked, task, options.top_k),
        "answer": final.answer,
        "reply": reply,
        "passage_ids": [p.source for p in final.sources],
        "grounded": final.grounded,
        "unsaid": final.unsaid,
        "weakness": weak.value if weak else None,
        "evidence_score": round(final.evidence.score, 4) if final.evidence else None,
        "evidence_support": round(final.evidence.support, 4) if final.evidence else None,
        "declined": declined(final),
        "asked_back": asks_back(final),
        "stop_reason": final.stop_reason.value,
        "iteration_answers": [trace.answer for trace in final.iterations],
        "answer_recall": token_recall(reply, task.reference),
        "rouge_l": rouge_l(reply, task.reference),
        "k_prec": k_precision(reply, read_texts(final)),
        "seconds": round(time.perf_counter() - started, 3),
    }


def search_task(task: Task, *, retriever: PassageRetriever, generator: Generator, top_k: int) -> dict:
    """The question read with its turns and searched with, unanswered (the searches alone),
    and whether the loop would ask back over what the first search found."""
    started = time.perf_counter()
    asked = read_reply(task.question, task.turns, generator, threading.Event())
    found = first_found(retriever, asked, top_k)
    return {
        "standalone": asked.standalone,
        "search": search_scores(retriever, asked, task, top_k, found),
        "asked_back": bool(ambiguity(asked, found)),
        "seconds": round(time.perf_counter() - started, 3),
    }


def evaluate_task(
    task: Task,
    *,
    retriever: PassageRetriever,
    generator: Generator,
    options: LoopOptions,
    alone_too: bool,
    search_only: bool = False,
) -> dict:
    """One task's record: the run with its conversation, and the last turn alone (its
    search always; its answer with ``alone_too``). ``search_only``: the question is read
    and searched with, not answered."""
    run = replace(options, adaptive=True)  # where the app stops
    record = {
        "id": task.id,
        "gold": bool(task.relevant),
        "answerability": task.answerability,
        "multi_turn": task.multi_turn,
        "question": task.question,
        "reference": task.reference,
        "conversation": (
            search_task(task, retriever=retriever, generator=generator, top_k=options.top_k)
            if search_only
            else answer_task(task, task.turns, retriever=retriever, generator=generator, options=run)
        ),
    }
    # The naive query, for scale: the user's previous turn and the last one glued.
    glued = f"{task.turns[-1].question} {task.question}" if task.turns else task.question
    record["glued"] = {"search": search_scores(retriever, Asked(glued), task, options.top_k)}
    if alone_too and not search_only:
        record["last_turn"] = answer_task(task, (), retriever=retriever, generator=generator, options=run)
    else:
        record["last_turn"] = {"search": search_scores(retriever, Asked(task.question), task, options.top_k)}
    return record


def _share(values: Sequence[float]) -> float | None:
    return round(fmean(values), 4) if values else None


def blocks(records: Sequence[dict], side: str) -> dict:
    """The answer metrics of one side ("conversation" or "last_turn") of the records;
    with --search-only, whether it asks back (decided before any draft) and nothing else."""

    def sides(kinds: tuple[str, ...], key: str = "reply") -> list[dict]:
        return [r[side] for r in records if r["answerability"] in kinds and key in r[side]]

    answerable, unanswerable = sides(ANSWERABLE), sides((UNANSWERABLE,))
    underspecified = sides((UNDERSPECIFIED,), "asked_back")
    return {
        "answerable": {
            "n": len(answerable),
            **{m: _share([a[m] for a in answerable]) for m in ("answer_recall", "rouge_l", "k_prec")},
            "answered": _share([float(not a["declined"]) for a in answerable]),
            "asked_back": _share([float(a["asked_back"]) for a in sides(ANSWERABLE, "asked_back")]),
        },
        "unanswerable": {"n": len(unanswerable), "abstained": _share([float(a["declined"]) for a in unanswerable])},
        "underspecified": {
            "n": len(underspecified),
            "asked_back": _share([float(a["asked_back"]) for a in underspecified]),
        },
    }


def searched(records: Sequence[dict]) -> list[dict]:
    """The tasks whose search is scored: answerable, with gold passages."""
    return [r for r in records if r["answerability"] in ANSWERABLE and r["gold"]]


def search_block(records: Sequence[dict], side: str) -> dict:
    rows = [r[side]["search"] for r in searched(records)]
    return {"n": len(rows), **{m: _share([row[m] for row in rows]) for m in ("gold_recall_at_5", "ndcg_at_10")}}


def summarize(records: Sequence[dict]) -> dict:
    """The whole run: searches, answers by answerability, seconds, the same per
    multi-turn type, and paired differences against the last turn asked alone."""
    summary = {
        "n": len(records),
        "search": {
            "last_turn": search_block(records, "last_turn"),
            "last_two_turns": search_block(records, "glued"),
            "conversation": search_block(records, "conversation"),
            "differences": search_differences(records),
        },
        **blocks(records, "conversation"),
        "seconds_median": round(median(r["conversation"]["seconds"] for r in records), 3) if records else None,
    }
    by_type = {}
    for kind in sorted({r["multi_turn"] for r in records}):
        chosen = [r for r in records if r["multi_turn"] == kind]
        by_type[kind] = {
            "n": len(chosen),
            "search": {side: search_block(chosen, side) for side in ("last_turn", "conversation")},
            **blocks(chosen, "conversation"),
        }
    summary["by_multi_turn"] = by_type
    if records and all("reply" in r["last_turn"] for r in records):
        summary["last_turn_alone"] = blocks(records, "last_turn")
        summary["against_last_turn"] = answer_differences(records)
    return summary


def search_differences(records: Sequence[dict]) -> dict:
    rows = searched(records)
    return {
        f"conversation vs {side}": {
            m: paired([r["conversation"]["search"][m] - r[side]["search"][m] for r in rows])
            for m in ("gold_recall_at_5", "ndcg_at_10")
        }
        for side in ("last_turn", "glued")
        if rows
    }


def answer_differences(records: Sequence[dict]) -> dict:
    """Conversation minus last turn alone, on the same tasks, with 95% intervals."""
    found = {}
    groups = {
        "answerable": (
            [r for r in records if r["answerability"] in ANSWERABLE],
            ("answer_recall", "rouge_l", "k_prec"),
        ),
        "unanswerable": ([r for r in records if r["answerability"] == UNANSWERABLE], ("declined",)),
    }
    for name, (rows, names) in groups.items():
        if rows:
            found[name] = {
                m: paired([float(r["conversation"][m]) - float(r["last_turn"][m]) for r in rows]) for m in names
            }
    return found


def report(summary: dict) -> str:
    """The summary as a few readable lines (the JSON holds everything)."""

    def pct(value) -> str:
        return "-" if value is None else f"{100 * value:.1f}"

    search = summary["search"]
    answerable, unanswerable = summary["answerable"], summary["unanswerable"]
    lines = [
        f"{summary['dataset']}: {summary['n']} conversations",
        f"search gold recall@5 / nDCG@10 ({search['conversation']['n']} answerable with gold passages): "
        f"last turn {pct(search['last_turn']['gold_recall_at_5'])} / {pct(search['last_turn']['ndcg_at_10'])}, "
        f"last two user turns {pct(search['last_two_turns']['gold_recall_at_5'])} / "
        f"{pct(search['last_two_turns']['ndcg_at_10'])}, "
        f"as read {pct(search['conversation']['gold_recall_at_5'])} / {pct(search['conversation']['ndcg_at_10'])}",
        f"answerable ({answerable['n']}): answer recall {pct(answerable['answer_recall'])}, "
        f"ROUGE-L {pct(answerable['rouge_l'])}, K-precision {pct(answerable['k_prec'])}, "
        f"answered {pct(answerable['answered'])}, asked back {pct(answerable['asked_back'])}",
        f"unanswerable ({unanswerable['n']}): abstained {pct(unanswerable['abstained'])}",
        f"underspecified ({summary['underspecified']['n']}): asked back {pct(summary['underspecified']['asked_back'])}",
        f"median seconds per task: {summary['seconds_median']}",
    ]
    alone = summary.get("last_turn_alone")
    if alone:
        lines.append(
            f"last turn alone: answer recall {pct(alone['answerable']['answer_recall'])}, "
            f"answered {pct(alone['answerable']['answered'])}, abstained {pct(alone['unanswerable']['abstained'])}"
        )
    return "\n".join(lines)
