"""`iterretgen-chat [FOLDER]`: the chat TUI over FOLDER (default: the last one used).

Only the light parts are imported here; torch and llama.cpp load inside the app's
worker, after the first frame is on the screen.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace
from pathlib import Path

from .. import config, paths, read_ahead
from ..cli import UserError, add_model_flags, add_retrieval_flag, settings_from
from ..engine.indexing.documents import check_folder


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="iterretgen-chat",
        description="Chat with your documents offline (the TUI). Subcommands: index, ask, "
        "eval, adapt, models (see `iterretgen-chat COMMAND --help`).",
    )
    folder = parser.add_mutually_exclusive_group()
    folder.add_argument("folder", nargs="?", help="the documents to answer from (default: the last folder used)")
    # `ask` names its folder with --folder; the chat takes the same flag rather than refuse it.
    folder.add_argument("--folder", dest="folder_flag", metavar="FOLDER", help="the same, as `ask` takes it")
    add_model_flags(parser)
    add_retrieval_flag(parser)
    return parser


def resolve_folder(given: str | None, last: str) -> Path:
    if not given and not last:
        raise UserError("which documents? run `iterretgen-chat FOLDER`")
    return check_folder(given or last)


def make_session(settings: config.Settings):
    from ..session import Session

    return Session(settings, fallback_reader=True)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    settings = settings_from(args)
    folder = resolve_folder(args.folder or args.folder_flag, settings.last_folder)
    config.remember_folder(folder)
    # Tracebacks go to a file, never over the screen.
    logging.basicConfig(
        filename=paths.data_dir() / "tui.log",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from ..ui.app import ChatApp

    read_ahead.stop()  # an `ask`'s read-ahead would only take the chat's cores
    ChatApp(replace(settings, last_folder=str(folder)), folder, make_session).run()
    return 0
