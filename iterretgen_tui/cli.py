"""`iterretgen-chat` entry point: the TUI by default, subcommands for headless work.

Each subcommand lives in ``iterretgen_tui.commands.<name>`` with ``add_parser`` and
``execute``; they are imported only when used, so `--help` and the TUI start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .config import DEVICES, EMBED_BACKENDS
from .engine.errors import IterRetGenError

SUBCOMMANDS = {
    "index": "build or update a folder's index",
    "ask": "answer one question headlessly",
    "eval": "evaluate on a dataset (corpus.jsonl, queries.jsonl, qrels.tsv)",
    "adapt": "adapt the query encoder to the drafts (generation-augmented retrieval)",
    "models": "list installed models, pull more",
}


class UserError(IterRetGenError):
    """Something the user can fix; printed as one line, never a traceback."""


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm", help="GGUF chat model: catalogue name, pulled name or path; with --llm-server, the served model"
    )
    parser.add_argument(
        "--llm-server",
        dest="llm_server",
        metavar="URL",
        help="read with the model an OpenAI-compatible server runs (llama-server, Ollama's /v1, vLLM, LM Studio)",
    )
    parser.add_argument("--embedder", help="sentence-transformers model: name or folder")
    parser.add_argument(
        "--query-encoder",
        dest="query_encoder",
        metavar="NAME",
        help="an adapted query encoder (see `adapt`): name or folder",
    )
    parser.add_argument("--device", choices=DEVICES, help="where models run")
    parser.add_argument(
        "--embed-backend",
        dest="embed_backend",
        choices=EMBED_BACKENDS,
        help="how the embedder runs (auto: the fastest measured on this CPU, torch on a GPU)",
    )


def add_loop_flags(parser: argparse.ArgumentParser) -> None:
    """The loop's settings that `ask` and `eval` take as flags; unset, the settings file's."""
    from .engine.loop.options import PASSAGE_ORDERS, QUERY_MODES, READ_MODES

    parser.add_argument(
        "--query-mode",
        dest="query_mode",
        choices=QUERY_MODES,
        help="how iteration 2+ retrieves (default: the setting; feedback unless changed)",
    )
    parser.add_argument(
        "--keep-passages",
        dest="keep_passages",
        action=argparse.BooleanOptionalAction,
        help="carry earlier iterations' passages into the next prompt (default: the setting)",
    )
    parser.add_argument(
        "--passage-order",
        dest="passage_order",
        choices=PASSAGE_ORDERS,
        help="where kept passages go: auto (the order measured best for the reader), "
        "new-first, or earlier-first (faster; default: the setting)",
    )
    parser.add_argument(
        "--read",
        choices=READ_MODES,
        help="what of each passage the model reads: the sentences that bear on the question within "
        "--read-tokens (budget), the best of each passage (sentences), or all of it (whole); default: the setting",
    )
    parser.add_argument(
        "--read-tokens",
        dest="read_tokens",
        type=int,
        metavar="N",
        help="tokens of passages the model reads at iteration 1 with --read budget (default: the setting)",
    )
    parser.add_argument(
        "--check-read-tokens",
        dest="check_read_tokens",
        type=int,
        metavar="N",
        help="the same for the new passages of the iterations after the first, which check its answer "
        "(kept passages are read as they were; default: the setting)",
    )
    add_retrieval_flag(parser)


def add_retrieval_flag(parser: argparse.ArgumentParser) -> None:
    """--retrieval, which the app takes as well as `ask` and `eval`."""
    from .engine.retrieval.modes import RETRIEVAL_MODES

    parser.add_argument(
        "--retrieval",
        choices=RETRIEVAL_MODES,
        help="what each search ranks by: dense and keyword fused (hybrid), or one alone "
        "(default: the setting; hybrid unless changed)",
    )


def settings_from(args: argparse.Namespace, **extra):
    """Settings layered with the flags the user actually gave (model and loop flags are
    read from ``args`` where the command has them)."""
    from . import config

    return config.load(flag_overrides(args, **extra))


def flag_overrides(args: argparse.Namespace, **extra) -> dict:
    """The settings the user's flags set (``extra``: a command's own), the unset left out."""
    flags = {
        name: getattr(args, name, None)
        for name in (
            "llm",
            "llm_server",
            "embedder",
            "device",
            "query_encoder",
            "embed_backend",
            "query_mode",
            "keep_passages",
            "passage_order",
            "read",
            "read_tokens",
            "check_read_tokens",
            "retrieval",
        )
    }
    flags.update(extra)
    return {k: v for k, v in flags.items() if v is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="iterretgen-chat",
        usage="iterretgen-chat [FOLDER] [options]  |  iterretgen-chat COMMAND ...",
        description="Chat with your documents offline: iterative retrieval and generation.",
        epilog="Without a COMMAND, the chat opens over FOLDER (default: the last folder used); "
        "its options: `iterretgen-chat FOLDER --help`.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog="iterretgen-chat")
    for name, help_text in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(f"iterretgen_tui.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"iterretgen_tui.commands.{name}":
                raise
            continue
        module.add_parser(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help")):
        from .commands import tui

        return _guarded(lambda: tui.main(argv))
    args = build_parser().parse_args(argv)
    module = importlib.import_module(f"iterretgen_tui.commands.{args.command}")
    return _guarded(lambda: module.execute(args))


def _guarded(action) -> int:
    try:
        return int(action() or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except IterRetGenError as exc:
        print(f"iterretgen-chat: {exc}", file=sys.stderr)
        return 2
