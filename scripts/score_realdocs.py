#!/usr/bin/env python
"""How the answers a user reads fare on real documentation. Printed as JSON.

Runs the real loop (the app's default settings; any --llm) over the questions of
tests/data/realdocs-questions.jsonl against tests/data/realdocs/ (Node.js API docs, see
tests/data/realdocs-LICENSE.txt) and reports, over the questions:
- key_fact: the answer or the evidence states the question's key fact
  (key_fact_answer, key_fact_evidence: each on its own; key_fact_first_quote: the
  evidence's first quote alone, without the sentence quoted beside it; key_fact_reply:
  the reply the chat shows, whose draft stands in for an answer that only restates the
  question, "What does du -s do?" -> "du -s");
- looping_drafts: the model's last draft repeated itself (the loop guard cut it, where
  there is one); looping_answers: the text the user reads repeats itself;
- stated: the last iteration stated an answer;
- declined: the chat said the documents do not say (every question here has an answer
  in them, so each decline is a false one);
- unsupported: the chat marked the answer unsupported by the passages read (a number
  its evidence's passages do not hold, or no word any passage holds);
- right_file: the file cited first (the evidence's, else source [1]) holds the key fact
  (the question's "file", or one of its list where a folder holds the text twice);
  right_file_in_sources: any source does; each record names the file cited first (cited);
- seconds per question (models loaded and folder indexed beforehand), seconds from the
  question to the first stated answer (what the chat shows at once), and the CPU.
It also runs on older code (no evidence, no guard, no check: those fields fall back).
With --followups, the questions are follow-ups (tests/data/realdocs-followups.jsonl): each
item's "first" question is asked, then its question is asked after it, as `ask` then
`ask --continue` do; the follow-up is scored, with the question as read (`standalone`).
With --read-ahead as well, the conversation is read ahead between the two, untimed, as the
chat does while the user reads the first answer (Session.read_ahead).
--folder and --questions score another folder with questions of the same layout (an item
with "first" is a follow-up pair). An item with "unanswerable": true asks what the folder
does not hold (another module, another command, an unrelated fact): it is scored apart
(`unanswerable`), as declined (the chat said the documents do not say) and as warned
(declined, or its answer marked unsupported), and the other figures are over the rest.
Usage: scripts/score_realdocs.py [--llm NAME] [--sample N] [--records FILE.jsonl] [--followups [--read-ahead]]
                                 [--folder DIR --questions FILE.jsonl]
(--sample: N questions spread evenly over the set, which is ordered by file; on a slow
machine a before/after pair on the same sample is what fits.)
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import threading
import time
from pathlib import Path
from statistics import fmean, median

from iterretgen_tui import config
from iterretgen_tui.engine.loop.conversation import Turn, turn_of
from iterretgen_tui.engine.loop.events import FinalAnswer
from iterretgen_tui.engine.loop.repetition import loop_start
from iterretgen_tui.engine.loop.trust import Weakness, declined, reply_text, weakness
from iterretgen_tui.session import Session

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
_ANSWER_MARKER = re.compile(r"the answer is|^\W*answer\s*:", re.IGNORECASE | re.MULTILINE)


def normal(text: str) -> str:
    return " ".join(text.lower().replace("`", "").split())


def states(text: str, keys: list[str]) -> bool:
    """Some key (a word or phrase, case and code quotes ignored) occurs as a whole in text."""
    text = normal(text)
    return any(re.search(r"(?<!\w)" + re.escape(normal(k)) + r"(?!\w)", text) for k in keys)


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def score(final: FinalAnswer, item: dict, seconds: float) -> dict:
    evidence = getattr(final, "evidence", None)  # None on code from before the evidence
    last = final.iterations[-1] if final.iterations else None
    shown = final.draft if getattr(final, "kind", "factoid") == "factoid" else final.answer
    stated = getattr(last, "stated", None)
    if stated is None:  # before the answer was asked for: the draft's own "So the answer is X."
        stated = bool(last and _ANSWER_MARKER.search(last.draft))
    # What the user reads under the answer: one quote, or two on newer code.
    quoted = list(getattr(evidence, "texts", [evidence.text])) if evidence else []
    first_file = evidence.source if evidence else (final.sources[0].source if final.sources else "")
    # A folder may hold the same text twice (a book's page and its print-all page).
    files = item["file"] if isinstance(item["file"], list) else [item["file"]]
    return {
        "id": item["id"],
        "kind": item["kind"],
        "unanswerable": item.get("unanswerable", False),
        "standalone": getattr(final, "standalone", ""),
        "asked_as": getattr(final, "kind", "factoid"),
        "answer": final.answer,
        "evidence": quoted[0] if quoted else "",
        "evidence_also": quoted[1] if len(quoted) > 1 else "",
        "key_fact_answer": states(final.answer, item["key"]),
        "key_fact_evidence": any(states(text, item["key"]) for text in quoted),
        "key_fact_first_quote": bool(quoted) and states(quoted[0], item["key"]),
        "key_fact_reply": states(reply_text(final), item["key"]),
        "looping_draft": bool(getattr(last, "looped", False) or loop_start(final.draft) is not None),
        "looping_answer": loop_start(shown) is not None,
        "stated": stated,
        "declined": declined(final),
        "unsupported": weakness(final) is Weakness.UNSUPPORTED,
        "unsaid": final.unsaid,
        "grounded": final.grounded,
        "evidence_score": round(evidence.score, 4) if evidence else None,
        "evidence_support": round(evidence.support, 4) if evidence else None,
        "right_file": Path(first_file).name in files,
        "cited": Path(first_file).name,  # a miss may cite another file that holds the key too
        "right_file_in_sources": any(Path(p.source).name in files for p in final.sources),
        "iterations": len(final.iterations),
        "seconds": round(seconds, 2),
        "first_answer_seconds": first_answer_seconds(final),
        "iteration_seconds": [round(trace.seconds, 2) for trace in final.iterations],
        "prompt_tokens": [trace.prompt_tokens for trace in final.iterations],
        "drafts": [trace.draft for trace in final.iterations],
    }


def first_answer_seconds(final: FinalAnswer) -> float | None:
    """Seconds from the question to the first stated answer; None where none was stated
    (or on code from before the first answer was timed)."""
    seconds = getattr(final, "first_answer_seconds", None)
    return seconds and round(seconds, 2)


def answer(session: Session, question: str, turns: tuple[Turn, ...] = ()) -> FinalAnswer:
    final = None
    for event in session.ask(question, cancel=threading.Event(), turns=turns):
        if isinstance(event, FinalAnswer):
            final = event
    return final


def summary(rows: list[dict]) -> dict:
    def share(key: str, subset: list[dict] = rows) -> float | None:
        return round(fmean(float(r[key]) for r in subset), 3) if subset else None

    by_kind = {kind: [r for r in rows if r["kind"] == kind] for kind in ("factoid", "open")}
    return {
        "n": len(rows),
        "key_fact": round(fmean(float(r["key_fact_answer"] or r["key_fact_evidence"]) for r in rows), 3),
        "key_fact_answer": share("key_fact_answer"),
        "key_fact_evidence": share("key_fact_evidence"),
        "key_fact_first_quote": share("key_fact_first_quote"),
        "key_fact_reply": share("key_fact_reply", [r for r in rows if "key_fact_reply" in r]),
        "key_fact_by_kind": {
            k: round(fmean(float(r["key_fact_answer"] or r["key_fact_evidence"]) for r in v), 3)
            for k, v in by_kind.items()
            if v
        },
        "looping_drafts": share("looping_draft"),
        "looping_answers": share("looping_answer"),
        "stated": share("stated"),
        "declined": share("declined"),
        "unsupported": share("unsupported"),
        "right_file": share("right_file"),
        "right_file_in_sources": share("right_file_in_sources"),
        "kind_agreement": round(fmean(float(r["kind"] == r["asked_as"]) for r in rows), 3),
        "seconds_per_question_mean": round(fmean(r["seconds"] for r in rows), 2),
        "seconds_per_question_median": round(median(r["seconds"] for r in rows), 2),
        "iterations_mean": round(fmean(r["iterations"] for r in rows), 2),
    }


def unanswerable_summary(rows: list[dict]) -> dict:
    """How often the chat told the user that the folder does not hold the answer."""
    return {
        "n": len(rows),
        "declined": round(fmean(float(r["declined"]) for r in rows), 3),
        "warned": round(fmean(float(r["declined"] or r["unsupported"]) for r in rows), 3),
        "seconds_per_question_median": round(median(r["seconds"] for r in rows), 2),
    }


def work_between(before, after) -> dict:
    """What llama.cpp evaluated and decoded between two of its counts (``Work``'s fields)."""
    return {field: round(b - a, 3) for field, a, b in zip(after._fields, before, after)}


def rates(rows: list[dict]) -> dict:
    """The prompt and decoding rates llama.cpp measured over the questions: the machine's
    speed while they ran (a shared machine's varies by the hour), beside which the
    seconds are read. Empty for a reader that counts nothing (a served model)."""
    counted = [r["work"] for r in rows if r.get("work")]
    if not counted:
        return {}
    total = {field: sum(work[field] for work in counted) for field in counted[0]}
    return {
        "prompt_tokens_per_second": round(total["prompt_tokens"] / total["prompt_seconds"], 1),
        "decode_tokens_per_second": round(total["decoded"] / total["decode_seconds"], 1),
    }


def first_answers(rows: list[dict]) -> dict:
    """The median seconds to the first stated answer, over the questions that stated one
    (records from older code have none), and their share."""
    firsts = [r["first_answer_seconds"] for r in rows if r.get("first_answer_seconds") is not None]
    return {
        "first_answer_seconds_median": round(median(firsts), 2) if firsts else None,
        "first_answer_stated": round(len(firsts) / len(rows), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llm", help="chat model (default: the app's)")
    parser.add_argument("--sample", type=int, help="only N questions, spread evenly over the set")
    parser.add_argument(
        "--records", type=Path, help="one JSON line per question; a rerun skips the questions already there"
    )
    parser.add_argument("--followups", action="store_true", help="the follow-up pairs, each after its first question")
    parser.add_argument("--read-ahead", action="store_true", help="follow-ups: read the conversation ahead first")
    parser.add_argument("--folder", type=Path, default=DATA / "realdocs", help="another documentation folder")
    parser.add_argument(
        "--questions", type=Path, help="its questions, in the layout of tests/data's (follow-ups have 'first')"
    )
    args = parser.parse_args()
    questions = args.questions or DATA / ("realdocs-followups.jsonl" if args.followups else "realdocs-questions.jsonl")
    items = [json.loads(line) for line in questions.read_text("utf-8").splitlines()]
    if args.sample and args.sample < len(items):
        items = [items[i * len(items) // args.sample] for i in range(args.sample)]
    settings = config.load({"llm": args.llm})
    session = Session(settings)
    session.load_models()
    session.open_folder(args.folder)
    done = {}
    if args.records and args.records.exists():
        done = {r["id"]: r for r in map(json.loads, args.records.read_text("utf-8").splitlines())}
    rows = []
    counts = getattr(session.generator, "evaluated", None)  # llama.cpp's; a served model has none
    for item in items:
        if item["id"] in done:
            rows.append(done[item["id"]])
            continue
        turns = (turn_of(answer(session, item["first"])),) if "first" in item else ()
        if args.read_ahead:
            session.read_ahead(turns)
        before = counts() if counts else None
        started = time.perf_counter()
        final = answer(session, item["question"], turns)
        rows.append(score(final, item, time.perf_counter() - started))
        if counts:
            rows[-1]["work"] = work_between(before, counts())
        if args.records:
            with args.records.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
    answerable = [r for r in rows if not r.get("unanswerable")]
    unanswerable = [r for r in rows if r.get("unanswerable")]
    report = {
        "llm": session.info()["llm"],
        "embedder": session.info()["embedder"],
        "cpu": cpu_name(),
        "settings": {
            k: getattr(settings, k)
            for k in ("iterations", "top_k", "adaptive", "keep_passages", "passage_order", "query_mode", "max_tokens")
        },
        "reader_passage_order": session.generator.passage_order,  # what passage_order "auto" means here
        "folder": str(args.folder),
        "questions": str(questions),
        "read_ahead": args.read_ahead,
        **(summary(answerable) if answerable else {}),
        **({"unanswerable": unanswerable_summary(unanswerable)} if unanswerable else {}),
        **(first_answers(answerable) if answerable else {}),
        **rates(rows),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
