"""Every on-disk location of the application, in one place.

platformdirs gives the per-user directories; ``ITERRETGEN_HOME`` replaces all of
them with sub-folders of one directory (tests and scripts rely on that).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import platformdirs

APP = "iterretgen-chat"


def _home() -> Path | None:
    value = os.environ.get("ITERRETGEN_HOME")
    return Path(value).expanduser().resolve() if value else None


def _dir(kind: str) -> Path:
    home = _home()
    if home is not None:
        return _made(home / kind)
    return _made(Path(getattr(platformdirs, f"user_{kind}_dir")(APP, appauthor=False)))


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    return _dir("data")


def config_dir() -> Path:
    return _dir("config")


def cache_dir() -> Path:
    return _dir("cache")


def config_file() -> Path:
    return config_dir() / "config.toml"


def history_db() -> Path:
    return data_dir() / "history.sqlite3"


def models_dir() -> Path:
    return _made(data_dir() / "models")


def adapted_dir() -> Path:
    """Query encoders made by `adapt`, one folder per name (beside, not among, pulled models)."""
    return _made(models_dir() / "adapted")


def _folder_key(folder: Path | str, *salt: str) -> str:
    """A readable name plus a hash of the absolute path (and ``salt``): unique, and
    recognisable on disk."""
    folder = Path(folder).expanduser().resolve()
    digest = hashlib.sha1("\0".join([str(folder), *salt]).encode()).hexdigest()[:12]
    return f"{folder.name or 'root'}-{digest}"


def index_dir(folder: Path | str) -> Path:
    """The indexes of one document folder."""
    return _made(data_dir() / "indexes" / _folder_key(folder))


def embedder_index_dir(folder: Path | str, embedder_identity: str) -> Path:
    """The folder's index for one embedder: switching embedders never mixes vectors, and
    switching back finds the old index intact."""
    readable = "".join(c if c.isalnum() or c in "._-" else "-" for c in embedder_identity)[:48]
    return index_dir(folder) / f"{readable}-{hashlib.sha1(embedder_identity.encode()).hexdigest()[:8]}"


def dataset_index_dir(dataset: Path | str, embedder_identity: str) -> Path:
    """The index of an evaluation dataset's corpus.jsonl, one per embedder, so comparing
    embedders on a dataset never rebuilds (an index holds one embedder's vectors)."""
    return _made(data_dir() / "datasets" / _folder_key(dataset, embedder_identity))


def eval_dir() -> Path:
    """Where `eval` keeps its results when no --out is given (so a rerun resumes)."""
    return _made(data_dir() / "eval")


def disk_size(path: Path) -> int:
    """Bytes a file, or every file under a folder, takes."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
