"""Typed settings, layered: defaults < config file (TOML) < env (ITERRETGEN_*) < flags."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import tomli_w
import tomllib

from . import paths
from .engine.embedding.backends import EMBED_BACKENDS
from .engine.errors import ConfigError
from .engine.indexing.chunking import ChunkOptions
from .engine.loop.options import LoopOptions

DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class Settings:
    llm: str = "qwen2.5-coder-1.5b-instruct"  # catalogue name, pulled name or GGUF path (models.DEFAULT_LLM)
    # An OpenAI-compatible server that runs the reader instead (engine/loop/served.py); with it,
    # llm names the served model, and the default means the first one the server lists.
    llm_server: str = ""
    embedder: str = "all-minilm-l6-v2"  # catalogue name or sentence-transformers folder
    query_encoder: str = ""  # an adapted query encoder (see `adapt`); empty: the embedder's own
    device: str = "auto"
    embed_backend: str = "auto"  # the fastest measured on this CPU, torch on a GPU (docs/performance.md)
    # The loop's options (engine/loop/options.py), flat here so the file and the
    # environment name them directly.
    iterations: int = LoopOptions.iterations
    top_k: int = LoopOptions.top_k
    adaptive: bool = LoopOptions.adaptive
    keep_passages: bool = LoopOptions.keep_passages
    passage_order: str = LoopOptions.passage_order
    query_mode: str = LoopOptions.query_mode
    max_tokens: int = LoopOptions.max_tokens
    history_tokens: int = LoopOptions.history_tokens
    check_found: bool = LoopOptions.check_found
    check_evidence: bool = LoopOptions.check_evidence
    ask_back: bool = LoopOptions.ask_back
    read: str = LoopOptions.read
    read_tokens: int = LoopOptions.read_tokens
    check_read_tokens: int = LoopOptions.check_read_tokens
    retrieval: str = "hybrid"  # rankings every search fuses (engine/retrieval/modes.py; docs/evaluation.md)
    n_ctx: int = 4096
    # llama.cpp's remedies for repetition; none by default (greedy, as the paper): the loop
    # guard is what stops loops (docs/answers.md).
    repeat_penalty: float = 1.0
    presence_penalty: float = 0.0
    passage_words: int = ChunkOptions.words
    passage_overlap: int = ChunkOptions.overlap
    ocr: str = "auto"  # read scanned PDF pages and images by OCR ("auto") or not ("off")
    # The chat pulls the default reader by itself when it is missing (docs/models.md);
    # off for metered connections.
    auto_pull: bool = True
    # `ask` reads its conversation ahead for the next `ask --continue` in a background
    # process once it has answered (read_ahead.py); off, a follow-up evaluates it itself.
    read_ahead: bool = True
    # Folders of GGUF files to offer as readers, besides the stores found by themselves
    # (models/found.py); ITERRETGEN_MODEL_FOLDERS separates them with os.pathsep.
    model_folders: tuple[str, ...] = ()
    last_folder: str = ""

    @property
    def loop(self) -> LoopOptions:
        return LoopOptions(**{f.name: getattr(self, f.name) for f in fields(LoopOptions)})

    @property
    def chunking(self) -> ChunkOptions:
        return ChunkOptions(words=self.passage_words, overlap=self.passage_overlap)

    def validated(self) -> Settings:
        from .engine.retrieval.modes import RETRIEVAL_MODES

        if self.retrieval not in RETRIEVAL_MODES:
            raise ConfigError(f"retrieval must be one of {', '.join(RETRIEVAL_MODES)}, not {self.retrieval!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"device must be one of {', '.join(DEVICES)}, not {self.device!r}")
        if self.embed_backend not in EMBED_BACKENDS:
            raise ConfigError(f"embed_backend must be one of {', '.join(EMBED_BACKENDS)}, not {self.embed_backend!r}")
        if self.n_ctx < 1:
            raise ConfigError(f"n_ctx must be at least 1, not {self.n_ctx}")
        _ = self.loop, self.chunking  # each checks its own values when built
        from .engine.indexing.ocr import OCR_MODES

        if self.ocr not in OCR_MODES:
            raise ConfigError(f"ocr must be one of {', '.join(OCR_MODES)}, not {self.ocr!r}")
        if not 0 < self.repeat_penalty <= 2:
            raise ConfigError(f"repeat_penalty must be above 0 and at most 2, not {self.repeat_penalty}")
        if not -2 <= self.presence_penalty <= 2:
            raise ConfigError(f"presence_penalty must be between -2 and 2, not {self.presence_penalty}")
        return self


_FIELDS = {f.name: f for f in fields(Settings)}


def _coerce(name: str, value: Any) -> Any:
    kind = type(getattr(Settings(), name))
    if kind is tuple:  # a TOML list, or the environment's one string
        items = value.split(os.pathsep) if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ConfigError(f"{name} must be a list of folders, not {value!r}")
        return tuple(str(item) for item in items if item)
    if kind is bool and isinstance(value, str):
        lowered = value.strip().lower()
        if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise ConfigError(f"{name} must be true or false, not {value!r}")
        return lowered in ("1", "true", "yes", "on")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be {kind.__name__}, not {value!r}") from None


def _layer(base: Settings, values: dict[str, Any], origin: str) -> Settings:
    changes = {}
    for name, value in values.items():
        if name not in _FIELDS:
            raise ConfigError(f"unknown setting {name!r} in {origin}")
        if value is not None:
            changes[name] = _coerce(name, value)
    return replace(base, **changes)


def load(overrides: dict[str, Any] | None = None, *, config_path: Path | None = None) -> Settings:
    path = config_path or paths.config_file()
    settings = Settings()
    if path.exists():
        try:
            settings = _layer(settings, tomllib.loads(path.read_text("utf-8")), str(path))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    env = {
        name: os.environ[f"ITERRETGEN_{name.upper()}"] for name in _FIELDS if f"ITERRETGEN_{name.upper()}" in os.environ
    }
    settings = _layer(settings, env, "the environment")
    settings = _layer(settings, overrides or {}, "the command line")
    return settings.validated()


def remember_folder(folder: Path) -> None:
    """The next plain `iterretgen-chat` opens this folder again (flags are not saved)."""
    stored = load()
    if stored.last_folder != str(folder):
        save(replace(stored, last_folder=str(folder)))


def save(settings: Settings, *, config_path: Path | None = None) -> Path:
    """Write the settings atomically, so a crash never leaves a half-written file. Only
    values that differ from the defaults are written: the rest follow the defaults of the
    version that runs (a better default reaches users who never chose otherwise)."""
    path = config_path or paths.config_file()
    tmp = path.with_suffix(".toml.tmp")
    defaults = asdict(Settings())
    chosen = {name: value for name, value in asdict(settings).items() if value != defaults[name]}
    tmp.write_text(tomli_w.dumps(chosen), "utf-8")
    tmp.replace(path)
    return path
