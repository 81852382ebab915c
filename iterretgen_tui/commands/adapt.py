"""`iterretgen-chat adapt DATASET_DIR ... [--folder F]`: distil what the first drafts reveal
into the query encoder (generation-augmented retrieval adaptation, engine/evaluation/adapt.py).

Training questions and their first drafts y1 come from `eval` records (--drafts), from
running iteration 1 where a dataset question has none (saved where `eval --iterations 1`
keeps its records, so either command resumes the other), and for a folder from the
questions asked in the TUI (their traces are in the history). The result is a query
encoder under the data dir, selected with --query-encoder NAME or the settings.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from .. import models, paths
from ..cli import UserError, add_model_flags, settings_from
from ..engine.counting import counted
from ..models.catalogue import is_name


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "datasets",
        type=Path,
        nargs="*",
        metavar="DATASET_DIR",
        help="datasets whose questions to train on (corpus.jsonl, queries.jsonl)",
    )
    parser.add_argument(
        "--drafts",
        type=Path,
        action="append",
        default=[],
        metavar="RECORDS.jsonl",
        help="`eval` records holding iteration-1 drafts (repeatable); questions without one are drafted now (slow)",
    )
    parser.add_argument(
        "--only-drafted",
        action="store_true",
        dest="only_drafted",
        help="train only on questions that have drafts in --drafts (run no LLM)",
    )
    parser.add_argument("--folder", type=Path, help="also train on the questions asked about this folder in the TUI")
    parser.add_argument(
        "--teacher",
        default="bi-encoder",
        metavar="bi-encoder|cross-encoder:PATH",
        help="who scores passages for y1 || q (default: the embedder itself)",
    )
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--batch-size", type=int, default=16, dest="batch_size", help="questions per step")
    parser.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate")
    parser.add_argument("--tau", type=float, default=0.05, help="softmax temperature of both sides")
    parser.add_argument(
        "--candidates", type=int, default=20, metavar="N", help="top-N for y1 || q plus top-N for q, per question"
    )
    parser.add_argument("--out", metavar="NAME", help="the adapted encoder's name (default: from the embedder)")
    add_model_flags(parser)


def execute(args: argparse.Namespace) -> int:
    from ..engine.evaluation import adapt
    from ..session import Session

    if not args.datasets and not args.folder:
        raise UserError("give at least one DATASET_DIR or --folder")
    if args.steps < 1 or args.batch_size < 1 or args.candidates < 1 or args.tau <= 0 or args.lr <= 0:
        raise UserError("--steps, --batch-size, --candidates, --tau and --lr must be positive")
    if args.teacher != "bi-encoder" and not args.teacher.startswith("cross-encoder:"):
        raise UserError(f"--teacher must be bi-encoder or cross-encoder:PATH, not {args.teacher!r}")
    settings = settings_from(args)
    name = args.out or f"{Path(settings.embedder).name.lower()}-adapted"
    if not is_name(name):
        raise UserError(f"--out {name!r}: use lowercase letters, digits, '.', '-' or '_'")

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    session = Session(settings)
    session.load_embedder(say)
    teacher = _teacher(args.teacher, session)
    drafts = _drafts(args.drafts)
    candidates, sources = [], []
    for directory in args.datasets:
        examples, index = _dataset_examples(directory, drafts, session, say, only_drafted=args.only_drafted)
        candidates += adapt.gather(examples, session.embedder, index, teacher, n=args.candidates)
        sources.append(str(Path(directory).resolve()))
    if args.folder:
        examples = _history_examples(args.folder, session, say)
        candidates += adapt.gather(examples, session.embedder, session.index, teacher, n=args.candidates)
        sources.append(f"history:{session.folder}")
    if not candidates:
        raise UserError("no training questions with drafts were found")
    sources += [f"drafts:{p.resolve()}" for p in args.drafts]

    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    base = settings.query_encoder or settings.embedder
    student = SentenceTransformer(
        str(models.resolve_embedder(base)), device=session.embedder.device, local_files_only=True
    )
    config = adapt.TrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, tau=args.tau)
    say(f"training on {counted(len(candidates), 'question')}, teacher {teacher.name}")
    started = time.perf_counter()
    # The bar only on a terminal; the log lines every 50 steps serve logs of background runs.
    with tqdm(total=config.steps, desc="adapt", unit="step", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:

        def on_step(step: int, loss: float) -> None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
            if step % 50 == 0 or step == config.steps:
                bar.write(f"step {step}: loss {loss:.4f}", file=sys.stderr)

        losses = adapt.distill(
            student, candidates, config, normalize=session.embedder.metric == "cosine", on_step=on_step
        )
    seconds = time.perf_counter() - started
    initial, final = adapt.summary_loss(losses)
    manifest = adapt.Manifest(
        name=name,
        base=base,
        embedder=settings.embedder,
        sources=sources,
        questions=len(candidates),
        steps=config.steps,
        batch_size=config.batch_size,
        lr=config.lr,
        tau=config.tau,
        teacher=teacher.name,
        candidates=args.candidates,
        final_loss=round(final, 6),
        initial_loss=round(initial, 6),
        seconds=round(seconds, 1),
    )
    folder = adapt.save_adapted(student, paths.adapted_dir() / name, manifest, losses)
    say(f"loss {initial:.4f} -> {final:.4f} in {seconds:.0f} s; loss curve: {folder / 'loss.png'}")
    print(
        f"adapted query encoder {name}: {folder}\nuse it with --query-encoder {name} "
        f'(or query_encoder = "{name}" in {paths.config_file()})'
    )
    return 0


def _teacher(spec: str, session):
    from ..engine.evaluation.adapt import BiEncoderTeacher, CrossEncoderTeacher

    if spec == "bi-encoder":
        return BiEncoderTeacher(session.embedder)
    try:
        return CrossEncoderTeacher(Path(spec.split(":", 1)[1]).expanduser(), device=session.embedder.device)
    except (FileNotFoundError, OSError, ValueError) as exc:
        raise UserError(f"--teacher {spec}: {exc}") from None


def _drafts(records: list[Path]) -> dict[str, dict]:
    """Dataset directory -> {question id: Example}, from every records file given."""
    from ..engine.evaluation.adapt import drafts_from_records

    found: dict[str, dict] = {}
    for path in records:
        try:
            directory, drafts = drafts_from_records(path)
        except (OSError, ValueError, KeyError) as exc:
            raise UserError(f"--drafts {path}: not `eval` records ({exc})") from None
        found.setdefault(directory, {}).update(drafts)
    return found


def _dataset_examples(directory: Path, drafts: dict[str, dict], session, say, *, only_drafted: bool):
    """The dataset's questions with their y1: from the records, else drafted now into the
    records file `eval --iterations 1` would write (so an interrupted run resumes)."""
    from ..engine.evaluation import evaluate
    from ..engine.evaluation.adapt import drafts_from_records
    from ..engine.evaluation.datasets import load_dataset
    from .eval import Progress, open_dataset_retriever, output_paths, run_config

    try:
        dataset = load_dataset(directory)
    except OSError as exc:
        raise UserError(str(exc)) from None
    retriever = open_dataset_retriever(dataset, session.embedder, say)
    known = drafts.get(str(dataset.directory), {})
    todo = [q for q in dataset.questions if q.id not in known]
    if todo and not only_drafted:
        settings = session.settings
        options = replace(settings.loop, iterations=1)
        config = run_config(dataset, settings, options)
        records_path = output_paths(None, config)[1]
        log = evaluate.RecordLog(records_path, config)
        missing = [q for q in todo if q.id not in log.records]
        if missing:
            say(f"{dataset.name}: drafting {counted(len(missing), 'question')} with iteration 1 into {records_path}")
            if session.generator is None:
                session.load_models(say)
            progress = Progress(len(missing))
            for question in missing:
                log.append(
                    evaluate.evaluate_question(
                        question, retriever=retriever, generator=session.generator, options=options
                    )
                )
                progress.step()
        known = {**drafts_from_records(records_path)[1], **known}
    examples = [known[q.id] for q in dataset.questions if q.id in known]
    say(f"{dataset.name}: {len(examples)} of {len(dataset.questions)} questions with drafts")
    return examples, retriever.index


def _history_examples(folder: Path, session, say):
    """Questions asked about ``folder`` in the TUI, each with its first iteration's draft."""
    from ..engine.evaluation.adapt import Example
    from ..engine.indexing.documents import check_folder
    from ..history import History

    folder = check_folder(folder)
    session.open_folder(folder, on_wait=say)
    history = History()
    try:
        examples = [
            Example(final.question, final.iterations[0].draft)
            for summary in history.recent(limit=1_000_000)
            if summary.folder == str(folder)
            for final in history.get(summary.id).turns
            if final.iterations and final.iterations[0].t == 1
        ]
    finally:
        history.close()
    say(f"{folder}: {counted(len(examples), 'question')} from the TUI's history")
    return examples
