"""Models already on this machine: the stores of Ollama, LM Studio, GPT4All, the Hugging
Face cache and llama.cpp, the checkout's models/ folder and configured folders, built as
fakes in a temporary home around the embedded SmolLM2 (linked, never copied)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import gguf
import numpy as np
import pytest

from iterretgen_tui import cli, config, models, paths
from iterretgen_tui.models import ModelError, catalogue, found
from iterretgen_tui.models.found import machine_stores  # the real one: conftest hides it from other tests
from iterretgen_tui.models.gguf_header import HeaderError, read_header

from .test_tui_welcome import DEMO, models_app, select, stored_settings, table_rows
from .tui_support import pilot_test, wait_for

SMOL = models.embedded_path(catalogue.load()[models.EMBEDDED_LLM])
TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty user home, the only place discovery looks."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(found, "machine_stores", machine_stores)
    monkeypatch.setattr(found, "CHECKOUT_MODELS", tmp_path / "checkout" / "models")
    monkeypatch.setattr(found, "OLLAMA_SERVICE", tmp_path / "no-service")
    return home


def link(path: Path, target: Path = SMOL) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def ollama_model(store: Path, name: str, blob: Path | None = SMOL, host: str = "registry.ollama.ai") -> Path:
    """A manifest for ``name`` (model:tag or namespace/model:tag) and, unless ``blob`` is
    None, its model layer's blob linked to ``blob``. Two tags of one file share one blob."""
    repo, tag = name.split(":")
    namespace, model = repo.split("/") if "/" in repo else ("library", repo)
    digest = "sha256:" + hashlib.sha256(str(blob).encode()).hexdigest()
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64, "size": 10},
        {"mediaType": "application/vnd.ollama.image.model", "digest": digest, "size": 98_362_432},
    ]
    manifest = store / "manifests" / host / namespace / model / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}), "utf-8")
    blob_path = store / "blobs" / digest.replace(":", "-")
    if blob is not None and not blob_path.exists():
        link(blob_path, blob)
    return blob_path


