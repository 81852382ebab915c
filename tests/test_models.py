"""The model catalogue, name resolution, devices, and `models list`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iterretgen_tui.models import catalogue, devices
from iterretgen_tui import cli, models
from iterretgen_tui.models.catalogue import CatalogueError, Entry
from iterretgen_tui.models import ModelError


def _raw(**overrides) -> dict:
    raw = {
        "name": "tiny", "kind": "llm", "description": "a test model", "size_mb": 1,
        "repo": "test/tiny-GGUF", "files": ["tiny.gguf"], "context_length": 512,
    }
    return {**raw, **overrides}


def test_the_shipped_catalogue_is_valid_and_has_what_users_need():
    entries = catalogue.load()
    assert entries["smollm2-135m"].embedded and entries["smollm2-135m"].kind == "llm"
    assert entries["all-minilm-l6-v2"].embedded and entries["all-minilm-l6-v2"].metric == "cosine"
    contriever = entries["contriever-msmarco"]
    assert (contriever.repo, contriever.metric, contriever.pooling) == ("facebook/contriever-msmarco", "dot", "mean")
    chat = [e for e in entries.values() if e.kind in catalogue.CHAT_KINDS and not e.embedded]
    assert len(chat) >= 3 and all(e.files[0].endswith(".gguf") for e in chat)
    assert any(e.kind == "judge" for e in entries.values())


def test_validation_reports_every_problem_at_once():
    bad = [
        _raw(),
        _raw(),  # the same name twice
        _raw(name="Bad/Name", kind="robot"),
        _raw(name="no-source", repo=""),
        _raw(name="sums", checksums={"tiny.gguf": "abc", "other.bin": "0" * 64}),
        _raw(name="emb", kind="embedder", files=["config.json"]),
        {"name": "bare", "kind": "llm", "colour": "red"},
    ]
    with pytest.raises(CatalogueError) as caught:
        catalogue.validate({"model": bad})
    message = str(caught.value)
    for expected in (
        "'tiny': the name is used twice",
        "'Bad/Name': a name is lower-case",
        "'Bad/Name': kind must be one of llm, embedder, judge",
        "'no-source': give either package (embedded) or repo (pullable)",
        "'sums': the checksum of 'tiny.gguf' is not a lower-case sha256",
        "'sums': checksum for 'other.bin', which is not in files",
        "'emb': an embedder needs metric",
        "'emb': an embedder needs its pooling",
        "'bare': missing 'description'",
        "'bare': unknown key 'colour'",
    ):
        assert expected in message


def test_validation_accepts_a_well_formed_entry():
    entries = catalogue.validate({"model": [_raw(checksums={"tiny.gguf": "a" * 64})]})
    assert entries["tiny"] == Entry(
        name="tiny", kind="llm", description="a test model", size_mb=1, repo="test/tiny-GGUF",
        files=("tiny.gguf",), checksums={"tiny.gguf": "a" * 64}, context_length=512,
    )


def test_embedded_names_resolve_to_the_packaged_weights():
    assert models.resolve_llm("smollm2-135m") == models.embedded_llm_path()
    assert models.resolve_embedder("all-minilm-l6-v2") == models.embedded_embedder_path()
    assert (models.embedded_embedder_path() / "config.json").exists()


def test_a_catalogue_name_not_yet_pulled_says_how_to_pull_it():
    with pytest.raises(ModelError, match=r"run `iterretgen-chat models pull qwen2.5-3b-instruct`"):
        models.resolve_llm("qwen2.5-3b-instruct")
    with pytest.raises(ModelError, match="run `iterretgen-chat models pull contriever-msmarco`"):
        models.resolve_embedder("contriever-msmarco")


def test_a_name_of_the_wrong_kind_is_refused():
    with pytest.raises(ModelError, match="contriever-msmarco is an embedder, not a chat model"):
        models.resolve_llm("contriever-msmarco")
    with pytest.raises(ModelError, match="smollm2-135m is a chat model, not an embedder"):
        models.resolve_embedder("smollm2-135m")


def test_unknown_names_and_missing_paths_are_told_apart(tmp_path):
    with pytest.raises(ModelError, match="unknown model 'qwen9-1t'"):
        models.resolve_llm("qwen9-1t")
    with pytest.raises(ModelError, match="a .gguf file not found"):
        models.resolve_llm(str(tmp_path / "nothing.gguf"))
    with pytest.raises(ModelError, match="a sentence-transformers folder not found"):
        models.resolve_embedder(str(tmp_path / "no-folder"))


def test_local_paths_resolve_as_given(tmp_path):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF" + bytes(16))
    assert models.resolve_llm(str(gguf)) == gguf
    assert models.resolve_embedder(str(tmp_path)) == tmp_path


def test_embedder_metric_comes_from_the_catalogue(tmp_path):
    assert models.embedder_metric("contriever-msmarco") == "dot"
    assert models.embedder_metric("all-minilm-l6-v2") == "cosine"
    assert models.embedder_metric(str(tmp_path)) is None
    assert models.embedder_metric("smollm2-135m") is None


def test_a_pulled_name_resolves_from_its_record_even_without_the_catalogue(monkeypatch):
    record = models.Pulled("retired-model", "llm", "x/y", "c" * 40, {"m.gguf": {"size": 20, "sha256": None}})
    record.folder.mkdir(parents=True)
    (record.folder / "m.gguf").write_bytes(b"GGUF" + bytes(16))
    record.save()
    assert models.resolve_llm("retired-model") == record.folder / "m.gguf"
    assert [p.name for p in models.pulled_models()] == ["retired-model"]


def _fake_libraries(monkeypatch, *, offload: bool, cuda: bool) -> None:
    import llama_cpp
    import torch

    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: offload)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)


def test_auto_picks_the_gpu_where_each_library_can_use_it(monkeypatch):
    _fake_libraries(monkeypatch, offload=True, cuda=True)
    assert devices.describe_devices("auto") == {
        "requested": "auto", "llm": "cuda", "embedder": "cuda",
        "summary": "llm cuda · embedder cuda", "problems": [],
    }
    _fake_libraries(monkeypatch, offload=False, cuda=True)
    assert devices.describe_devices("auto")["summary"] == "llm cpu · embedder cuda"
    assert devices.describe_devices("cpu")["summary"] == "llm cpu · embedder cpu"


def test_requesting_cuda_without_gpu_builds_says_what_to_install(monkeypatch):
    _fake_libraries(monkeypatch, offload=False, cuda=False)
    described = devices.describe_devices("cuda")
    assert described["llm"] == "cpu"
    assert any("-DGGML_CUDA=on" in p for p in described["problems"])
    assert any("torch was built without CUDA" in p for p in described["problems"])


def test_models_list_json_shows_installed_models_devices_and_the_rest(capsys, tmp_path):
    missing = str(tmp_path / "gone.gguf")
    assert cli.main(["models", "list", "--json", "--llm", missing, "--device", "cpu"]) == 0
    listed = json.loads(capsys.readouterr().out)
    by_name = {item["name"]: item for item in listed["installed"]}
    assert by_name["smollm2-135m"]["source"] == "embedded" and by_name["smollm2-135m"]["size_bytes"] > 10**7
    assert by_name["all-minilm-l6-v2"]["in_use"] is True
    assert by_name[missing] == {
        "name": missing, "kind": "llm", "source": "local", "path": missing,
        "size_bytes": None, "metric": "", "in_use": True,
    }
    assert "contriever-msmarco" in {item["name"] for item in listed["available"]}
    assert listed["devices"]["summary"] == "llm cpu · embedder cpu"


def test_models_list_text(capsys):
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    assert " * smollm2-135m " in out and "embedded" in out
    assert "available (iterretgen-chat models pull NAME):" in out
    assert "llama-3.1-8b-instruct" in out
    assert out.splitlines()[-1].startswith("devices (--device auto): llm ")


def test_config_local_path_is_listed_with_its_size(tmp_path, monkeypatch):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF" + bytes(96))
    found = models.installed({"llm": str(gguf), "embedder": "all-minilm-l6-v2"})
    assert models.Installed(str(gguf), "llm", "local", str(gguf), 100) in found
    assert [i.source for i in found if i.name == "all-minilm-l6-v2"] == ["embedded"]


def test_the_catalogue_ships_in_the_wheel():
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text("utf-8"))
    assert "models/catalogue.toml" in pyproject["tool"]["setuptools"]["package-data"]["iterretgen_tui"]


def test_the_status_hint_names_the_embedded_model_and_how_to_get_a_better_one():
    for name in (models.EMBEDDED_LLM, Path(catalogue.load()[models.EMBEDDED_LLM].path).stem):
        hint = models.upgrade_hint(name)
        assert hint.startswith("embedded 135M model") and "iterretgen-chat models pull " in hint
    assert models.upgrade_hint("qwen2.5-3b-instruct") == ""
