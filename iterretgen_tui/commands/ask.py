"""`iterretgen-chat ask QUESTION --folder FOLDER`: one answer, headless.

The readable mode streams each iteration to stderr and prints the answer with
numbered sources on stdout; ``--json`` prints one object with the full trace.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

from ..cli import UserError, add_loop_flags, add_model_flags, settings_from
from ..engine.loop.events import DraftDone, FinalAnswer, IterationStarted, PassagesRetrieved, Token
from ..engine.passages import Passage
from ..engine.loop.evidence import Evidence
from ..engine.loop.prompts import QuestionTooLong
from ..engine.loop.trust import weakness


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question")
    parser.add_argument("--folder", required=True, type=Path, help="the document folder")
    parser.add_argument("--iterations", type=int, help="maximum iterations T")
    parser.add_argument("--top-k", type=int, dest="top_k", help="passages per retrieval")
    parser.add_argument("--no-adaptive", action="store_true", help="always run all T iterations")
    add_loop_flags(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_model_flags(parser)


def check_folder(folder: Path) -> Path:
    folder = folder.expanduser()
    if not folder.exists():
        raise UserError(f"folder not found: {folder}")
    if not folder.is_dir():
        raise UserError(f"not a folder: {folder}")
    return folder.resolve()


def passage_json(p: Passage) -> dict:
    return {
        "source": p.source,
        "location": p.location,
        "title": p.title,
        "passage_id": p.id,
        "score": round(p.score, 6),
        "text": p.text,
    }


def evidence_json(evidence: Evidence | None) -> dict | None:
    if evidence is None:
        return None
    return {
        "text": evidence.text,
        "n": evidence.n,
        "passage_id": evidence.passage_id,
        "source": evidence.source,
        "location": evidence.location,
        "score": round(evidence.score, 6),
    }


def answer_json(final: FinalAnswer, seconds: float) -> dict:
    weak = weakness(final)
    return {
        "question": final.question,
        "answer": final.answer,
        "kind": final.kind,
        "evidence": evidence_json(final.evidence),
        "weakness": weak.value if weak else None,  # looped, no_answer, unsupported
        "sources": [dict(n=n, **passage_json(p)) for n, p in enumerate(final.sources, 1)],
        "stop_reason": final.stop_reason.value,
        "iterations": [
            {
                "t": it.t,
                "query": it.query,
                "passages": [passage_json(p) for p in it.passages],
                "draft": it.draft,
                "answer": it.answer,
                "seconds": round(it.seconds, 3),
                "prompt_tokens": it.prompt_tokens,
                "trimmed": it.trimmed,
                "looped": it.looped,
                "stated": it.stated,
                "asked": it.asked,
                "evidence": evidence_json(it.evidence),
            }
            for it in final.iterations
        ],
        "seconds": round(seconds, 3),
    }


def run(args: argparse.Namespace) -> int:
    from ..session import Session

    if not args.question.strip():
        raise UserError("the question is empty")
    folder = check_folder(args.folder)
    settings = settings_from(
        args,
        iterations=args.iterations,
        top_k=args.top_k,
        adaptive=False if args.no_adaptive else None,
    )
    say = (lambda message: None) if args.json else (lambda message: print(message, file=sys.stderr))
    started = time.perf_counter()
    session = Session(settings)
    session.load_models(status=say)
    session.open_folder(folder, on_wait=lambda message: print(message, file=sys.stderr))
    if not session.info()["passages"]:
        raise UserError(f"no readable documents in {folder}")
    final = None
    try:
        for event in session.ask(args.question, cancel=threading.Event()):
            if isinstance(event, FinalAnswer):
                final = event
            elif args.json:
                continue
            elif isinstance(event, IterationStarted):
                say(f"\n── Iteration {event.t} ──")
            elif isinstance(event, PassagesRetrieved):
                say("retrieved: " + ", ".join(Path(p.source).name for p in event.passages))
            elif isinstance(event, Token):
                sys.stderr.write(event.text)
                sys.stderr.flush()
            elif isinstance(event, DraftDone):
                say(f"\n({event.trace.seconds:.1f} s)")
    except QuestionTooLong as exc:
        raise UserError(str(exc)) from None
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(answer_json(final, seconds), ensure_ascii=False))
        return 0
    say(final.stop_reason.describe(len(final.iterations)))
    print(readable_answer(final))
    for n, p in enumerate(final.sources, 1):
        print(f"[{n}] {p.title} - {p.citation}")
    return 0


def readable_answer(final: FinalAnswer) -> str:
    """The answer, then the evidence; a weak answer is said to be weak, evidence first."""
    evidence = (
        f"From your documents: \"{final.evidence.text}\" [{final.evidence.n}]"
        if final.evidence else "From your documents: nothing relevant found."
    )
    weak = weakness(final)
    if weak is None:
        return f"\n{final.answer}\n\n{evidence}\n"
    stated = (f"\nThe model's answer (unverified): {final.answer}"
              if final.iterations and final.iterations[-1].stated else "")
    return f"\n{weak.message()}\n{evidence}{stated}\n"