def synthetic_gguf(
    path: Path,
    architecture: str = "llama",
    *,
    template: bool = True,
    kind: str = "model",
    pooling: bool = False,
    weights: bool = True,
    endianess: gguf.GGUFEndian = gguf.GGUFEndian.LITTLE,
) -> Path:
    """A tiny GGUF (a few hundred bytes, each one its own file): a vocabulary array, two
    tensors of 8x3 and 8x2, Q8_0 as its file type. Without ``weights`` it ends after its
    tensor infos."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), architecture, endianess=endianess)
    writer.add_type(kind)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_token_list(["<s>", "hello", "wörld"])
    if pooling:
        writer.add_pooling_type(gguf.PoolingType.MEAN)
    if template:
        writer.add_chat_template(TEMPLATE)
    writer.add_tensor("token_embd.weight", np.ones((3, 8), dtype=np.float32))
    writer.add_tensor("output.weight", np.ones((2, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file() if weights else writer.write_ti_data_to_file()
    writer.close()
    return path


def listing(folders=()) -> dict[str, models.Installed]:
    return {item.name: item for item in models.found_models(folders)}


# The header.


def test_the_header_reader_agrees_with_gguf_and_never_needs_the_weights(tmp_path):
    whole = synthetic_gguf(tmp_path / "whole.gguf")
    header = read_header(synthetic_gguf(tmp_path / "cut.gguf", weights=False))
    reference = gguf.GGUFReader(whole)
    for key in ("general.architecture", "general.type", "general.file_type", "tokenizer.chat_template"):
        assert header.metadata[key] == reference.fields[key].contents()
    assert header.metadata["tokenizer.ggml.tokens"] == 3  # an array is kept as its length
    assert header.parameters == sum(int(t.n_elements) for t in reference.tensors) == 40
    big = read_header(synthetic_gguf(tmp_path / "big.gguf", endianess=gguf.GGUFEndian.BIG, weights=False))
    assert (big.metadata["tokenizer.chat_template"], big.parameters) == (TEMPLATE, 40)


def test_a_file_that_is_no_gguf_or_is_cut_short_raises_a_header_error(tmp_path):
    (tmp_path / "text.gguf").write_text("hello", "utf-8")
    whole = synthetic_gguf(tmp_path / "whole.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(whole[:60])
    (tmp_path / "empty.gguf").write_bytes(b"")
    for name, message in (("text", "not a GGUF file"), ("cut", "malformed header"), ("empty", "not a GGUF file")):
        with pytest.raises(HeaderError, match=message):
            read_header(tmp_path / f"{name}.gguf")


def test_the_embedded_model_s_header_is_read_in_milliseconds():
    start = time.perf_counter()
    header = read_header(SMOL)
    assert time.perf_counter() - start < 2  # ~10 ms on a 2-core machine; the weights are 98 MB
    assert header.metadata["general.size_label"] == "135M" and header.parameters == 134_515_008


# The stores.


def test_ollama_models_take_ollama_s_names_and_resolve_to_their_blob(home, tmp_path, monkeypatch):
    store = home / ".ollama" / "models"
    blob = ollama_model(store, "qwen2.5:7b")
    assert ollama_model(store, "qwen2.5:latest") == blob  # one file, two tags: both listed
    ollama_model(store, "someone/tiny:latest", synthetic_gguf(tmp_path / "tiny.gguf"))
    ollama_model(store, "org/repo:Q8_0", synthetic_gguf(tmp_path / "hf.gguf"), host="hf.co")
    elsewhere = tmp_path / "ollama-elsewhere"
    monkeypatch.setenv("OLLAMA_MODELS", str(elsewhere))
    ollama_model(elsewhere, "llama3.2:1b", synthetic_gguf(tmp_path / "llama.gguf"))
    listed = listing()
    assert list(listed) == [
        "llama3.2:1b",  # $OLLAMA_MODELS before ~/.ollama/models
        "hf.co/org/repo:Q8_0",
        "qwen2.5:7b",
        "qwen2.5:latest",
        "someone/tiny:latest",
    ]
    smol = listed["qwen2.5:7b"]
    assert (smol.source, smol.found_in, smol.kind, smol.path) == ("found", "Ollama", "llm", str(blob))
    facts = (smol.size_bytes, smol.quantisation, smol.parameters, smol.problem)
    assert facts == (SMOL.stat().st_size, "Q4_1", "135M", "")  # from the header: general.size_label
    assert (listed["llama3.2:1b"].quantisation, listed["llama3.2:1b"].parameters) == ("Q8_0", "40")  # counted
    assert models.resolve_llm("qwen2.5:7b") == blob
    assert models.resolve_llm("qwen2.5") == blob  # no tag: :latest, as `ollama run` takes it
    assert models.resolve_llm("someone/tiny") == models.resolve_llm("someone/tiny:latest")
    assert models.choose_reader("qwen2.5:7b", fallback=True) == models.Reader("qwen2.5:7b", blob)


def test_a_manifest_without_its_blob_is_listed_broken_and_cannot_read(home, capsys):
    store = home / ".ollama" / "models"
    blob = ollama_model(store, "qwen2.5:3b", blob=None)
    junk = store / "manifests" / "registry.ollama.ai" / "library" / "junk" / "latest"
    junk.parent.mkdir(parents=True)
    junk.write_text("{not json", "utf-8")
    listed = listing()
    assert list(listed) == ["qwen2.5:3b"]  # the unreadable manifest is passed over
    broken = listed["qwen2.5:3b"]
    assert broken.size_bytes is None and broken.problem == f"its file is missing: {blob}"
    with pytest.raises(ModelError) as caught:
        models.resolve_llm("qwen2.5:3b")
    assert str(caught.value) == f"qwen2.5:3b (found in Ollama) cannot be a reader: its file is missing: {blob}"
    assert cli.main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5:3b" in out and f"not offered: its file is missing: {blob}" in out


def test_lm_studio_gpt4all_hugging_face_llama_cpp_and_the_models_folder_are_found(home):
    synthetic_gguf(home / ".lmstudio" / "models" / "lmstudio-community" / "Qwen-GGUF" / "Qwen-Q8_0.gguf")
    synthetic_gguf(home / ".cache" / "lm-studio" / "models" / "old" / "repo" / "old-lm-studio.gguf")
    synthetic_gguf(home / ".local" / "share" / "nomic.ai" / "GPT4All" / "gpt4all-model.gguf")
    hub = home / ".cache" / "huggingface" / "hub" / "models--org--smol-GGUF"
    blob = synthetic_gguf(hub / "blobs" / ("c" * 64))
    for revision in ("1" * 40, "2" * 40):  # two revisions of one file: one model
        link(hub / "snapshots" / revision / "smol-hf.Q8_0.gguf", Path("../../blobs") / blob.name)
    synthetic_gguf(home / ".cache" / "llama.cpp" / "org_repo_model.gguf")
    split = found.CHECKOUT_MODELS / "split"
    link(split / "big-00001-of-00002.gguf")
    (split / "big-00002-of-00002.gguf").write_bytes(b"rest")
    listed = listing()
    assert {name: item.found_in for name, item in listed.items()} == {
        "big": "models/ folder",
        "Qwen-Q8_0": "LM Studio",
        "old-lm-studio": "LM Studio",
        "gpt4all-model": "GPT4All",
        "smol-hf.Q8_0": "Hugging Face cache",
        "org_repo_model": "llama.cpp cache",
    }
    assert all(item.problem == "" for item in listed.values())
    big = listed["big"]
    assert big.size_bytes == SMOL.stat().st_size + 4  # both shards; the first is the one to open
    assert (Path(big.path).name, big.quantisation, big.parameters) == ("big-00001-of-00002.gguf", "Q4_1", "135M")
    hf = models.resolve_llm("smol-hf.Q8_0")
    assert hf.is_symlink() and hf.resolve() == blob  # followed into the blobs, not copied


def test_a_split_model_with_a_shard_missing_is_not_offered(home):
    split = found.CHECKOUT_MODELS
    link(split / "big-00001-of-00003.gguf")
    (split / "big-00003-of-00003.gguf").write_bytes(b"rest")
    assert listing()["big"].problem == f"its file is missing: {split / 'big-00002-of-00003.gguf'}"


def test_the_hugging_face_cache_llama_cpp_and_gpt4all_follow_their_environment(home, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("LLAMA_CACHE", str(tmp_path / "llama"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    synthetic_gguf(tmp_path / "hf" / "hub" / "models--a--b" / "snapshots" / "rev" / "from-hf-home.gguf")
    synthetic_gguf(tmp_path / "llama" / "from-llama-cache.gguf")
    synthetic_gguf(tmp_path / "data" / "nomic.ai" / "GPT4All" / "from-xdg.gguf")
    assert set(listing()) == {"from-hf-home", "from-llama-cache", "from-xdg"}
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    synthetic_gguf(tmp_path / "hub-cache" / "models--a--b" / "snapshots" / "rev" / "from-hub-cache.gguf")
    assert set(listing()) == {"from-hub-cache", "from-llama-cache", "from-xdg"}


def test_a_name_taken_earlier_is_qualified_and_a_file_found_twice_is_listed_once(home, tmp_path):
    synthetic_gguf(tmp_path / "mine" / "dup.gguf")
    synthetic_gguf(found.CHECKOUT_MODELS / "dup.gguf")
    synthetic_gguf(found.CHECKOUT_MODELS / f"{models.EMBEDDED_LLM}.gguf")  # the catalogue's name
    lm_studio = home / ".lmstudio" / "models"
    synthetic_gguf(lm_studio / "pub" / "other" / "dup.gguf")
    synthetic_gguf(lm_studio / "pub" / "repo" / "dup.gguf")
    synthetic_gguf(tmp_path / "same" / "one.gguf")
    folders = [str(tmp_path / "mine"), str(tmp_path / "same"), str(tmp_path / "same")]
    assert {name: item.found_in for name, item in listing(folders).items()} == {
        "dup": "configured folder",  # configured folders come first
        "one": "configured folder",  # once, though configured twice
        "models/dup": "models/ folder",
        f"models/{models.EMBEDDED_LLM}": "models/ folder",
        "lmstudio/dup": "LM Studio",
        str(lm_studio / "pub" / "repo" / "dup.gguf"): "LM Studio",  # qualified and still taken: its path
    }
    assert models.resolve_llm(models.EMBEDDED_LLM) == SMOL  # the catalogue's name wins
    assert models.resolve_llm("lmstudio/dup", folders) == lm_studio / "pub" / "other" / "dup.gguf"
    # LM Studio's folder configured as well: its models are listed once, as configured.
    assert {item.found_in for item in listing([str(lm_studio)]).values()} == {"configured folder", "models/ folder"}


def test_embedding_models_adapters_and_models_without_a_chat_template_are_listed_not_offered(home):
    folder = found.CHECKOUT_MODELS
    synthetic_gguf(folder / "bert-embed.gguf", "bert", template=False)
    synthetic_gguf(folder / "qwen3-embed.gguf", "qwen3", pooling=True)
    synthetic_gguf(folder / "lora.gguf", kind="adapter")
    synthetic_gguf(folder / "mmproj-vision.gguf", "clip", template=False)
    synthetic_gguf(folder / "base.gguf", template=False)
    synthetic_gguf(folder / "chat.gguf")
    (folder / "broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00\xff")
    (folder / "not-gguf.gguf").write_text("hello", "utf-8")
    listed = listing()
    assert listed.pop("broken").problem.startswith("its header cannot be read: malformed header")
    assert {name: (item.kind, item.problem) for name, item in listed.items()} == {
        "base": ("llm", "no chat template in its header (tokenizer.chat_template)"),
        "bert-embed": ("embedder", "an embedding model: it cannot write answers"),
        "chat": ("llm", ""),
        "lora": ("adapter", "a LoRA adapter, not a chat model"),
        "mmproj-vision": ("mmproj", "a multimodal projector, not a chat model"),
        "not-gguf": ("llm", "its header cannot be read: not a GGUF file"),
        "qwen3-embed": ("embedder", "an embedding model: it cannot write answers"),
    }
    chat = listed["chat"]
    assert (chat.quantisation, chat.parameters, chat.size_bytes) == (
        "Q8_0",
        "40",
        (folder / "chat.gguf").stat().st_size,
    )
    assert models.resolve_llm("chat") == folder / "chat.gguf"
    for name in ("base", "bert-embed", "lora"):
        with pytest.raises(ModelError, match=rf"^{name} \(found in models/ folder\) cannot be a reader: "):
            models.resolve_llm(name)


def test_the_quantisation_comes_from_the_file_name_when_the_header_has_none(home):
    path = found.CHECKOUT_MODELS / "model-IQ3_XXS.gguf"
    path.parent.mkdir(parents=True)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_chat_template(TEMPLATE)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model = listing()["model-IQ3_XXS"]
    assert (model.quantisation, model.parameters) == ("IQ3_XXS", "")  # no file type; no tensors to count


def test_a_store_that_cannot_be_read_is_passed_over(home, tmp_path, monkeypatch):
    (home / ".lmstudio").mkdir()
    (home / ".lmstudio" / "models").write_text("a file, not a folder", "utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "nowhere"))
    loop = home / ".cache" / "llama.cpp"
    loop.parent.mkdir(parents=True)
    loop.symlink_to(loop)
    ollama_model(home / ".ollama" / "models", "qwen2.5:7b")
    synthetic_gguf(home / ".local" / "share" / "nomic.ai" / "GPT4All" / "fine.gguf")

    def unreadable(root):
        raise PermissionError(13, "Permission denied", str(root))

    monkeypatch.setattr(found, "ollama_models", unreadable)
    assert list(listing()) == ["fine"]


def test_model_folders_come_from_the_config_file_and_the_environment(home, tmp_path, monkeypatch):
    synthetic_gguf(tmp_path / "a" / "in-a.gguf")
    synthetic_gguf(tmp_path / "b" / "sub" / "in-b.gguf")
    config.save(config.Settings(model_folders=(str(tmp_path / "a"),)))
    assert config.load().model_folders == (str(tmp_path / "a"),)
    assert models.resolve_llm("in-a") == tmp_path / "a" / "in-a.gguf"  # the configured folders by default
    monkeypatch.setenv("ITERRETGEN_MODEL_FOLDERS", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}{os.pathsep}")
    assert config.load().model_folders == (str(tmp_path / "a"), str(tmp_path / "b"))
    assert models.resolve_llm("in-b") == tmp_path / "b" / "sub" / "in-b.gguf"  # subfolders too
    with pytest.raises(ModelError, match="unknown model 'in-b'"):
        models.resolve_llm("in-b", folders=[str(tmp_path / "a")])
    with pytest.raises(config.ConfigError, match="model_folders must be a list of folders"):
        config.load({"model_folders": 3})


def test_models_list_json_describes_found_models(home, capsys):
    blob = ollama_model(home / ".ollama" / "models", "qwen2.5:7b")
    assert cli.main(["models", "list", "--json", "--llm", "qwen2.5:7b"]) == 0
    listed = {item["name"]: item for item in json.loads(capsys.readouterr().out)["installed"]}
    assert listed["qwen2.5:7b"] == {
        "name": "qwen2.5:7b",
        "kind": "llm",
        "source": "found",
        "path": str(blob),
        "size_bytes": SMOL.stat().st_size,
        "metric": "",
        "found_in": "Ollama",
        "quantisation": "Q4_1",
        "parameters": "135M",
        "problem": "",
        "in_use": True,
    }
    assert "local" not in {item["source"] for item in listed.values()}  # the found name is no missing path


# The models screen (F5).


@pilot_test
async def test_f5_lists_found_models_and_switches_to_one_without_copying(home, tmp_path):
    ollama_model(home / ".ollama" / "models", "qwen2.5:7b")
    synthetic_gguf(found.CHECKOUT_MODELS / "embedder.gguf", "bert", template=False)
    app, sessions = models_app(tmp_path, settings=DEMO)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, app.ready.is_set)
        await pilot.press("f5")
        screen = app.screen
        await wait_for(pilot, lambda: "qwen2.5:7b" in table_rows(screen))
        row = table_rows(screen)["qwen2.5:7b"]
        assert row[1:5] == ["qwen2.5:7b", "llm", "found", "98 MB"]
        assert row[6] == "Q4_1 · 135M parameters · found in Ollama"
        assert "not offered: an embedding model" in table_rows(screen)["embedder"][6]

        select(screen, "embedder")
        await pilot.press("enter")  # not a reader: a warning, and the screen stays
        assert app.screen is screen
        select(screen, "qwen2.5:7b")
        await pilot.press("enter")
        assert app.screen is not screen
        await wait_for(pilot, lambda: len(sessions) == 2 and app.session is sessions[1])
        assert sessions[1].settings.llm == "qwen2.5:7b" and stored_settings()["llm"] == "qwen2.5:7b"
    assert not list(paths.models_dir().rglob("*.gguf"))  # read where it lies: nothing copied or pulled
