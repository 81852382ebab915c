"""Loading a GGUF with llama-cpp-python, without llama.cpp's AMX weight buffers.

llama.cpp built on a CPU with AMX (Intel Sapphire Rapids and later) repacks the weights
for its AMX kernels, and on some machines those crash the process in the first decode
(ggml-org/llama.cpp#20824; seen here with both catalogue readers: docs/performance.md).
Where AMX is built in, the weights stay in plain CPU buffers. ``use_extra_bufts`` is not
an argument of ``Llama``, so the default model parameters are amended while it loads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_loading = threading.Lock()  # the amended defaults are module state: one load at a time


def amx_built_in() -> bool:
    """Whether this llama.cpp build has its AMX kernels (decided when it was compiled)."""
    import llama_cpp

    return b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info()


@contextmanager
def plain_buffers() -> Iterator[None]:
    """Every model loaded inside loads its weights into plain CPU buffers where AMX is
    built in (llama-cpp-python's own server too, run inside it: tests/llama_server.py)."""
    import llama_cpp.llama_cpp as lib

    if not amx_built_in():
        yield
        return
    with _loading:
        defaults = lib.llama_model_default_params

        def plain():
            params = defaults()
            params.use_extra_bufts = False
            return params

        lib.llama_model_default_params = plain
        try:
            yield
        finally:
            lib.llama_model_default_params = defaults


def load_llama(**kwargs):
    """``Llama(**kwargs)``, with plain weight buffers where AMX is built in."""
    from llama_cpp import Llama

    with plain_buffers():
        return Llama(**kwargs)
