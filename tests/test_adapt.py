"""Retrieval adaptation: the KL loss recovers a teacher's distribution, candidates come
from the index without re-embedding, the manifest round-trips, and an adapted query
encoder leaves the passage index as it was (same identity, same vectors, nothing embedded)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from iterretgen_tui import models, paths
from iterretgen_tui.cli import main
from iterretgen_tui.commands.eval import open_dataset_retriever
from iterretgen_tui.config import Settings
from iterretgen_tui.engine.embedding.embedder import SentenceEmbedder
from iterretgen_tui.engine.evaluation import adapt
from iterretgen_tui.engine.evaluation.datasets import load_dataset
from iterretgen_tui.engine.indexing.index import PassageIndex
from iterretgen_tui.engine.indexing.indexer import sync_corpus
from iterretgen_tui.engine.loop.queries import form_query
from iterretgen_tui.history import History
from iterretgen_tui.session import Session

from .fakes import HashEmbedder, ScriptedGenerator
from .test_evaluate import CORPUS, QUERIES, write_dataset
from .test_history import final

DRAFTS = {  # y1 names the bridge entity the question alone does not
    "q1": "Freedonia capital is Sylvania. So the answer is Sylvania.",
    "q2": "Marxland capital is Grouchoburg. So the answer is Grouchoburg.",
    "q3": "Cheese is made from milk. So the answer is milk.",
}


def test_kl_is_zero_for_equal_distributions_and_matches_its_definition():
    teacher = torch.tensor([[0.9, 0.5, 0.1, 7.0]])
    mask = torch.tensor([[True, True, True, False]])  # the padding must not count
    assert adapt.kl_loss(teacher.clone(), teacher, mask, 0.1).item() == pytest.approx(0, abs=1e-6)
    student = torch.tensor([[0.1, 0.5, 0.9, -3.0]])
    p = np.exp(np.array([9.0, 5.0, 1.0])) / np.exp(np.array([9.0, 5.0, 1.0])).sum()
    q = np.exp(np.array([1.0, 5.0, 9.0])) / np.exp(np.array([1.0, 5.0, 9.0])).sum()
    expected = float((p * np.log(p / q)).sum())
    assert adapt.kl_loss(student, teacher, mask, 0.1).item() == pytest.approx(expected, rel=1e-5)


def test_a_student_trained_on_a_fixed_teacher_recovers_its_distribution():
    teacher = torch.tensor([[0.8, 0.6, 0.2, 0.0], [0.1, 0.7, 0.3, 0.5]])
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    student = torch.nn.Parameter(torch.zeros_like(teacher))
    optimizer = torch.optim.Adam([student], lr=0.1)
    start = adapt.kl_loss(student, teacher, mask, 0.1).item()
    for _ in range(150):
        loss = adapt.kl_loss(student, teacher, mask, 0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert start > 0.5 and loss.item() < 1e-4
    for row, keep in enumerate(mask):
        want = torch.softmax(teacher[row][keep] / 0.1, -1)
        got = torch.softmax(student[row][keep].detach() / 0.1, -1)
        assert torch.allclose(got, want, atol=1e-2)


def hash_index(tmp_path, embedder):
    index = PassageIndex.open(tmp_path / "index", embedder_identity=embedder.identity, dim=embedder.dim)
    sync_corpus(index, CORPUS, embedder)
    return index


def test_candidates_join_both_queries_and_read_vectors_from_the_index(tmp_path):
    embedder = HashEmbedder()
    index = hash_index(tmp_path, embedder)
    calls = len(embedder.calls)
    example = adapt.Example(QUERIES[0]["text"], DRAFTS["q1"])
    (got,) = adapt.gather([example], embedder, index, adapt.BiEncoderTeacher(embedder), n=2)
    assert len(embedder.calls) - calls == 3  # y1 || q, q, and the teacher's y1 || q: no passage
    by_draft = index.search(embedder.embed_queries([form_query(example.question, example.draft)]), 2)[0]
    by_question = index.search(embedder.embed_queries([example.question]), 2)[0]
    assert [p.id for p in got.passages] == list(dict.fromkeys(p.id for p in [*by_draft, *by_question]))
    assert np.allclose(got.teacher[:2], [p.score for p in by_draft], atol=1e-6)  # the retrieval scores
    assert np.array_equal(got.vectors, index.vectors([p.id for p in got.passages]))
    with pytest.raises(KeyError):
        index.vectors([10_000])


def test_the_manifest_round_trips(tmp_path):
    manifest = adapt.Manifest(
        name="m",
        base="all-minilm-l6-v2",
        embedder="all-minilm-l6-v2",
        sources=["/data/hotpot"],
        questions=200,
        steps=300,
        batch_size=16,
        lr=2e-5,
        tau=0.05,
        teacher="bi-encoder",
        candidates=20,
        final_loss=0.01,
        initial_loss=0.5,
        seconds=61.0,
    )
    manifest.save(tmp_path)
    assert adapt.Manifest.load(tmp_path) == manifest
    assert json.loads((tmp_path / adapt.MANIFEST).read_text())["created"].endswith("Z")


def records(path, dataset, ids=tuple(DRAFTS)):
    """`eval --iterations 1` records with the drafts above, and a torn last line."""
    lines = [json.dumps({"config": {"dataset": dataset.name, "directory": str(dataset.resolve())}})]
    lines += [
        json.dumps(
            {
                "id": q["_id"],
                "question": q["text"],
                "gold": q["answers"],
                "iterations": [{"t": 1, "query": q["text"], "draft": DRAFTS[q["_id"]]}],
            }
        )
        for q in QUERIES
        if q["_id"] in ids
    ]
    path.write_text("\n".join(lines) + '\n{"id": "q9", "quest')
    return path


def test_drafts_come_from_eval_records(tmp_path):
    dataset = write_dataset(tmp_path / "ds")
    directory, drafts = adapt.drafts_from_records(records(tmp_path / "t1.jsonl", dataset))
    assert directory == str(dataset.resolve())
    assert drafts["q2"] == adapt.Example(QUERIES[1]["text"], DRAFTS["q2"]) and len(drafts) == 3


class CountingEmbedder(SentenceEmbedder):
    """The real embedder, counting how many passages (not queries) it encodes."""

    passages = 0

    def embed_batch(self, texts, *, queries=False):
        if not queries:
            CountingEmbedder.passages += len(texts)
        return super().embed_batch(texts, queries=queries)


def test_adapt_trains_saves_and_leaves_the_passage_index_untouched(tmp_path, monkeypatch, capsys):
    # torch, so that CountingEmbedder below really is the embedder that would re-embed.
    monkeypatch.setenv("ITERRETGEN_EMBED_BACKEND", "torch")
    dataset = write_dataset(tmp_path / "ds")
    base = Session(Settings(device="cpu", embed_backend="torch"))
    base.load_embedder()
    index = open_dataset_retriever(load_dataset(dataset), base.embedder, lambda m: None).index
    ids = sorted(p.id for p in index.passages(range(1, 100)))
    before = index.vectors(ids).copy()
    index.close()

    def fake_llm(session, status=None):  # q3 has no draft in the records: iteration 1 runs
        session.generator = ScriptedGenerator([DRAFTS["q3"]])

    monkeypatch.setattr(Session, "load_models", fake_llm)
    assert (
        main(
            [
                "adapt",
                str(dataset),
                "--drafts",
                str(records(tmp_path / "t1.jsonl", dataset, ("q1", "q2"))),
                "--steps",
                "4",
                "--batch-size",
                "2",
                "--lr",
                "1e-3",
                "--out",
                "tiny",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "--query-encoder tiny" in captured.out
    drafted = captured.err.split("drafting 1 question with iteration 1 into ")[1].split("\n")[0]
    assert adapt.drafts_from_records(drafted)[1] == {"q3": adapt.Example(QUERIES[2]["text"], DRAFTS["q3"])}
    folder = paths.adapted_dir() / "tiny"
    manifest = adapt.Manifest.load(folder)
    assert (manifest.questions, manifest.steps, manifest.base, manifest.teacher) == (
        3,
        4,
        "all-minilm-l6-v2",
        "bi-encoder",
    )
    assert (folder / "loss.png").stat().st_size > 0 and len((folder / "loss.tsv").read_text().splitlines()) == 5
    assert models.resolve_embedder("tiny") == folder
    listed = [(m.name, m.source) for m in models.installed({"query_encoder": "tiny"}) if m.name == "tiny"]
    assert listed == [("tiny", "adapted")]

    monkeypatch.setattr("iterretgen_tui.engine.embedding.embedder.SentenceEmbedder", CountingEmbedder)
    adapted = Session(Settings(device="cpu", query_encoder="tiny", embed_backend="torch"))
    adapted.load_embedder()
    assert isinstance(adapted.embedder, CountingEmbedder)
    assert adapted.embedder.identity == base.embedder.identity  # the same index is opened
    CountingEmbedder.passages = 0
    retriever = open_dataset_retriever(load_dataset(dataset), adapted.embedder, lambda m: None)
    assert CountingEmbedder.passages == 0
    assert np.array_equal(retriever.index.vectors(ids), before)
    question = QUERIES[0]["text"]
    assert not np.array_equal(adapted.embedder.embed_query(question), base.embedder.embed_query(question))
    assert np.array_equal(adapted.embedder.embed_batch([question]), base.embedder.embed_batch([question]))
    assert retriever.retrieve(question, 2)  # the adapted queries search the same vectors
    retriever.index.close()


def test_adapt_takes_a_folders_questions_from_the_tui_history(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "eiffel.md").write_text("Gustave Eiffel was born in Dijon.\n\nThe tower is in Paris.\n")
    store = History()
    cid = store.start("Where was Eiffel born?", str(folder.resolve()))
    store.add_turn(cid, final())
    store.add_turn(store.start("elsewhere", "/other"), final("Not about this folder?"))
    store.close()
    assert main(["adapt", "--folder", str(folder), "--steps", "2", "--out", "notes", "--device", "cpu"]) == 0
    manifest = adapt.Manifest.load(paths.adapted_dir() / "notes")
    assert manifest.questions == 1 and manifest.sources == [f"history:{folder.resolve()}"]
    assert "1 question from the TUI's history" in capsys.readouterr().err


def test_adapt_refuses_what_it_cannot_use(tmp_path, capsys):
    assert main(["adapt"]) == 2
    assert main(["adapt", str(tmp_path), "--teacher", "oracle"]) == 2
    assert main(["adapt", str(tmp_path), "--out", "Bad Name"]) == 2
    err = capsys.readouterr().err
    assert "DATASET_DIR or --folder" in err and "Bad Name" in err
