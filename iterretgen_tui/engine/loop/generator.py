"""Text generation with llama-cpp-python: the GGUF's own chat template, streaming,
cancellable between tokens, greedy by default (the paper decodes greedily). llama.cpp's
repeat and presence penalties can be set; docs/answers.md measures them against the
loop guard (engine/loop/repetition.py). Registered prompt prefixes (the demos) are
evaluated once and restored from their saved state (engine/loop/prefix_states.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Generator as Stream
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from ..cores import CoreShare
from .llama_load import load_llama
from .prefix_states import PrefixStates, prefix_key

log = logging.getLogger(__name__)

# Prompt starts ``prefill`` keeps: the chat's next draft (and the one before), or, saved
# by `ask`'s read-ahead process, the next draft's and rewrite's (Session.read_ahead).
AHEAD_KEEP = 2

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": ...}
# A list that ends with an assistant message asks the model to go on with that reply (a
# GGUF without a chat template answers it in a new turn instead).


class Generator(Protocol):
    name: str
    identity: str  # what a memo of its greedy outputs is keyed by
    n_ctx: int
    passage_order: str  # how this reader reads kept passages best (engine/loop/options.py)

    def count_tokens(self, text: str) -> int: ...

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int, cancel: threading.Event
    ) -> Stream[str, None, None]: ...


def penalties_key(repeat_penalty: float, presence_penalty: float) -> str:
    """What a reader's identity gains from penalties other than none: greedy outputs made
    with them are memoised apart; plain greedy keeps its old memo keys."""
    if (repeat_penalty, presence_penalty) == (1.0, 0.0):
        return ""
    return f":repeat{repeat_penalty}:presence{presence_penalty}"


def chat_formatter(llm):
    """The GGUF's chat template as llama-cpp-python renders it, or None without one."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None

    def text(token: int) -> str:
        return llm._model.token_get_text(token) if token != -1 else ""

    return Jinja2ChatFormatter(template, eos_token=text(llm.token_eos()), bos_token=text(llm.token_bos()))


def gpu_layers(device: str) -> int:
    """All layers on the GPU for cuda; auto offloads only when llama.cpp was built for it."""
    if device == "cpu":
        return 0
    import llama_cpp

    from ..errors import DeviceUnavailable

    supported = llama_cpp.llama_supports_gpu_offload()
    if device == "cuda" and not supported:
        raise DeviceUnavailable(
            "--device cuda: llama-cpp-python was built without GPU support "
            '(reinstall it with CMAKE_ARGS="-DGGML_CUDA=on")'
        )
    return -1 if supported else 0


class Work(NamedTuple):
    """llama.cpp's own count of what it evaluated and decoded, and the seconds each took."""

    prompt_tokens: int
    prompt_seconds: float
    decoded: int
    decode_seconds: float


