"""Evaluated prompt prefixes (the instruction and demos), kept as llama.cpp states.

llama.cpp reuses an evaluated prompt only while the next prompt starts with it, and it
holds one prompt at a time. A factoid question after an open one (their demos differ)
evaluated the factoid demos again, and every new process (`ask`, a chat's first
question) evaluated them once more: about 700 tokens, 10 to 17 s with the 1.5B on 2
cores (docs/performance.md). Each registered prefix's state is kept in memory and on
disk, so switching back costs a copy and a new process starts with its demos evaluated.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import struct
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

SEQUENCE = 0  # llama-cpp-python evaluates every prompt in sequence 0
KEEP_FILES = 12  # states on disk, all models together (four per model); older ones are removed
STALE_SECONDS = 60  # a temporary file this old was left by a process stopped while writing
_HEADER = struct.Struct("<4sII")  # magic, token count, state bytes
_MAGIC = b"IRP1"


def prefix_key(identity: str, messages: Sequence[dict[str, str]]) -> str:
    """The state's name: the model file, the library that wrote the state, the messages."""
    import llama_cpp

    text = json.dumps([identity, llama_cpp.__version__, list(messages)], sort_keys=True)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]


class PrefixStates:
    """States of evaluated prefixes by key: in memory for this process, and as files in
    ``folder`` (None: memory only) for the next one; the ``keep`` last stored or read of
    each. A state is the sequence's KV cells and the tokens they hold; about 20 MB for 700
    tokens of the 1.5B."""

    def __init__(self, folder: Path | None, *, keep: int = KEEP_FILES) -> None:
        self.folder = folder
        self.keep = keep
        self._memory: dict[str, tuple[np.ndarray, bytes]] = {}

    def __contains__(self, key: str) -> bool:
        """Whether this process holds ``key``'s state (one on disk is read when restored)."""
        return key in self._memory

    def forget(self) -> None:
        """Hold nothing in memory (the files stay, as for a new process)."""
        self._memory.clear()

    def held(self) -> list[tuple[str, np.ndarray]]:
        """The keys and tokens of the states this process holds."""
        return [(key, tokens) for key, (tokens, _) in self._memory.items()]

    def load(self, key: str) -> bool:
        """Hold ``key``'s state from disk, if there is one (a state another process saved)."""
        saved = self._read(key)
        if saved is not None:
            self._hold(key, saved)
        return saved is not None

    def _hold(self, key: str, saved: tuple[np.ndarray, bytes]) -> None:
        self._memory.pop(key, None)
        self._memory[key] = saved  # the newest last: the oldest goes first
        while len(self._memory) > self.keep:
            del self._memory[next(iter(self._memory))]

    def restore(self, llm, key: str) -> bool:
        """Put ``key``'s state into ``llm``'s context; False when there is none or
        llama.cpp refuses it (the context is then as if nothing was evaluated)."""
        saved = self._memory.get(key) or self._read(key)
        if saved is None:
            return False
        tokens, state = saved
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        import llama_cpp

        if llama_cpp.llama_state_seq_set_data(llm.ctx, buffer, len(state), SEQUENCE) != len(state):
            log.warning("llama.cpp refused the saved prompt state %s; evaluating the prompt", key)
            llm.reset()
            self._forget(key)
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        self._hold(key, saved)
        return True

    def store(self, llm, key: str, *, disk: bool = True) -> None:
        """Keep what ``llm`` has evaluated under ``key``; in memory alone without ``disk``."""
        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(llm.ctx, SEQUENCE)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llm.ctx, buffer, size, SEQUENCE)
        saved = (np.array(llm.input_ids[: llm.n_tokens], dtype=np.int32), bytes(buffer[:written]))
        self._hold(key, saved)
        if disk and self.folder is not None:
            try:
                self._write(key, *saved)
            except OSError as exc:  # a full or read-only disk costs the next process time, nothing else
                log.warning("could not save the prompt state %s: %s", key, exc)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.state"

    def _read(self, key: str) -> tuple[np.ndarray, bytes] | None:
        if self.folder is None:
            return None
        try:
            data = self._path(key).read_bytes()
            magic, count, size = _HEADER.unpack_from(data)
            start = _HEADER.size + 4 * count
            if magic != _MAGIC or len(data) != start + size:
                raise ValueError("truncated or not a prompt state")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, struct.error) as exc:
            log.warning("ignoring the damaged prompt state %s: %s", key, exc)
            self._forget(key)
            return None
        tokens = np.frombuffer(data, dtype="<i4", count=count, offset=_HEADER.size).astype(np.int32)
        return tokens, data[start:]

    def _write(self, key: str, tokens: np.ndarray, state: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=self.folder, prefix=f".{key}.")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(_HEADER.pack(_MAGIC, len(tokens), len(state)))
                out.write(tokens.astype("<i4").tobytes())
                out.write(state)
            os.replace(name, self._path(key))  # a reader never sees half a file
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        files = sorted(self.folder.glob("*.state"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[self.keep :]:
            old.unlink(missing_ok=True)
        for stale in self.folder.glob(".*"):
            with contextlib.suppress(FileNotFoundError):  # another process may remove it first
                if time.time() - stale.stat().st_mtime > STALE_SECONDS:
                    stale.unlink()

    def _forget(self, key: str) -> None:
        self._memory.pop(key, None)
        if self.folder is not None:
            self._path(key).unlink(missing_ok=True)
