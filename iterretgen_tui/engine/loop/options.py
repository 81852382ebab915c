"""The loop's options: one frozen value, built once from the settings and passed whole."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

# How iteration t >= 2 retrieves; engine/loop/queries.py says what each does.
QUERY_MODES = ("draft", "fusion", "interleave", "feedback")


@dataclass(frozen=True)
class LoopOptions:
    iterations: int = 3  # maximum T
    top_k: int = 5  # passages per retrieval
    adaptive: bool = True  # stop when answers agree or retrieval brings nothing new
    keep_passages: bool = True  # carry earlier iterations' passages forward (docs/evaluation.md)
    query_mode: str = "feedback"
    max_tokens: int = 256  # per draft

    def __post_init__(self) -> None:
        if self.query_mode not in QUERY_MODES:
            raise ConfigError(f"query_mode must be one of {', '.join(QUERY_MODES)}, not {self.query_mode!r}")
        for name in ("iterations", "top_k", "max_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
