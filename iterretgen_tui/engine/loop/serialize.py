"""A finished answer as plain JSON data, and back: what history stores and `ask --json`
prints. Built from the dataclasses' own fields, so a field added to them is carried
everywhere at once; reading accepts what older versions wrote."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from ..passages import Passage
from .events import FinalAnswer, IterationTrace, StopReason
from .evidence import Evidence, Quote
from .provenance import Origin, trace_origins


def passage_to_dict(passage: Passage) -> dict[str, Any]:
    return {("passage_id" if name == "id" else name): value for name, value in asdict(passage).items()}


def final_to_dict(final: FinalAnswer) -> dict[str, Any]:
    data = {f.name: getattr(final, f.name) for f in fields(FinalAnswer)}
    data["sources"] = [{"n": n, **passage_to_dict(p)} for n, p in enumerate(final.sources, 1)]
    data["stop_reason"] = final.stop_reason.value
    data["evidence"] = asdict(final.evidence) if final.evidence else None
    data["iterations"] = [
        {
            **asdict(trace),
            "passages": [
                _with_origin(passage_to_dict(p), origin)
                for p, origin in zip(trace.passages, origins or (None,) * len(trace.passages))
            ],
        }
        for trace, origins in zip(final.iterations, trace_origins(final.iterations))
    ]
    return data


def _with_origin(row: dict[str, Any], origin: Origin | None) -> dict[str, Any]:
    """Why the passage is in its iteration, as the TUI's panes mark it (derived, so reading ignores it)."""
    if origin is not None:
        row.update(origin=origin.kind, found_by=list(origin.searches), first_iteration=origin.first_t)
    return row


def final_from_dict(data: dict[str, Any]) -> FinalAnswer:
    known = {f.name for f in fields(FinalAnswer)}
    return FinalAnswer(
        **{
            **{name: value for name, value in data.items() if name in known},
            "sources": _passages(data["sources"]),
            "stop_reason": StopReason(data["stop_reason"]),
            "iterations": tuple(_trace(trace) for trace in data["iterations"]),
            "evidence": _evidence(data.get("evidence")),
        }
    )


def _trace(data: dict[str, Any]) -> IterationTrace:
    known = {f.name for f in fields(IterationTrace)}
    values = {name: value for name, value in data.items() if name in known}
    return IterationTrace(
        **{
            **values,
            "passages": _passages(data["passages"]),
            "searches": tuple(data.get("searches", ())),
            "found_by": tuple(tuple(names) for names in data.get("found_by", ())),
            "evidence": _evidence(data.get("evidence")),
        }
    )


def _evidence(row: dict[str, Any] | None) -> Evidence | None:
    if not row:
        return None
    also = row.get("also")  # absent in history saved before it was quoted
    return Evidence(**{**row, "also": Quote(**also) if also else None})


def _passages(rows: list[dict[str, Any]]) -> tuple[Passage, ...]:
    known = {f.name for f in fields(Passage)}
    return tuple(
        Passage(
            **{
                name: value
                for name, value in {"id": row.get("passage_id", row.get("id")), **row}.items()
                if name in known
            }
        )
        for row in rows
    )
