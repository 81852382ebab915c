"""Shared fixtures. No test may reach the network: sockets are blocked for the session
(loopback stays open for the local stand-in servers some tests start)."""

from __future__ import annotations

import socket

import pytest

_real_connect = socket.socket.connect


def _guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and (host in ("localhost", "::1") or host.startswith("127.")):
        return _real_connect(self, address)
    if self.family == socket.AF_UNIX:
        return _real_connect(self, address)
    raise RuntimeError(f"tests may not reach the network (tried {address!r})")


@pytest.fixture(autouse=True, scope="session")
def _no_network():
    socket.socket.connect = _guarded_connect
    yield
    socket.socket.connect = _real_connect


@pytest.fixture(scope="session")
def _onnx_exports(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-exports")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch, _onnx_exports):
    """Every test gets its own ITERRETGEN_HOME: no test touches the user's data. The ONNX
    exports of the embedded model are shared, as on a machine: one export, not one per test.
    The home lies beside tmp_path, not in it: tests that index tmp_path must not find it."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ITERRETGEN_HOME", str(home))
    (home / "cache").mkdir()
    (home / "cache" / "onnx").symlink_to(_onnx_exports)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    # The suite reads with the embedded SmolLM2, never the default reader (a 1.1 GB pull).
    monkeypatch.setenv("ITERRETGEN_LLM", "smollm2-135m")
    # No `ask` leaves a read-ahead process behind (test_read_ahead.py turns it on).
    monkeypatch.setenv("ITERRETGEN_READ_AHEAD", "false")
    yield


@pytest.fixture(autouse=True)
def _no_models_of_this_machine(monkeypatch):
    """Model discovery sees none of this machine's stores (Ollama, LM Studio, the Hugging
    Face cache, the checkout's models/ folder...): test_local_models.py builds its own."""
    from iterretgen_tui.models import found

    monkeypatch.setattr(found, "machine_stores", lambda: [])
    monkeypatch.delenv("ITERRETGEN_MODEL_FOLDERS", raising=False)
