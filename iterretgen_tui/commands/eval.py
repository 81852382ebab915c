"""`iterretgen-chat eval DATASET_DIR`: the paper's metrics per iteration on a dataset.

The corpus is indexed through the same store as folders (cached), every question runs
through the same loop the TUI drives, and each finished question is appended to a JSONL
beside the results, so an interrupted run picks up where it stopped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from .. import paths, read_ahead
from ..cli import UserError, add_loop_flags, add_model_flags, settings_from
from ..engine.counting import counted


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dataset", type=Path, metavar="DATASET_DIR", help="folder with corpus.jsonl, queries.jsonl, qrels.tsv"
    )
    parser.add_argument(
        "--iterations",
        default="1,2,3",
        type=_iterations,
        metavar="1,2,3",
        help="iterations to score, e.g. 1,2,3 (one run to the largest scores all)",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--top-k", type=int, dest="top_k", metavar="K", help="passages per retrieval")
    parser.add_argument("--judge", action="store_true", help="also score Acc† with an LLM judge")
    parser.add_argument("--judge-llm", metavar="PATH", help="the judge's GGUF model (default: the chat model)")
    parser.add_argument(
        "--out", type=Path, metavar="FILE", help="results JSON; records (.jsonl) and plot (.png) beside it"
    )
    parser.add_argument(
        "--draft-source",
        choices=["model", "gold"],
        default="model",
        help="gold: form the next query from the gold answer (retrieval ceiling)",
    )
    stops = parser.add_mutually_exclusive_group()
    stops.add_argument("--no-adaptive", action="store_true", help="do not report the adaptive-stop run")
    stops.add_argument(
        "--adaptive-only",
        action="store_true",
        help="run each question only as far as the app's adaptive stop, up to the largest of --iterations, "
        "and score that run alone (about half the generations)",
    )
    add_loop_flags(parser)
    parser.add_argument(
        "--against-last-turn",
        dest="against_last_turn",
        action="store_true",
        help="conversation sets: also answer each last turn alone, for paired differences (twice the time)",
    )
    parser.add_argument(
        "--search-only",
        dest="search_only",
        action="store_true",
        help="conversation sets: read each last turn with its conversation and score the search, answering nothing",
    )
    parser.add_argument(
        "--no-replay",
        action="store_true",
        help="generate every prompt anew instead of replaying identical prompts' greedy generations from earlier runs",
    )
    add_model_flags(parser)


def _iterations(text: str) -> list[int]:
    try:
        ts = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected iterations like 1,2,3, not {text!r}") from None
    if not ts or ts[0] < 1:
        raise argparse.ArgumentTypeError("iterations must be positive integers")
    return ts


class Progress:
    """Questions done, rate and ETA on stderr: redrawn in place on a terminal, a line
    every 30 s otherwise (logs of background runs stay readable)."""

    def __init__(self, total: int, done: int = 0) -> None:
        self.total, self.done, self.fresh = total, done, 0
        self.started = self.shown = time.monotonic()
        self.tty = sys.stderr.isatty()

    def step(self) -> None:
        self.done += 1
        self.fresh += 1
        now = time.monotonic()
        if self.tty or now - self.shown >= 30 or self.done == self.total:
            self.shown = now
            rate = self.fresh / (now - self.started)
            eta = (self.total - self.done) / rate if rate else 0
            filled = int(24 * self.done / self.total)
            line = (
                f"[{'#' * filled}{'.' * (24 - filled)}] {self.done}/{self.total} questions"
                f"  {60 * rate:.1f}/min  ETA {int(eta // 60)}m{int(eta % 60):02d}s"
            )
            print(("\r" if self.tty else "") + line, end="" if self.tty else "\n", file=sys.stderr, flush=True)
            if self.tty and self.done == self.total:
                print(file=sys.stderr)


def open_dataset_retriever(dataset, embedder, say, retrieval: str = "dense"):
    """A retriever of the setting ``retrieval`` over ``open_dataset_index``."""
    from ..engine.retrieval.modes import build_retriever

    return build_retriever(retrieval, embedder, open_dataset_index(dataset, embedder, say))


def open_dataset_index(dataset, embedder, say):
    """The dataset's corpus in the index store (one passage per document, source = its
    id); cached, so a second run embeds nothing."""
    from ..engine.indexing.index import PassageIndex
    from ..engine.indexing.indexer import sync_corpus

    index = PassageIndex.open(
        paths.dataset_index_dir(dataset.directory, embedder.identity),
        embedder_identity=embedder.identity,
        dim=embedder.dim,
    )
    shown = [time.monotonic()]

    def progress(p) -> None:  # embedding a corpus takes minutes on a CPU: say how far
        if time.monotonic() - shown[0] >= 30:
            shown[0] = time.monotonic()
            say(f"indexing {dataset.name}: {p.files_done}/{p.files_total} documents")

    report = sync_corpus(index, dataset.corpus(), embedder, progress=progress)
    say(
        f"index of {dataset.name}: {counted(report.passages, 'passage')}, {report.embedded} embedded now ({report.seconds:.0f} s)"
    )
    if report.removed_indexes:
        say(report.removed_note())
    return index


def run_config(
    dataset,
    settings,
    options,
    *,
    draft_source: str = "model",
    judge_llm: str | None = None,
    adaptive_only: bool = False,
) -> dict:
    """What a records file is keyed by: records made with other settings never mix. The
    loop runs without its adaptive stop (it is replayed), so that option keys nothing,
    unless the run stops there (--adaptive-only): its records lack later iterations."""
    loop = asdict(options)
    del loop["adaptive"]
    stops = {"stops": "adaptive"} if adaptive_only else {}  # older records' settings stay as they were
    return {
        "dataset": dataset.name,
        "directory": str(dataset.directory),
        "llm": settings.llm,
        "embedder": settings.embedder,
        "query_encoder": settings.query_encoder,
        "embed_backend": settings.embed_backend,
        "n_ctx": settings.n_ctx,
        "retrieval": settings.retrieval,
        **loop,
        "draft_source": draft_source,
        "judge_llm": judge_llm,
        # Decoding penalties change every draft
        "repeat_penalty": settings.repeat_penalty,
        "presence_penalty": settings.presence_penalty,
        # Recall at t >= 2 was once of the search alone; now of what the reader read.
        "recall_of": "prompt",
        **stops,
    }


def output_paths(out: Path | None, config: dict) -> tuple[Path, Path, Path]:
    """(results, records, plot); without --out, keyed by the settings so a rerun resumes."""
    if out:
        out = out.expanduser().resolve()
    else:
        key = hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:10]
        out = paths.eval_dir() / f"{config['dataset']}-{key}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    return out, out.with_suffix(".jsonl"), out.with_suffix(".png")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def execute(args: argparse.Namespace) -> int:
    from ..engine.evaluation import evaluate
    from ..engine.evaluation.conversations import has_conversations
    from ..engine.evaluation.datasets import load_dataset
    from ..engine.retrieval.modes import RETRIEVAL_MODES, build_retriever
    from ..eval_report import format_table, plot
    from ..session import Session

    if args.limit is not None and args.limit < 1:
        raise UserError("--limit must be at least 1")
    read_ahead.stop()  # an `ask`'s read-ahead would only take the run's cores and skew its seconds
    if has_conversations(args.dataset):
        return execute_conversations(args)
    try:
        dataset = load_dataset(args.dataset)
    except OSError as exc:
        raise UserError(str(exc)) from None
    if args.draft_source == "gold" and not dataset.has_answers:
        raise UserError(f"--draft-source gold needs answers; {dataset.name} has none")
    settings = settings_from(args, top_k=args.top_k)
    questions = dataset.questions[: args.limit]
    options = replace(settings.loop, iterations=max(args.iterations))
    config = run_config(
        dataset,
        settings,
        options,
        draft_source=args.draft_source,
        judge_llm=(args.judge_llm or settings.llm) if args.judge else None,
        adaptive_only=args.adaptive_only,
    )
    out, records_path, plot_path = output_paths(args.out, config)
    session = Session(settings)
    if dataset.has_answers:
        session.load_models(status=say)
    else:  # retrieval alone: no reader is needed, so none is asked for or loaded
        session.load_embedder(status=say)
    # Every retrieval setting is scored (question alone); the loop runs the chosen one.
    index = open_dataset_index(dataset, session.embedder, say)
    retrievers = {mode: build_retriever(mode, session.embedder, index) for mode in RETRIEVAL_MODES}
    retriever = retrievers[settings.retrieval]
    started = time.perf_counter()
    compared = evaluate.compare_retrieval(questions, retrievers, base="dense", top_k=settings.top_k)
    summary = {
        "dataset": dataset.name,
        "n": len(questions),
        "iterations": [],
        "adaptive": None,
        "differences": {},
        "retrieval": compared["settings"][settings.retrieval],
        "retrieval_settings": compared,
    }
    seconds = time.perf_counter() - started
    if dataset.has_answers:
        log = evaluate.RecordLog(records_path, config)
        judge_with = _judge(args, session) if args.judge else None
        todo = [q for q in questions if q.id not in log.records]
        say(f"{len(questions) - len(todo)} of {len(questions)} questions already in {records_path}")
        progress = Progress(len(questions), len(questions) - len(todo))
        generator = session.generator if args.no_replay else _replaying(session.generator)
        for question in todo:
            log.append(
                evaluate.evaluate_question(
                    question,
                    retriever=retriever,
                    generator=generator,
                    options=options,
                    gold_draft=args.draft_source == "gold",
                    judge_with=judge_with,
                    stop_adaptively=args.adaptive_only,
                )
            )
            progress.step()
        records = [log.records[q.id] for q in questions]
        if not args.adaptive_only:  # its records stop early: there is no fixed T to score
            summary["iterations"] = evaluate.summarize(records, args.iterations, judged=args.judge)
            summary["differences"] = evaluate.differences(
                records, args.iterations, judged=args.judge, adaptive=not args.no_adaptive
            )
        if not args.no_adaptive:
            summary["adaptive"] = evaluate.summarize_adaptive(records, judged=args.judge)
        # Summed over the records, so a resumed run counts its earlier parts too.
        seconds += sum(r["seconds"] for r in records)
    summary["seconds"] = round(seconds, 3)
    out.write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    plot(summary, plot_path)
    print(format_table(summary, draft_source=args.draft_source))
    say(f"results: {out}\nrecords: {records_path if dataset.has_answers else '-'}\nplot: {plot_path}")
    return 0


def execute_conversations(args: argparse.Namespace) -> int:
    """A set of conversations (conversations.jsonl): each task's last turn answered after
    its earlier turns, as the chat answers (engine/evaluation/conversations.py)."""
    from ..engine.evaluation import conversations, evaluate
    from ..engine.evaluation.datasets import Dataset
    from ..engine.retrieval.modes import build_retriever
    from ..session import Session

    directory = args.dataset.expanduser().resolve()
    tasks = conversations.load_tasks(directory)[: args.limit]
    settings = settings_from(args, top_k=args.top_k)
    options = replace(settings.loop, iterations=max(args.iterations))
    dataset = Dataset(directory, ())
    config = {
        **run_config(dataset, settings, options, adaptive_only=True),
        "conversations": True,
        "against_last_turn": args.against_last_turn,
        "search_only": args.search_only,
    }
    out, records_path, _ = output_paths(args.out, config)
    session = Session(settings)
    session.load_models(status=say)
    retriever = build_retriever(
        settings.retrieval, session.embedder, open_dataset_index(dataset, session.embedder, say)
    )
    generator = session.generator if args.no_replay else _replaying(session.generator)
    log = evaluate.RecordLog(records_path, config)
    todo = [task for task in tasks if task.id not in log.records]
    say(f"{len(tasks) - len(todo)} of {len(tasks)} conversations already in {records_path}")
    progress = Progress(len(tasks), len(tasks) - len(todo))
    for task in todo:
        log.append(
            conversations.evaluate_task(
                task,
                retriever=retriever,
                generator=generator,
                options=options,
                alone_too=args.against_last_turn,
                search_only=args.search_only,
            )
        )
        progress.step()
    summary = {"dataset": directory.name, **conversations.summarize([log.records[task.id] for task in tasks])}
    out.write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    print(conversations.report(summary))
    say(f"results: {out}\nrecords: {records_path}")
    return 0


def _replaying(generator):
    """The chat model behind the memo of greedy generations (engine/evaluation/generation_cache.py)."""
    from ..engine.evaluation.generation_cache import CachedGenerator

    return CachedGenerator(generator, paths.eval_dir() / "generations.sqlite")


def _judge(args, session):
    """The judge: the chat model itself unless --judge-llm names another."""
    if not args.judge_llm:
        return session.generator
    from ..engine.loop.generator import LlamaGenerator
    from ..models import resolve_llm

    return LlamaGenerator(resolve_llm(args.judge_llm), n_ctx=session.settings.n_ctx, device=session.settings.device)