class LlamaGenerator:
    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 4096,
        device: str = "auto",
        n_threads: int | None = None,
        cores: CoreShare | None = None,
        seed: int = 0,
        repeat_penalty: float = 1.0,
        presence_penalty: float = 0.0,
        passage_order: str = "new-first",
        prefixes: Sequence[Sequence[Message]] = (),
        state_dir: Path | None = None,
    ) -> None:
        self.path = Path(model_path)
        self.name = self.path.stem
        self.passage_order = passage_order
        stat = self.path.stat()
        self.identity = f"{self.path.name}:{stat.st_size}:{int(stat.st_mtime)}"
        self.penalties = {"repeat_penalty": repeat_penalty, "presence_penalty": presence_penalty}
        self.identity += penalties_key(repeat_penalty, presence_penalty)
        self.n_gpu_layers = gpu_layers(device)
        self.device = "cuda" if self.n_gpu_layers else "cpu"
        # The prompt and decoding take the same threads: all the cores others leave free,
        # at most half while ``cores`` says indexing runs (engine/cores.py). ``n_threads``
        # fixes the count instead (benchmarks).
        self.cores = None if n_threads else (cores or CoreShare())
        self.n_threads = n_threads or self.cores.llm_threads()
        self._llm = load_llama(
            model_path=str(self.path),
            n_ctx=n_ctx,
            n_gpu_layers=self.n_gpu_layers,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            seed=seed,
            verbose=False,
        )
        self.n_ctx = self._llm.n_ctx()
        self._formatter = chat_formatter(self._llm)
        # One model, one decoding stream: the TUI and scripts may call from several threads.
        self._lock = threading.Lock()
        # Prompts that start with one of these messages lists (the demos of each kind of
        # question) start from its saved state; ``_entered`` is the one in the context now.
        self.prefixes = [(prefix_key(self.identity, p), list(p)) for p in prefixes]
        self.states = PrefixStates(state_dir)
        self.ahead = PrefixStates(state_dir / "ahead" if state_dir else None, keep=AHEAD_KEEP)
        self._entered: str | None = None
        self._asked = threading.Event()  # a question came: warming up gives way

    def reset(self) -> None:
        """Forget the evaluated prompt, so the next call starts cold (benchmarks)."""
        with self._lock:
            self._llm.reset()
            self._entered = None
            self.ahead.forget()

    def set_threads(self, n: int) -> None:
        """Threads for the prompt and decoding, on the live context: no reload."""
        if n != self.n_threads:
            import llama_cpp

            llama_cpp.llama_set_n_threads(self._llm.ctx, n, n)
            self.n_threads = n

    def _follow_cores(self) -> None:
        if self.cores is not None and not self.n_gpu_layers:
            self.set_threads(self.cores.llm_threads())

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def evaluated(self) -> Work:
        """Prompt tokens evaluated and tokens decoded since the model was loaded, and the
        seconds llama.cpp spent on each (a prefix restored from its saved state, or kept
        from the last prompt, is not evaluated): what a question costs, and the rates this
        machine gave meanwhile, for benchmarks."""
        import llama_cpp

        perf = llama_cpp.llama_perf_context(self._llm.ctx)
        return Work(perf.n_p_eval, perf.t_p_eval_ms / 1000, perf.n_eval, perf.t_eval_ms / 1000)

    def warm(self) -> None:
        """Make every registered prefix's state now (read from disk, or evaluated and
        saved), until the first question comes; the rest are made when first used."""
        for key, prefix in self.prefixes:
            if self._asked.is_set() or not self.prefixes:  # asked, or saving was turned off
                return
            with self._lock:
                if key not in self.states:
                    self._enter(key, prefix)

    def prefill(self, messages: Sequence[Message], *, keep: bool = False, disk: bool = False) -> None:
        """Evaluate the prompt of ``messages`` up to the end of its last message's text, that
        turn left open: a prompt that later starts the same way evaluates only what follows
        (llama.cpp keeps the longest common start of the last prompt). ``keep``: also keep
        it as a state, restored when a later prompt starts with it though other prompts
        came between; ``disk``: saved for another process too (``recall``). The chat
        evaluates the next question's draft (kept) and then its rewrite this way while the
        user reads an answer (Session.read_ahead)."""
        if self._formatter is None:
            return
        with self._lock:
            self._follow_cores()
            self._enter_prefix_of(messages)
            tokens = self._open_turn(messages)
            llm = self._llm
            kept = llm.longest_token_prefix(llm._input_ids, tokens)
            if kept < len(tokens):
                import llama_cpp

                llm.n_tokens = kept  # eval drops the rest of the context from here on
                llm.eval(tokens[kept:])
                llama_cpp.llama_synchronize(llm.ctx)  # llama.cpp counts it (evaluated()) here, not at the next call
            if keep and tokens:
                self.ahead.store(llm, prefix_key(self.identity, messages), disk=disk)

    def recall(self, messages: Sequence[Message]) -> bool:
        """Hold the state another process's ``prefill(messages, keep=True, disk=True)``
        saved, if it did: a prompt that starts with it then starts from it."""
        return self._formatter is not None and self.ahead.load(prefix_key(self.identity, messages))

    def _enter_start_of(self, messages: Sequence[Message]) -> None:
        """The context starts as ``messages``' prompt does, as far as a kept state can make
        it: the longest prompt start kept by ``prefill`` that the prompt starts with (but
        for the last token or two, which the text after it may merge with), where the
        context holds less of it; else the registered prefix it starts with."""
        held = self.ahead.held()
        if held:
            prompt = self._prompt_tokens(messages)
            best, chosen = self._llm.longest_token_prefix(self._llm._input_ids, prompt), None
            for key, tokens in held:
                covered = self._llm.longest_token_prefix(tokens, prompt)
                if covered >= len(tokens) - 2 and covered > best:
                    best, chosen = covered, key
            if chosen is not None and self.ahead.restore(self._llm, chosen):
                registered = self._registered(messages)  # the one the kept start begins with
                self._entered = registered[0] if registered else None
                return
        self._enter_prefix_of(messages)

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The prompt tokens of ``messages``: a new reply to them, or the last one's reply
        gone on with."""
        if messages[-1]["role"] == "assistant":
            return self._reply_begun(messages)[0]
        rendered = self._formatter(messages=list(messages))
        return self._rendered_tokens(rendered, rendered.prompt)

    def _open_turn(self, messages: Sequence[Message]) -> list[int]:
        """The prompt tokens of ``messages`` as the template renders them, up to the end of
        the last message's text (without its trailing spaces, which join the next word)."""
        rendered = self._formatter(messages=list(messages))
        content = messages[-1]["content"].rstrip()
        end = rendered.prompt.rfind(content)
        if not content or end < 0:
            return []
        return self._rendered_tokens(rendered, rendered.prompt[: end + len(content)])

    def _rendered_tokens(self, rendered, text: str) -> list[int]:
        """The tokens of ``text``, the template's rendering or a start of it: its special
        tokens read as such, a BOS first where the template did not write one."""
        return self._llm.tokenize(text.encode("utf-8"), add_bos=not rendered.added_special, special=True)

    def _enter(self, key: str, prefix: list[Message]) -> None:
        """The context holds ``prefix`` evaluated: restored, or evaluated and saved. The
        empty user turn after it is what a template needs to render it; the next prompt
        keeps only what they share."""
        if key == self._entered:
            return
        self._follow_cores()
        if not self.states.restore(self._llm, key):
            try:
                self._llm.create_chat_completion(
                    messages=[*prefix, {"role": "user", "content": ""}], max_tokens=1, temperature=0.0, top_k=1
                )
            except Exception as exc:  # a chat template that refuses an empty turn: no saved prefixes
                log.warning("cannot evaluate the prompt prefix on its own (%s); not saving prefixes", exc)
                self.prefixes, self._entered = [], None
                self._llm.reset()
                return
            self.states.store(self._llm, key)
        self._entered = key

    def _registered(self, messages: Sequence[Message]) -> tuple[str, list[Message]] | None:
        """The registered prefix ``messages`` start with (followed by a message of their own)."""
        for key, prefix in self.prefixes:
            if list(messages[: len(prefix)]) == prefix and len(messages) > len(prefix):
                return key, prefix
        return None

    def _enter_prefix_of(self, messages: Sequence[Message]) -> None:
        registered = self._registered(messages)
        if registered is None:
            self._entered = None  # the context will hold a prompt of no registered prefix
        else:
            self._enter(*registered)

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int, cancel: threading.Event
    ) -> Stream[str, None, None]:
        self._asked.set()
        with self._lock:
            if self.cores is not None:
                self.cores.look_around()  # the model's threads are idle now: they do not count
            self._follow_cores()
            self._enter_start_of(messages)
            settings = {"max_tokens": max_tokens, "temperature": 0.0, "top_k": 1, "stream": True, **self.penalties}
            if messages[-1]["role"] == "assistant" and self._formatter is not None:
                prompt, stop = self._reply_begun(messages)
                chunks = self._llm.create_completion(prompt=prompt, stop=stop, **settings)
            else:
                chunks = self._llm.create_chat_completion(messages=list(messages), **settings)
            try:
                for chunk in chunks:
                    if cancel.is_set():
                        break
                    self._follow_cores()  # indexing may start or end mid-answer
                    choice = chunk["choices"][0]  # a completion's chunk, or a chat completion's
                    text = choice["text"] if "text" in choice else choice["delta"].get("content")
                    if text:
                        yield text
            finally:
                # Closing the stream stops llama.cpp from decoding further tokens.
                chunks.close()

    def yes_probability(self, messages: Sequence[Message]) -> float:
        """How likely the reply to ``messages`` opens with yes rather than no: the two
        words' share of the first token's probability (any case, with or without a
        leading space), from llama.cpp's logits. A small reader that answers "yes" to
        every such question still gives "no" more weight where it should
        (engine/loop/grounding.py)."""
        import numpy as np

        seen: list[np.ndarray] = []

        def keep(_ids, logits):  # called with the first token's logits; changes nothing
            seen.append(np.array(logits, dtype=np.float64))
            return logits

        with self._lock:
            self._follow_cores()
            self._enter_start_of(messages)
            self._llm.create_chat_completion(
                messages=list(messages), max_tokens=1, temperature=0.0, top_k=1, logits_processor=[keep]
            )
        weights = np.exp(seen[0] - seen[0].max())
        yes, no = (weights[list(self._first_tokens(word))].sum() for word in ("yes", "no"))
        return float(yes / (yes + no)) if yes + no > 0 else 0.5

    def _first_tokens(self, word: str) -> set[int]:
        forms = (word, word.capitalize(), word.upper())
        return {
            self._llm.tokenize(f"{space}{form}".encode(), add_bos=False)[0] for form in forms for space in ("", " ")
        }

    def _reply_begun(self, messages: Sequence[Message]) -> tuple[list[int], list[str] | str | None]:
        """The prompt tokens of a reply that begins with the last message's text (the
        model goes on from there), and the template's stop strings: the earlier turns as
        the template renders them for a new reply, then that text as plain text."""
        rendered = self._formatter(messages=list(messages[:-1]))
        turns = self._rendered_tokens(rendered, rendered.prompt)
        begun = self._llm.tokenize(messages[-1]["content"].encode("utf-8"), add_bos=False, special=False)
        return turns + begun, rendered.stop
