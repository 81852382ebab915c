"""The loop's options: one frozen value, built once from the settings and passed whole."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

# What of each passage the reader evaluates: engine/loop/compression.py says what each does.
READ_MODES = ("budget", "sentences", "whole")

# How iteration t >= 2 retrieves; engine/loop/queries.py says what each does.
QUERY_MODES = ("draft", "fusion", "interleave", "feedback")
# Where kept passages go in the next prompt (engine/loop/iterretgen.py, ``order_passages``);
# auto: the order measured best for the reader (its catalogue entry; new-first when unknown).
READER_ORDERS = ("new-first", "earlier-first")
PASSAGE_ORDERS = ("auto", *READER_ORDERS)


@dataclass(frozen=True)
class LoopOptions:
    iterations: int = 3  # maximum T
    top_k: int = 5  # passages per retrieval
    adaptive: bool = True  # stop when answers agree or retrieval brings nothing new
    keep_passages: bool = True  # carry earlier iterations' passages forward (docs/evaluation.md)
    passage_order: str = "auto"
    query_mode: str = "feedback"
    max_tokens: int = 256  # per draft
    # Of the conversation before a follow-up, what the reader sees beside its passages.
    history_tokens: int = 96
    # Ask the reader after its last draft whether its passages state the answer; a "no"
    # is shown as "your documents don't say" (engine/loop/grounding.py). Off by default:
    # with the 1.5B it declines a few more unanswerable questions than the evidence alone
    # and hides more right answers (docs/conversations.md).
    check_found: bool = False
    # Say the documents do not seem to say when even the evidence sentence, the nearest
    # the passages have, is far from the question (the embedder's ``unsaid_below``).
    check_evidence: bool = True
    # Ask which one is meant when the question points at something the conversation never
    # named and the passages name several such things (engine/loop/ambiguity.py).
    ask_back: bool = True
    # What of each passage the reader evaluates (engine/loop/compression.py): the sentences
    # that bear on the iteration's query within ``read_tokens`` for all of them ("budget"),
    # the best of each ("sentences"), or whole passages ("whole"); docs/performance.md.
    read: str = "budget"
    read_tokens: int = 300
    # The same for the new passages of the iterations after the first, which check the
    # first answer; kept passages are read as they were (compression.py). The first
    # answer's speed is read_tokens' alone.
    check_read_tokens: int = 200

    def read_budget(self, t: int) -> int:
        """Tokens of new passages the reader reads at iteration ``t`` (the budget read mode)."""
        return self.read_tokens if t == 1 else self.check_read_tokens

    def __post_init__(self) -> None:
        if self.query_mode not in QUERY_MODES:
            raise ConfigError(f"query_mode must be one of {', '.join(QUERY_MODES)}, not {self.query_mode!r}")
        if self.passage_order not in PASSAGE_ORDERS:
            raise ConfigError(f"passage_order must be one of {', '.join(PASSAGE_ORDERS)}, not {self.passage_order!r}")
        if self.read not in READ_MODES:
            raise ConfigError(f"read must be one of {', '.join(READ_MODES)}, not {self.read!r}")
        for name in ("iterations", "top_k", "max_tokens", "read_tokens", "check_read_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.history_tokens < 0:
            raise ConfigError(f"history_tokens must be at least 0, not {self.history_tokens}")
