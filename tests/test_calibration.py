""" "auto" measures the embedding backends on this CPU once, remembers the fastest, and a
user's explicit backend always wins (engine/embedding/calibration.py, backends.py)."""

from __future__ import annotations

import json
import time

import pytest

from iterretgen_tui.engine import machine
from iterretgen_tui.engine.embedding import backends, calibration

from .fakes import HashEmbedder


class TimedEmbedder(HashEmbedder):
    """A fake backend that takes ``per_text`` seconds for each text."""

    def __init__(self, per_text: float) -> None:
        super().__init__()
        self.per_text = per_text

    def embed_batch(self, texts, *, queries=False):
        time.sleep(self.per_text * len(texts))
        return super().embed_batch(texts, queries=queries)


def never(*args, **kwargs):
    raise AssertionError("a remembered choice loads no other candidate")


def test_the_faster_of_two_backends_is_chosen_and_remembered():
    slow, fast = TimedEmbedder(0.01), TimedEmbedder(0.001)
    messages = []
    result, winner = calibration.choose("minilm", {"slow": lambda: slow, "fast": lambda: fast}, status=messages.append)
    assert result.backend == "fast" and winner is fast
    assert result.rates["fast"] > result.rates["slow"] > 0
    assert set(result.prepare_seconds) == {"slow", "fast"} and result.cpu == machine.cpu_label()
    assert sum(len(call) for call in slow.calls) == 2 + calibration.ROUNDS * calibration.SAMPLES  # a few batches only
    assert any("embedding backend for this CPU: fast" in m for m in messages)

    again, loaded = calibration.choose("minilm", {"slow": never, "fast": never})
    assert again == result and loaded is None
    stored = json.loads(calibration.cache_file().read_text())
    assert [entry["backend"] for entry in stored["choices"].values()] == ["fast"]
    # per embedder: another model is measured for itself
    other, _ = calibration.choose("contriever", {"slow": lambda: TimedEmbedder(0.004)})
    assert other.backend == "slow" and calibration.cached("minilm").backend == "fast"


def test_another_cpu_measures_again(monkeypatch):
    calibration.choose("minilm", {"only": lambda: HashEmbedder()})
    other = {"model": "Other CPU", "extensions": ["AVX2", "AVX-512", "AVX512-VNNI"], "cores": 64}
    monkeypatch.setattr(calibration, "describe_cpu", lambda: other)
    assert calibration.cached("minilm") is None
    result, winner = calibration.choose("minilm", {"vnni": lambda: HashEmbedder()})
    assert result.backend == "vnni" and winner is not None


def test_a_damaged_cache_file_is_measured_again():
    calibration.cache_file().write_text("{not json")
    result, winner = calibration.choose("minilm", {"one": lambda: HashEmbedder()})
    assert result.backend == "one" and winner is not None
    assert calibration.cached("minilm") == result


@pytest.fixture
def fake_backends(monkeypatch, tmp_path):
    """backends.build makes fakes: "torch" slow, "onnx-int8" fast; the model folder is a
    plain folder (nothing the export cannot run)."""
    built = []

    def build(backend, path, *, device, status, **options):
        built.append(backend)
        return TimedEmbedder({"torch": 0.004, "onnx-int8": 0.0005}.get(backend, 0.002))

    monkeypatch.setattr(backends, "build", build)
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer.json").write_text("{}")  # a fast tokenizer, as the export needs
    return model, built


def test_auto_measures_once_and_an_explicit_backend_always_wins(fake_backends):
    model, built = fake_backends
    embedder = backends.load_embedder(model, backend="auto", device="cpu")
    assert (embedder.backend, embedder.chosen_by) == ("onnx-int8", "measured")
    assert set(built) == set(backends.ALWAYS_MEASURED)  # no slow OpenVINO export on first use
    assert backends.remembered(model).backend == "onnx-int8"

    built.clear()
    assert backends.load_embedder(model, backend="auto", device="cpu").backend == "onnx-int8"
    assert built == ["onnx-int8"]  # the remembered winner only: no measuring

    built.clear()
    embedder = backends.load_embedder(model, backend="torch", device="cpu")
    assert (embedder.backend, embedder.chosen_by, built) == ("torch", "setting", ["torch"])
    assert backends.remembered(model).backend == "onnx-int8"  # the override changed nothing stored


@pytest.mark.slow
def test_the_first_index_on_an_empty_data_directory(tmp_path, capsys):
    """A fresh install: nothing measured, nothing exported but what tests before made. The
    first index measures the backends (no OpenVINO export: a minute), indexes with the
    winner, and a second run finds the same index and measures nothing."""
    from iterretgen_tui import cli, paths
    from iterretgen_tui.config import Settings
    from iterretgen_tui.session import Session

    folder = tmp_path / "docs"
    folder.mkdir()
    for n in range(12):
        (folder / f"note{n}.txt").write_text(f"Note {n}: the meeting about topic {n} moved to room {n + 100}.")
    assert not calibration.cache_file().exists() and not (paths.data_dir() / "indexes").exists()
    messages = []
    session = Session(Settings(device="cpu"))
    session.load_embedder(status=messages.append)
    assert session.embedder.chosen_by == "measured" and session.embedder.backend in backends.candidates(
        [session.embedder.path]
    )
    assert not any("preparing the openvino-int8 export" in m for m in messages)
    report = session.open_folder(folder)
    assert report.passages == 12 and report.embedded == 12
    chosen = calibration.cache_file().read_text()
    assert session.info()["embed_backend"] == session.embedder.backend

    again = Session(Settings(device="cpu"))
    messages.clear()
    again.load_embedder(status=messages.append)
    assert again.embedder.identity == session.embedder.identity
    assert not any("measuring" in m for m in messages) and calibration.cache_file().read_text() == chosen
    assert again.open_folder(folder).embedded == 0  # the same index: nothing embedded twice
    capsys.readouterr()
    assert cli.main(["models", "list", "--json", "--device", "cpu"]) == 0
    listed = json.loads(capsys.readouterr().out)["embed_backend"]
    assert listed["backend"] == session.embedder.backend and "measured" in listed["summary"]


def test_a_round_holds_two_batches_for_every_stream():
    """Many cores run many OpenVINO streams: a round of SAMPLES texts left most of them idle
    and read that backend slow."""
    wide, plain = TimedEmbedder(0.0), TimedEmbedder(0.0)
    wide.texts_in_flight = 4 * 16  # four streams of 16
    calibration.calibrate({"wide": lambda: wide, "plain": lambda: plain})
    assert sum(len(call) for call in plain.calls) == 2 + calibration.ROUNDS * 128
    assert calibration.round_size([plain]) == calibration.SAMPLES
