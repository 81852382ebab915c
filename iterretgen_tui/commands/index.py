"""`iterretgen-chat index FOLDER`: build or update a folder's index, or keep it updated."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from .. import read_ahead
from ..cli import add_model_flags, settings_from
from ..engine.counting import counted
from ..engine.indexing.indexer import IndexProgress, IndexReport
from ..models import duration

MAX_SKIPS_SHOWN = 20


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", type=Path, help="the document folder to index")
    parser.add_argument(
        "--json", action="store_true", help="print a JSON summary on stdout (one per update with --watch)"
    )
    parser.add_argument("--watch", action="store_true", help="keep the index updated while files change")
    parser.add_argument(
        "--no-wait", action="store_true", help="exit at once if another process is indexing this folder"
    )
    add_model_flags(parser)


def execute(args: argparse.Namespace) -> int:
    from ..engine.indexing.documents import check_folder
    from ..engine.indexing.indexer import open_folder_index, sync_folder, watch_folder
    from ..session import Session

    folder = check_folder(args.folder)
    settings = settings_from(args)
    read_ahead.stop()  # an `ask`'s read-ahead would only take the index's cores
    session = Session(settings)
    session.load_embedder()  # built as `ask` and the TUI build it: the same index is found
    embedder = session.embedder
    cancel = threading.Event()
    say = (lambda message: None) if args.json else (lambda message: print(message, file=sys.stderr))
    progress = None if args.json else ProgressLine(sys.stderr)
    options = dict(
        chunking=settings.chunking,
        ocr=settings.ocr,
        cancel=cancel,
        progress=progress,
        lock_timeout=0 if args.no_wait else None,
        on_wait=lambda message: say(f"{message} (Ctrl-C to stop)"),
    )

    def show(report: IndexReport) -> None:
        if progress:
            progress.clear()
        print_report(report, as_json=args.json)

    with _interrupt_sets(cancel), open_folder_index(folder, embedder) as index:
        report = sync_folder(folder, index, embedder, **options)
        show(report)
        if args.watch and not report.cancelled:
            say(f"watching {folder} for changes (Ctrl-C to stop)")
            watch_folder(folder, index, embedder, on_report=show, **options)
            return 0
    return 130 if report.cancelled else 0


def print_report(report: IndexReport, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.to_json()), flush=True)
        return
    state = "stopped early: " if report.cancelled else ""
    print(
        f"{state}{counted(report.indexed, 'file')} indexed ({report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged), {counted(report.passages, 'passage')}, "
        f"{report.seconds:.1f} s",
    )
    if report.removed_indexes:
        print(f"  {report.removed_note()}")
    for tally in report.ignored:
        print(f"  {tally.describe()}")
    for skip in report.skipped[:MAX_SKIPS_SHOWN]:
        print(f"  skipped {skip.path}: {skip.reason}")
    if len(report.skipped) > MAX_SKIPS_SHOWN:
        print(f"  ... and {len(report.skipped) - MAX_SKIPS_SHOWN} more skipped (see --json)")
    sys.stdout.flush()


class ProgressLine:
    """Progress on one stderr line, redrawn a few times a second on a terminal; in a log,
    a line every few seconds."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.interval = 0.25 if self.tty else 5.0
        self.last = 0.0
        self.width = 0

    def __call__(self, p: IndexProgress) -> None:
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        eta = "" if p.eta_seconds is None else f", about {duration(p.eta_seconds)} left"
        text = f"indexing: {p.files_done}/{p.files_total} files, {p.passages_done} passages, {p.rate:.1f}/s{eta}"
        if p.ocr_note:
            text += f", {p.ocr_note}"
        if not self.tty:
            print(text, file=self.stream, flush=True)
            return
        if p.current:
            text += f"  {Path(p.current).name}"
        text = text[:119]
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
        self.last = 0.0


@contextmanager
def _interrupt_sets(cancel: threading.Event) -> Iterator[None]:
    """The first Ctrl-C finishes the current batch and stops cleanly; a second one quits."""

    def handler(signum, frame):
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        print("\nstopping after the current batch (Ctrl-C again to quit at once)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
