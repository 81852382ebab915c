"""`iterretgen-chat ask QUESTION --folder FOLDER`: one answer, headless.

The readable mode streams each iteration to stderr and prints the answer with
numbered sources on stdout; ``--json`` prints one object with the full trace.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import threading
import time
from pathlib import Path

from .. import config, read_ahead
from ..cli import UserError, add_loop_flags, add_model_flags, flag_overrides
from ..engine.indexing.documents import check_folder
from ..engine.loop.conversation import turns_of
from ..engine.loop.events import (
    DraftDone,
    FinalAnswer,
    FirstAnswer,
    IterationStarted,
    PassagesRetrieved,
    QuestionRead,
    Token,
)
from ..engine.loop.serialize import final_to_dict
from ..engine.loop.trust import Weakness, shown_reply, weakness, weakness_message
from ..engine.passages import by_section
from ..history import Conversation, History


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question")
    parser.add_argument("--folder", required=True, type=Path, help="the document folder")
    parser.add_argument("--iterations", type=int, help="maximum iterations T")
    parser.add_argument("--top-k", type=int, dest="top_k", help="passages per retrieval")
    parser.add_argument("--no-adaptive", action="store_true", help="always run all T iterations")
    add_loop_flags(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    conversation = parser.add_mutually_exclusive_group()
    conversation.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the last conversation over this folder (its turns are read with the question)",
    )
    conversation.add_argument("--cid", type=int, metavar="ID", help="continue the conversation with this id")
    add_model_flags(parser)


def execute(args: argparse.Namespace) -> int:
    from ..session import Session

    if not args.question.strip():
        raise UserError("the question is empty")
    folder = check_folder(args.folder)
    overrides = flag_overrides(
        args,
        iterations=args.iterations,
        top_k=args.top_k,
        adaptive=False if args.no_adaptive else None,
    )
    settings = config.load(overrides)
    say = (lambda message: None) if args.json else (lambda message: print(message, file=sys.stderr))
    history = History()
    conversation = continued(history, args, folder)  # before the slow load: a wrong id fails at once
    # The last answer's read-ahead would only take this question's cores; a follow-up
    # starts from what it has saved by now.
    read_ahead.stop()
    started = time.perf_counter()
    session = Session(settings, fallback_reader=True)
    session.load_models(status=say)
    if args.json and session.reader_note:  # said on stderr even when stdout is JSON
        print(session.reader_note, file=sys.stderr)
    session.open_folder(folder, on_wait=lambda message: print(message, file=sys.stderr))
    info = session.info()
    if not info["passages"]:
        raise UserError(f"no readable documents in {folder}")
    final = None
    turns = turns_of(conversation.turns) if conversation else ()
    session.recall_ahead(turns)
    for event in session.ask(args.question, cancel=threading.Event(), turns=turns):
        if isinstance(event, FinalAnswer):
            final = event
        elif args.json:
            continue
        elif isinstance(event, IterationStarted):
            say(f"\n── Iteration {event.t} ──")
        elif isinstance(event, QuestionRead):
            say(event.describe())
        elif isinstance(event, PassagesRetrieved):
            found = ", ".join(Path(p.source).name for p in event.passages) or "nothing new"
            say(f"retrieved: {found}" + (f" (and {event.kept} kept from before)" if event.kept else ""))
        elif isinstance(event, Token):
            sys.stderr.write(event.text)
            sys.stderr.flush()
        elif isinstance(event, DraftDone):
            say(f"\n({event.trace.seconds:.1f} s)")
        elif isinstance(event, FirstAnswer):
            say(f"first answer, {event.seconds:.1f} s after the question: {said_as_shown(event.answer)}")
    seconds = time.perf_counter() - started
    cid = conversation.id if conversation else history.start(args.question, str(folder))
    history.add_turn(cid, final)
    if settings.read_ahead and not settings.llm_server:  # a server keeps no state of ours
        read_ahead.start(overrides, cid)
    if args.json:
        weak = weakness(final)
        print(
            json.dumps(
                {
                    **final_to_dict(final),
                    "weakness": weak.value if weak else None,  # looped, no_answer, unsupported
                    "seconds": round(seconds, 3),
                    "conversation_id": cid,  # `ask --cid ID` continues it
                    # Which reader answered: the default may still be SmolLM2 until it is pulled.
                    "models": {key: info[key] for key in ("llm", "llm_server", "embedder", "embed_backend", "device")},
                },
                ensure_ascii=False,
            )
        )
        return 0
    say(final.stop_reason.describe(final.stopped_at))
    print(readable_answer(final))
    for section in by_section(final.sources):
        named = f"{section.title} - " if section.title else ""
        if len(section.numbered) == 1:
            [(n, passage)] = section.numbered
            print(f"[{n}] {named}{passage.citation}")
        else:
            print(f"{named}{section.source}: " + ", ".join(f"[{n}] {p.location}".rstrip() for n, p in section.numbered))
    say(f"conversation {cid}: `ask QUESTION --folder {shlex.quote(str(args.folder))} --continue` asks a follow-up")
    return 0


def continued(history: History, args: argparse.Namespace, folder: Path) -> Conversation | None:
    """The conversation the question continues: the one --cid names (over ``folder``),
    or with --continue the last one over ``folder`` (a new one when there is none yet);
    None without either."""
    if args.cid is not None:
        try:
            conversation = history.get(args.cid)
        except KeyError:
            raise UserError(f"no conversation {args.cid} in the history ({history.path})") from None
        if Path(conversation.folder) != folder:  # its turns are about another folder's documents
            raise UserError(
                f"conversation {args.cid} is over {conversation.folder}: "
                f"ask it with --folder {shlex.quote(conversation.folder)}"
            )
        return conversation
    if args.continue_last:
        last = history.last_in(str(folder))
        return history.get(last) if last is not None else None
    return None


def readable_answer(final: FinalAnswer) -> str:
    """The answer, then the evidence; a weak answer is said to be weak, evidence first;
    a question asked back, as it is (the sources list where its names are from)."""
    if final.asked_back:
        return f"\n{final.asked_back}\n"
    evidence = (
        "From your documents: " + "\n  ".join(f'"{quote.text}" [{quote.n}]' for quote in final.evidence.quotes)
        if final.evidence
        else "From your documents: nothing relevant found."
    )
    weak = weakness(final)
    said = said_as_shown(final)
    if weak is None:
        return f"\n{said}\n\n{evidence}\n"
    stated = (
        f"\nThe model's answer (unverified): {said}"
        if final.iterations and final.iterations[-1].stated and weak is not Weakness.NOT_FOUND
        else ""
    )
    return f"\n{weakness_message(final, weak)}\n{evidence}{stated}\n"


def said_as_shown(final: FinalAnswer) -> str:
    """The answer as the chat shows it: one that only restates the question ("What does
    F5 open?" -> "F5") gives way to the draft's reasoning."""
    headline, body = shown_reply(final)
    return headline or body or final.answer
