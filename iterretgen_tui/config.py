"""Typed settings, layered: defaults < config file (TOML) < env (ITERRETGEN_*) < flags."""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import tomli_w

from . import paths

DEVICES = ("auto", "cpu", "cuda")
EMBED_BACKENDS = ("auto", "torch", "onnx", "onnx-int8", "openvino-int8")  # engine/embedding/onnx_embedder.py


class ConfigError(ValueError):
    """A setting has a value we cannot use; the message names it."""


@dataclass(frozen=True)
class Settings:
    llm: str = "smollm2-135m"  # catalogue name, pulled name or GGUF path
    embedder: str = "all-minilm-l6-v2"  # catalogue name or sentence-transformers folder
    query_encoder: str = ""  # an adapted query encoder (see `adapt`); empty: the embedder's own
    device: str = "auto"
    embed_backend: str = "auto"  # OpenVINO int8 on a CPU, torch on a GPU (docs/performance.md)
    iterations: int = 3  # maximum T
    top_k: int = 5
    adaptive: bool = True  # stop early when consecutive answers converge
    keep_passages: bool = True  # carry earlier iterations' passages forward (docs/evaluation.md)
    query_mode: str = "feedback"  # how iteration t >= 2 retrieves (engine.iterretgen.QUERY_MODES)
    n_ctx: int = 4096
    max_tokens: int = 256
    # llama.cpp's remedies for repetition; none by default (greedy, as the paper), since the
    # loop guard measured better (docs/answers.md).
    repeat_penalty: float = 1.0
    presence_penalty: float = 0.0
    passage_words: int = 100
    passage_overlap: int = 20
    last_folder: str = ""

    def validated(self) -> "Settings":
        from .engine.loop.iterretgen import QUERY_MODES

        if self.query_mode not in QUERY_MODES:
            raise ConfigError(f"query_mode must be one of {', '.join(QUERY_MODES)}, not {self.query_mode!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"device must be one of {', '.join(DEVICES)}, not {self.device!r}")
        if self.embed_backend not in EMBED_BACKENDS:
            raise ConfigError(f"embed_backend must be one of {', '.join(EMBED_BACKENDS)}, not {self.embed_backend!r}")
        for name in ("iterations", "top_k", "n_ctx", "max_tokens", "passage_words"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0 < self.repeat_penalty <= 2:
            raise ConfigError(f"repeat_penalty must be above 0 and at most 2, not {self.repeat_penalty}")
        if not -2 <= self.presence_penalty <= 2:
            raise ConfigError(f"presence_penalty must be between -2 and 2, not {self.presence_penalty}")
        if not 0 <= self.passage_overlap < self.passage_words:
            raise ConfigError("passage_overlap must be at least 0 and below passage_words")
        return self


_FIELDS = {f.name: f for f in fields(Settings)}


def _coerce(name: str, value: Any) -> Any:
    kind = type(getattr(Settings(), name))
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
        name: os.environ[f"ITERRETGEN_{name.upper()}"]
        for name in _FIELDS
        if f"ITERRETGEN_{name.upper()}" in os.environ
    }
    settings = _layer(settings, env, "the environment")
    settings = _layer(settings, overrides or {}, "the command line")
    return settings.validated()


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
