"""The chat model takes all the cores while nothing else runs and half while indexing does."""

from __future__ import annotations

import threading

import pytest

from iterretgen_tui import models
from iterretgen_tui.engine import cores as cores_module
from iterretgen_tui.engine.cores import CoreShare
from iterretgen_tui.engine.indexing.indexer import open_folder_index, sync_folder

from .fakes import HashEmbedder


@pytest.fixture
def eight_cores(monkeypatch):
    monkeypatch.setattr(cores_module, "usable_cores", lambda: 8)
    monkeypatch.setattr(cores_module, "others_running", lambda: 0)


def test_threads_follow_indexing_activity(eight_cores):
    share = CoreShare()
    assert share.llm_threads() == 8 and not share.busy
    with share.indexing():
        assert share.llm_threads() == 4
        with share.indexing():  # a watch's sync beside the folder's
            assert share.llm_threads() == 4
        assert share.busy
    assert share.llm_threads() == 8


def test_other_programs_keep_their_cores(eight_cores, monkeypatch):
    share = CoreShare()
    monkeypatch.setattr(cores_module, "others_running", lambda: 3)
    share.look_around()
    assert share.llm_threads() == 5
    with share.indexing():
        assert share.llm_threads() == 4
    monkeypatch.setattr(cores_module, "others_running", lambda: 30)  # a machine far past its cores
    share.look_around()
    assert share.llm_threads() == 1


def test_runnable_tasks_are_read_from_loadavg(monkeypatch, tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("14.04 13.73 14.00 16/198 7202\n")
    monkeypatch.setattr(cores_module, "_LOADAVG", loadavg)
    monkeypatch.setattr(cores_module, "_TASKS", tmp_path / "no-tasks")
    assert cores_module.others_running() == 15  # the reader itself is one of the 16
    monkeypatch.setattr(cores_module, "_LOADAVG", tmp_path / "missing")  # not Linux
    assert cores_module.others_running() == 0


def test_an_interrupted_sync_gives_the_cores_back(eight_cores):
    share = CoreShare()
    with pytest.raises(RuntimeError):
        with share.indexing():
            raise RuntimeError("embedder failed")
    assert share.llm_threads() == 8


class WatchingEmbedder(HashEmbedder):
    def __init__(self, share: CoreShare) -> None:
        super().__init__()
        self.share = share
        self.busy_seen: list[bool] = []

    def embed_batch(self, texts, *, queries=False):
        self.busy_seen.append(self.share.busy)
        return super().embed_batch(texts, queries=queries)


def test_the_indexer_marks_itself_busy_while_it_syncs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Gustave Eiffel was born in Dijon.")
    share = CoreShare()
    embedder = WatchingEmbedder(share)
    with open_folder_index(folder, embedder) as index:
        report = sync_folder(folder, index, embedder, cores=share)
    assert report.embedded == 1 and embedder.busy_seen == [True] and not share.busy


@pytest.mark.slow
def test_the_live_model_changes_threads_mid_answer_without_reloading(monkeypatch):
    import llama_cpp

    from iterretgen_tui.engine.loop.generator import LlamaGenerator

    monkeypatch.setattr(cores_module, "usable_cores", lambda: 2)  # more threads than cores would crawl
    monkeypatch.setattr(cores_module, "others_running", lambda: 0)  # whatever else this machine runs
    share = CoreShare()
    generator = LlamaGenerator(models.resolve_llm(models.EMBEDDED_LLM), n_ctx=1024, device="cpu", cores=share)
    context = generator._llm.ctx
    assert generator.n_threads == 2 == llama_cpp.llama_n_threads(context)
    messages = [{"role": "user", "content": "Count from one to twenty."}]
    seen = []
    indexing = share.indexing()
    for n, _ in enumerate(generator.stream(messages, max_tokens=12, cancel=threading.Event())):
        seen.append(generator.n_threads)
        if n == 2:
            indexing.__enter__()  # indexing starts while the answer streams
    assert seen[:3] == [2, 2, 2] and seen[-1] == 1
    assert llama_cpp.llama_n_threads(context) == llama_cpp.llama_n_threads_batch(context) == 1
    indexing.__exit__(None, None, None)
    "".join(generator.stream(messages, max_tokens=2, cancel=threading.Event()))
    assert generator.n_threads == 2 and generator._llm.ctx == context  # same context: nothing reloaded
    assert LlamaGenerator(generator.path, n_ctx=512, device="cpu", n_threads=1).cores is None  # fixed count


def test_this_process_own_busy_threads_are_not_others(monkeypatch, tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("3.10 2.00 1.50 4/198 7202\n")
    tasks = tmp_path / "task"
    for tid, state in ((101, "R"), (102, "R"), (103, "S"), (104, "R")):
        (tasks / str(tid)).mkdir(parents=True)
        (tasks / str(tid) / "stat").write_text(f"{tid} (onnx (pool)) {state} 1 2 3\n")
    monkeypatch.setattr(cores_module, "_LOADAVG", loadavg)
    monkeypatch.setattr(cores_module, "_TASKS", tasks)
    assert cores_module.own_runnable_threads() == 3
    assert cores_module.others_running() == 1  # 4 runnable, 3 of them ours


def test_own_runnable_threads_reads_this_process():
    assert cores_module.own_runnable_threads() >= 1  # the caller runs while it reads
