"""`iterretgen-chat index FOLDER` needs the embedder only: in a fresh home where no reader
is pulled it indexes, and no chat model is asked for, resolved or loaded."""

from __future__ import annotations

import importlib.abc
import sys

from iterretgen_tui import cli, models
from iterretgen_tui.engine.embedding import backends
from iterretgen_tui.session import Session

from .fakes import HashEmbedder


class _NoLlamaCpp(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] == "llama_cpp":
            raise AssertionError("`index` imported llama_cpp")
        return None


def refuse(*args, **kwargs):
    raise AssertionError("`index` asked for a reader")


def test_index_in_a_fresh_home_without_a_reader_loads_no_llm(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ITERRETGEN_LLM")  # the default reader, which this fresh home has not pulled
    assert models.pulled(models.DEFAULT_LLM) is None
    for name in (models.choose_reader, models.resolve_llm):
        monkeypatch.setattr(models, name.__name__, refuse)
    monkeypatch.setattr(Session, "load_models", refuse)
    # The embedder's paths are resolved for real; only its weights are a fake.
    monkeypatch.setattr(backends, "load_embedder", lambda path, **options: HashEmbedder())
    for name in [m for m in sys.modules if m.partition(".")[0] == "llama_cpp"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoLlamaCpp(), *sys.meta_path])
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("the aardvark digs at night")
    assert cli.main(["index", str(folder)]) == 0
    assert capsys.readouterr().out.startswith("1 file indexed (1 added,")
    assert "llama_cpp" not in sys.modules
