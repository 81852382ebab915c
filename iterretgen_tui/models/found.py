"""GGUF models already on this machine: found where other apps keep them, described from
their headers, offered by name, and read where they lie (never copied).

The stores, in the fixed order that settles name clashes (docs/models.md): the configured
folders (Settings.model_folders), the checkout's models/ folder, Ollama, LM Studio, GPT4All,
the Hugging Face hub cache and llama.cpp's cache. A store that is missing or cannot be read
is passed over without a word.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TypeVar

import platformdirs
from gguf import LlamaFileType

from .gguf_header import HeaderError, read_header

CHECKOUT_MODELS = Path(__file__).resolve().parents[2] / "models"  # models/ at the top of a checkout
OLLAMA_SERVICE = Path("/usr/share/ollama/.ollama/models")  # Linux: the install script's system service
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"  # the manifest layer that is the GGUF
OLLAMA_REGISTRY = "registry.ollama.ai"
# Architectures that embed text and cannot write an answer (gguf.constants.MODEL_ARCH_NAMES).
EMBEDDING_ARCHITECTURES = frozenset(
    {
        "bert",
        "modern-bert",
        "nomic-bert",
        "nomic-bert-moe",
        "neo-bert",
        "jina-bert-v2",
        "jina-bert-v3",
        "eurobert",
        "gemma-embedding",
        "llama-embed",
        "t5encoder",
    }
)
# general.type of GGUFs that go beside a model rather than being one.
NOT_MODELS = {"adapter": "a LoRA adapter", "mmproj": "a multimodal projector", "imatrix": "an importance matrix"}

_SHARD = re.compile(r"-(\d{5})-of-(\d{5})$")  # llama.cpp's split files: name-00001-of-00003.gguf
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_QUANTISATION = re.compile(r"(?i)(?<![a-z0-9])(i?q\d(?:_[a-z0-9]+)*|bf16|f16|f32)(?![a-z0-9])")

T = TypeVar("T")
Layout = Callable[[Path], Iterator[tuple[str, Path]]]  # a store's root -> (name, GGUF path)


@dataclass(frozen=True)
class Store:
    source: str  # shown as "found in <source>"
    key: str  # qualifies a name an earlier store holds: "lmstudio/qwen2.5-7b-instruct-q4_k_m"
    root: Path
    layout: Layout


@dataclass(frozen=True)
class Facts:
    """What the files and the header say; the weights are never read."""

    size_bytes: int | None  # None: a file of the model is missing
    quantisation: str = ""
    parameters: str = ""
    kind: str = "llm"  # "embedder" for an embedding model
    problem: str = ""  # why it is not offered as a reader; "" when it is


@dataclass(frozen=True)
class FoundModel:
    name: str  # what --llm takes
    source: str
    path: Path  # the file llama.cpp opens: a split model's first shard

    @cached_property
    def facts(self) -> Facts:
        return describe(self.path)


def gguf_files(root: Path) -> Iterator[tuple[str, Path]]:
    """The GGUFs under ``root`` and its subfolders, named by file stem; a split model
    once, by its first shard, without the shard suffix."""
    for path in sorted(root.rglob("*.gguf")):
        shard = _SHARD.search(path.stem)
        if shard is None or int(shard[1]) == 1:
            yield _SHARD.sub("", path.stem), path


def ollama_models(root: Path) -> Iterator[tuple[str, Path]]:
    """Ollama's manifests/<host>/<namespace>/<model>/<tag>, named as `ollama run` takes
    them: qwen2.5:7b, namespace/model:tag, hf.co/org/repo:tag."""
    manifests = root / "manifests"
    for manifest in sorted(manifests.glob("*/*/*/*")):
        try:
            layers = json.loads(manifest.read_text("utf-8"))["layers"]
            digest = next(layer["digest"] for layer in layers if layer.get("mediaType") == OLLAMA_MODEL_LAYER)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, StopIteration):
            continue  # not a manifest, or a model that lives elsewhere (Ollama's cloud models)
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            continue
        host, namespace, model, tag = manifest.relative_to(manifests).parts
        if host != OLLAMA_REGISTRY:
            name = f"{host}/{namespace}/{model}:{tag}"
        else:
            name = f"{model}:{tag}" if namespace == "library" else f"{namespace}/{model}:{tag}"
        yield name, root / "blobs" / digest.replace(":", "-")


def machine_stores() -> list[Store]:
    """The checkout's models/ folder and other apps' stores, at their documented places
    on Linux, macOS and Windows (Path.home() is %USERPROFILE% there)."""
    home = Path.home()
    env = os.environ.get
    ollama = [Path(env("OLLAMA_MODELS"))] if env("OLLAMA_MODELS") else []
    ollama.append(home / ".ollama" / "models")
    if sys.platform.startswith("linux"):
        ollama.append(OLLAMA_SERVICE)
    hf_home = Path(env("HF_HOME") or Path(env("XDG_CACHE_HOME") or home / ".cache") / "huggingface")
    return [
        Store("models/ folder", "models", CHECKOUT_MODELS, gguf_files),
        *(Store("Ollama", "ollama", root, ollama_models) for root in ollama),
        Store("LM Studio", "lmstudio", home / ".lmstudio" / "models", gguf_files),
        Store("LM Studio", "lmstudio", home / ".cache" / "lm-studio" / "models", gguf_files),  # before LM Studio 0.3
        # platformdirs without an app name: the base folder (XDG_DATA_HOME, Application
        # Support, %LOCALAPPDATA%), under which GPT4All and llama.cpp name their own.
        Store("GPT4All", "gpt4all", Path(platformdirs.user_data_dir()) / "nomic.ai" / "GPT4All", gguf_files),
        Store("Hugging Face cache", "hf", Path(env("HF_HUB_CACHE") or hf_home / "hub"), gguf_files),
        Store(
            "llama.cpp cache",
            "llama.cpp",
            Path(env("LLAMA_CACHE") or Path(platformdirs.user_cache_dir()) / "llama.cpp"),
            gguf_files,
        ),
    ]


def stores(folders: Sequence[str]) -> list[Store]:
    return [Store("configured folder", "folder", Path(f), gguf_files) for f in folders] + machine_stores()


def _entries(store: Store) -> list[tuple[str, Path]]:
    root = store.root.expanduser()  # a folder from the environment or the config may start with ~
    try:
        return list(store.layout(root)) if root.is_dir() else []
    except OSError:  # a store that cannot be read is passed over
        return []


def discover(folders: Sequence[str] = (), taken: Collection[str] = ()) -> list[FoundModel]:
    """The GGUFs in every store, named. A name in ``taken`` (the catalogue's, pulled ones)
    or held by an earlier store gets its store's key in front; if that is held too, the
    model is named by its path. A file found through two stores is listed under the first
    only; within a store, under each of its names (Ollama's tags of one blob)."""
    named: dict[str, FoundModel] = {}
    first_store: dict[Path, Store] = {}
    listed: set[tuple[Path, str]] = set()  # (file, name in its store): a snapshot's twin is the same
    for store in stores(folders):
        for name, path in _entries(store):
            try:
                real = path.resolve()
            except (OSError, RuntimeError):  # a symlink loop
                continue
            if first_store.setdefault(real, store) is not store or (real, name) in listed:
                continue
            listed.add((real, name))
            free = (n for n in (name, f"{store.key}/{name}") if n not in taken and n not in named)
            unique = next(free, str(path))
            named[unique] = FoundModel(unique, store.source, path)
    return list(named.values())


def lookup(name: str, folders: Sequence[str] = (), taken: Collection[str] = ()) -> FoundModel | None:
    """The found model called ``name``."""
    return named(name, {model.name: model for model in discover(folders, taken)})


def named(name: str, by_name: Mapping[str, T]) -> T | None:
    """What ``by_name`` holds under ``name``; as with `ollama run`, no tag means :latest."""
    return by_name.get(name) or by_name.get(f"{name}:latest")


def shards(path: Path) -> list[Path]:
    """Every file of the model whose (first) file is ``path``."""
    split = _SHARD.search(path.stem)
    if split is None:
        return [path]
    base, count = _SHARD.sub("", path.stem), int(split[2])
    return [path.with_name(f"{base}-{n:05d}-of-{count:05d}.gguf") for n in range(1, count + 1)]


def describe(path: Path) -> Facts:
    files = shards(path)
    missing = next((f for f in files if not f.is_file()), None)
    if missing is not None:
        return Facts(None, problem=f"its file is missing: {missing}")
    size = sum(f.stat().st_size for f in files)
    try:
        header = read_header(path)
    except (OSError, HeaderError) as exc:
        return Facts(size, problem=f"its header cannot be read: {getattr(exc, 'strerror', None) or exc}")
    meta = header.metadata
    architecture = str(meta.get("general.architecture", ""))
    label = meta.get("general.size_label")
    # A shard lists only its own tensors: a count from it would be too small.
    parameters = str(label) if label else (_count(header.parameters) if len(files) == 1 else "")
    facts = Facts(size, _quantisation(meta.get("general.file_type"), path.name), parameters)
    role = "mmproj" if architecture == "clip" else meta.get("general.type")  # older projectors have no type
    if role in NOT_MODELS:
        return replace(facts, kind=role, problem=f"{NOT_MODELS[role]}, not a chat model")
    if architecture in EMBEDDING_ARCHITECTURES or f"{architecture}.pooling_type" in meta:
        return replace(facts, kind="embedder", problem="an embedding model: it cannot write answers")
    if "tokenizer.chat_template" not in meta:
        return replace(facts, problem="no chat template in its header (tokenizer.chat_template)")
    return facts


def _quantisation(file_type: object, filename: str) -> str:
    """The name of general.file_type (MOSTLY_Q4_K_M -> Q4_K_M), else what the file name says."""
    try:
        kind = LlamaFileType(file_type)
    except ValueError:
        kind = LlamaFileType.GUESSED
    if kind != LlamaFileType.GUESSED:
        return kind.name.removeprefix("MOSTLY_").removeprefix("ALL_")
    match = _QUANTISATION.search(filename)
    return match[1].upper() if match else ""


def _count(parameters: int) -> str:
    for scale, unit in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if parameters >= scale:
            return f"{parameters / scale:.1f}{unit}" if unit == "B" else f"{round(parameters / scale)}{unit}"
    return str(parameters) if parameters else ""
