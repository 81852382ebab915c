"""llama-cpp-python's own OpenAI-compatible server (`python -m llama_cpp.server`) on a free
localhost port: what the served reader's tests and scripts/bench_served.py talk to."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# `python -m llama_cpp.server`, its model loaded as the app loads one: on a CPU with AMX,
# llama.cpp's AMX kernels crash the first decode (engine/loop/llama_load.py).
_SERVE = (
    "import runpy\n"
    "from iterretgen_tui.engine.loop.llama_load import plain_buffers\n"
    "with plain_buffers():\n"
    "    runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n"
)


class ServerDidNotStart(RuntimeError):
    """The server exited or did not answer in time; the message ends with its log."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def llama_cpp_server(gguf: Path, *, n_ctx: int, threads: int, start_seconds: float = 120) -> Iterator[str]:
    """The server running ``gguf`` with ``threads`` for the prompt and decoding alike (its
    default prompt threads are all the cores: on a busy CPU many times slower), and the
    output layer computed for the last prompt token only, as in process (its default
    computes it for every prompt token, for logprobs no one asks here); its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-c", _SERVE, "--model", str(gguf), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads)]
    command += ["--n_threads_batch", str(threads), "--logits_all", "false"]
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + start_seconds
            while True:
                try:
                    urllib.request.urlopen(f"{url}/v1/models", timeout=2).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        said = log.read().decode(errors="replace")[-2000:]
                        raise ServerDidNotStart(f"llama_cpp.server did not start:\n{said}") from None
                    time.sleep(0.25)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
