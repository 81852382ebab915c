"""From the ``embed_backend`` setting to a loaded embedder; "auto" is measured on this CPU
(calibration.py) the first time, then remembered."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from . import calibration, embedder, onnx_embedder, onnx_export
from .embedder import Embedder, resolve_device
from .onnx_embedder import BACKEND_VARIANTS, export_ready, load_export

EMBED_BACKENDS = ("auto", "torch", *BACKEND_VARIANTS)  # the setting's values

# Measured by "auto" even when not prepared yet: torch is ready at once and the ONNX int8
# export is quick. OpenVINO's export and NNCF calibration take several times as long, so it
# is measured only once made (`models prepare`, run by `make install`; docs/performance.md).
ALWAYS_MEASURED = ("torch", "onnx-int8")
MEASURED_WHEN_MADE = ("onnx", "openvino-int8")


def fixed_backend(backend: str, device: str, folders: Sequence[Path]) -> str | None:
    """The backend known without measuring, or None where "auto" measures: a GPU and a model
    whose layers the export does not reproduce take torch."""
    if backend != "auto":
        return backend
    if resolve_device(device) != "cpu" or any(onnx_export.unsupported_reason(f) for f in folders):
        return "torch"
    return None


def candidates(folders: Sequence[Path]) -> list[str]:
    made = [b for b in MEASURED_WHEN_MADE if all(export_ready(f, BACKEND_VARIANTS[b]) for f in folders)]
    return [*ALWAYS_MEASURED, *made]


def embedder_key(folders: Sequence[Path]) -> str:
    return " + ".join(str(Path(f).resolve()) for f in folders)


def build(backend: str, path: Path, *, device: str, status: Callable[[str], None], **options) -> Embedder:
    # Looked up on their modules when called, so a test can stand in for either class.
    if backend == "torch":
        return embedder.SentenceEmbedder(path, device=device, **options)
    return onnx_embedder.OnnxEmbedder(path, variant=BACKEND_VARIANTS[backend], status=status, **options)


def load_embedder(
    path: Path,
    *,
    backend: str,
    device: str,
    query_path: Path | None = None,
    status: Callable[[str], None] = lambda message: None,
    measure_again: bool = False,
    **options,
) -> Embedder:
    """The embedder the setting asks for. It carries ``backend`` (what runs) and
    ``chosen_by`` ("setting", "device" or "measured") for the status line and `models list`."""
    folders = [path] + ([query_path] if query_path else [])
    options = dict(options, query_path=query_path)
    fixed = fixed_backend(backend, device, folders)
    if fixed is not None:
        chosen_by = "setting" if backend != "auto" else "device"
        return _labelled(build(fixed, path, device=device, status=status, **options), fixed, chosen_by)
    makers = {name: partial(build, name, path, device="cpu", status=status, **options) for name in candidates(folders)}
    result, winner = calibration.choose(embedder_key(folders), makers, status=status, again=measure_again)
    if winner is None:  # remembered from an earlier run
        winner = build(result.backend, path, device="cpu", status=status, **options)
    return _labelled(winner, result.backend, "measured")


def prepare(
    path: Path,
    *,
    device: str,
    query_path: Path | None = None,
    status: Callable[[str], None] = lambda message: None,
    **options,
) -> str:
    """The set-up step: make every export now, so the first index waits for none and "auto"
    measures them all; returns the backend "auto" takes. A calibration that measured every
    candidate is kept (running this again changes nothing); one taken before an export
    existed is taken again."""
    folders = [path] + ([query_path] if query_path else [])
    fixed = fixed_backend("auto", device, folders)
    if fixed is not None:
        return fixed
    for folder in folders:
        for variant in onnx_export.VARIANTS:
            load_export(folder, variant, status, options.get("name") if folder == path else None)
    known = calibration.cached(embedder_key(folders))
    if known is not None and set(candidates(folders)) <= set(known.rates):
        return known.backend
    return load_embedder(
        path, backend="auto", device=device, query_path=query_path, status=status, measure_again=True, **options
    ).backend


def remembered(path: Path, query_path: Path | None = None) -> calibration.Calibration | None:
    """The calibration "auto" uses for this embedder on this CPU, if it ran."""
    return calibration.cached(embedder_key([path] + ([query_path] if query_path else [])))


def _labelled(loaded: Embedder, backend: str, chosen_by: str) -> Embedder:
    loaded.backend, loaded.chosen_by = backend, chosen_by
    return loaded
