"""The evaluation harness end to end with fakes: dataset loading, per-iteration scoring,
the derived adaptive stop, the `eval` command's outputs, and resume after interruption."""

from __future__ import annotations

import json

import pytest

from iterretgen_tui.cli import main
from iterretgen_tui.engine.evaluation import evaluate
from iterretgen_tui.engine.evaluation.datasets import DatasetError, Question, load_dataset
from iterretgen_tui.engine.loop import iterretgen
from iterretgen_tui.engine.loop.events import FinalAnswer, IterationTrace, StopReason
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.retriever import Retriever
from iterretgen_tui.session import Session

from .fakes import HashEmbedder, ListIndex, ScriptedGenerator, paper_options

# Terse texts, so the bag-of-words fake embedder ranks them predictably.
CORPUS = [
    ("d1", "Freedonia", "Freedonia capital: Sylvania."),
    ("d2", "Sylvania", "Sylvania river: Blue River."),
    ("d3", "Marxland", "Marxland capital: Grouchoburg."),
    ("d4", "Grouchoburg", "Grouchoburg river: Green River."),
    ("d5", "Cheese", "Cheese is made from milk."),
]
QUERIES = [
    {
        "_id": "q1",
        "text": "Which river flows through Freedonia capital?",
        "answers": ["Blue River", "the Blue"],
        "gold_doc_ids": ["d1", "d2"],
    },
    {
        "_id": "q2",
        "text": "Which river flows through Marxland capital?",
        "answers": ["Green River"],
        "gold_doc_ids": ["d3", "d4"],
    },
    {"_id": "q3", "text": "What is cheese made from?", "answers": ["milk"], "gold_doc_ids": ["d5"]},
]


def write_dataset(root, queries=QUERIES, qrels=True):
    root.mkdir()
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS)
    )
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    if qrels:
        rows = [f"{q['_id']}\t{d}\t1" for q in queries for d in q["gold_doc_ids"]]
        (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return root


def reader(messages) -> str:
    """A fake model that answers from what it was given: it names the river only once a
    passage about one is in its prompt, otherwise the capital city it read about."""
    knowledge = messages[-1]["content"].split("Question:")[0]
    for river in ("Blue River", "Green River"):
        if river in knowledge:
            return f"{river}. So the answer is {river}."
    for city in ("Sylvania", "Grouchoburg"):
        if city in knowledge:
            return f"{city} is on some river. So the answer is {city}."
    return "Cheese is made from milk. So the answer is milk."


def fake_retriever(dataset):
    embedder = HashEmbedder(dim=4096)  # wide enough that no two words here collide
    passages = [Passage(n, text, title, doc_id) for n, (doc_id, title, text) in enumerate(dataset.corpus())]
    return Retriever(embedder, ListIndex(embedder, passages))


def toy_eval_args(root, out) -> list[str]:
    """`eval` over the toy, scripted for the paper's retrieval: dense, iteration 2 with the
    draft alone, no passages kept."""
    return [
        "eval",
        str(root),
        "--iterations",
        "1,2",
        "--top-k",
        "1",
        "--no-keep-passages",
        "--query-mode",
        "draft",
        "--retrieval",
        "dense",
        "--out",
        str(out),
    ]


def test_load_dataset_reads_qrels_and_answers(tmp_path):
    dataset = load_dataset(write_dataset(tmp_path / "toy"))
    assert dataset.name == "toy" and dataset.has_answers
    assert [q.id for q in dataset.questions] == ["q1", "q2", "q3"]
    assert dataset.questions[0].answers == ("Blue River", "the Blue")
    assert dataset.questions[0].relevant == {"d1": 1, "d2": 1}
    assert next(dataset.corpus()) == CORPUS[0]


def test_load_dataset_without_qrels_uses_gold_doc_ids(tmp_path):
    queries = [{"_id": "c1", "text": "Cheese is made of milk.", "gold_doc_ids": ["d5"]}]
    dataset = load_dataset(write_dataset(tmp_path / "claims", queries, qrels=False))
    assert not dataset.has_answers
    assert dataset.questions[0].relevant == {"d5": 1}


def test_load_dataset_errors_name_the_file(tmp_path):
    with pytest.raises(DatasetError, match="corpus.jsonl"):
        load_dataset(tmp_path)
    root = write_dataset(tmp_path / "bad")
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "ok"}\n{broken\n')
    with pytest.raises(DatasetError, match="queries.jsonl line 2"):
        load_dataset(root)


def test_evidence_recall_reads_both_quotes():
    from iterretgen_tui.engine.loop.evidence import Evidence, Quote

    question = Question("q9", "Which river?", ("Blue River",), {})
    evidence = Evidence("Sylvania is a town.", 1, 1, "d1", also=Quote("It lies on the Blue River.", 2, 2, "d2"))
    trace = IterationTrace(1, "Which river?", (), "Sylvania.", "Sylvania", 1.0, evidence=evidence)
    step = evaluate.step_record(question, trace, None, None)
    assert (step["evidence"], step["evidence_also"]) == ("Sylvania is a town.", "It lies on the Blue River.")
    assert step["scores"]["evidence_recall"] == 1.0
    trace = IterationTrace(1, "q", (), "", "", 1.0, evidence=Evidence("Sylvania is a town.", 1, 1, "d1"))
    alone = evaluate.step_record(question, trace, None, None)
    assert alone["evidence_also"] == "" and alone["scores"]["evidence_recall"] == 0.0


def test_evaluate_question_scores_every_iteration(tmp_path):
    dataset = load_dataset(write_dataset(tmp_path / "toy"))
    generator = ScriptedGenerator(reader)
    record = evaluate.evaluate_question(
        dataset.questions[0],
        retriever=fake_retriever(dataset),
        generator=generator,
        options=paper_options(iterations=3, top_k=1),
    )
    steps = record["iterations"]
    assert [s["t"] for s in steps] == [1, 2, 3]  # the adaptive stop never cuts the fixed run
    assert len(generator.prompts) == 3
    assert steps[0]["passage_ids"] == ["d1"] and steps[0]["answer"] == "Sylvania"
    assert steps[0]["scores"] == {
        "em": 0.0,
        "f1": 0.0,
        "acc": 0.0,
        "answer_recall": 0.0,
        "gold_recall": 0.5,
        "evidence_recall": 0.0,
    }
    # The draft names Sylvania, so the second retrieval finds the river's passage.
    assert steps[1]["query"].endswith(dataset.questions[0].text)
    assert steps[1]["passage_ids"] == ["d2"] and steps[1]["answer"] == "Blue River"
    assert steps[1]["scores"]["em"] == 1.0 and steps[1]["scores"]["answer_recall"] == 1.0
    # The evidence sentence is the river's, quoted from the passage the draft was written from.
    assert steps[1]["scores"]["evidence_recall"] == 1.0 and "Blue River" in steps[1]["evidence"]
    assert steps[1]["stated"] and not steps[1]["looped"] and not steps[1]["asked"]
    # The third retrieval finds d2 again: the adaptive loop would have stopped after t=2.
    assert record["adaptive"] == {"t": 2, "reason": "same_passages"}
    assert all(s["judge"] is None for s in steps)


def test_gold_draft_forms_the_query_from_the_gold_answer(tmp_path):
    dataset = load_dataset(write_dataset(tmp_path / "toy"))
    record = evaluate.evaluate_question(
        dataset.questions[1],
        retriever=fake_retriever(dataset),
        generator=ScriptedGenerator(reader),
        options=paper_options(iterations=2, top_k=1),
        gold_draft=True,
    )
    assert record["iterations"][1]["query"] == "Green River\n" + dataset.questions[1].text


def test_judge_verdicts_are_recorded_and_reused(tmp_path):
    dataset = load_dataset(write_dataset(tmp_path / "toy"))
    judge = ScriptedGenerator(lambda m: "Yes" if "Prediction\nmilk" in m[0]["content"] else "Maybe")
    record = evaluate.evaluate_question(
        dataset.questions[2],
        retriever=fake_retriever(dataset),
        generator=ScriptedGenerator(reader),
        options=paper_options(iterations=3, top_k=1),
        judge_with=judge,
    )
    assert [s["judge"] for s in record["iterations"]] == [True, True, True]
    assert len(judge.prompts) == 1  # the same answer is judged once


def _trace(t, answer, ids):
    passages = tuple(Passage(i, "text", "title", f"d{i}") for i in ids)
    return IterationTrace(t, "q", passages, f"So the answer is {answer}.", answer, 1.0)


def test_adaptive_stop_replays_the_loops_rules():
    traces = [_trace(1, "Paris", [1, 2]), _trace(2, "Lyon", [3, 4]), _trace(3, "Lyon", [5, 6])]
    assert evaluate.adaptive_stop([False, False, False], traces, "q") == (3, StopReason.CONVERGED)
    # Iteration 2's searches find only what iteration 1 already read: the loop stops before drafting it.
    assert evaluate.adaptive_stop([False, True, False], traces, "q") == (1, StopReason.SAME_PASSAGES)
    assert evaluate.adaptive_stop([False, False], traces[:2], "q") == (2, StopReason.MAX_ITERATIONS)


def test_derived_adaptive_stop_matches_an_adaptive_run(tmp_path):
    dataset = load_dataset(write_dataset(tmp_path / "toy"))
    retriever = fake_retriever(dataset)
    for question in dataset.questions:
        record = evaluate.evaluate_question(
            question,
            retriever=retriever,
            generator=ScriptedGenerator(reader),
            options=paper_options(iterations=3, top_k=1),
        )
        [final] = [
            e
            for e in iterretgen.run(
                question.text,
                retriever=retriever,
                generator=ScriptedGenerator(reader),
                options=paper_options(iterations=3, top_k=1),
            )
            if isinstance(e, FinalAnswer)
        ]
        assert record["adaptive"] == {"t": len(final.iterations), "reason": final.stop_reason.value}


def test_a_record_says_what_the_chat_would_of_its_answer(tmp_path):
    dataset = load_dataset(write_dataset(tmp_path / "toy"))
    retriever = fake_retriever(dataset)

    def inventing(messages) -> str:  # a year no passage gives
        return f"{reader(messages).removesuffix('.')} in 1850."

    records = {
        name: evaluate.evaluate_question(
            dataset.questions[0],
            retriever=retriever,
            generator=ScriptedGenerator(model),
            options=paper_options(iterations=2, top_k=1),
            stop_adaptively=True,
        )
        for name, model in (("reader", reader), ("inventing", inventing))
    }
    assert records["reader"]["weakness"] is None
    assert records["inventing"]["weakness"] == "unsupported"


def test_summaries_average_per_iteration():
    def record(em1, em2, stop):
        steps = [
            {
                "seconds": 2.0,
                "judge": None,
                "scores": dict.fromkeys(("em", "f1", "acc", "answer_recall", "gold_recall"), em),
            }
            for em in (em1, em2)
        ]
        return {"iterations": steps, "adaptive": {"t": stop, "reason": "converged"}}

    records = [record(0.0, 1.0, 2), record(1.0, 1.0, 1)]
    rows = evaluate.summarize(records, [1, 2], judged=False)
    assert rows[0] == {
        "t": 1,
        "em": 0.5,
        "f1": 0.5,
        "acc": 0.5,
        "acc_judge": None,
        "answer_recall": 0.5,
        "gold_recall": 0.5,
        # older records know nothing of these
        "evidence_recall": None,
        "stated": None,
        "looped": None,
        "llm_calls": 1,
        "seconds": 2.0,
    }
    assert rows[1]["em"] == 1.0 and rows[1]["llm_calls"] == 2 and rows[1]["seconds"] == 4.0
    adaptive = evaluate.summarize_adaptive(records, judged=True)
    assert adaptive["em"] == 1.0 and adaptive["iterations"] == 1.5 and adaptive["seconds"] == 3.0
    assert adaptive["acc_judge"] == 0.0 and adaptive["stop_reasons"] == {"converged": 2}
    found = evaluate.differences(records, [1, 2], judged=False, adaptive=True)
    assert found == {
        "t=2 vs t=1": {"acc": {"mean": 0.5, "ci95": 0.98}, "answer_recall": {"mean": 0.5, "ci95": 0.98}},
        "adaptive vs t=2": {"acc": {"mean": 0.0, "ci95": 0.0}, "answer_recall": {"mean": 0.0, "ci95": 0.0}},
    }
    assert list(evaluate.differences(records[:1], [1, 2], judged=True, adaptive=False)) == ["t=2 vs t=1"]
    assert evaluate.differences(records[:1], [1, 2], judged=True, adaptive=False)["t=2 vs t=1"]["acc_judge"] == {
        "mean": 0.0,
        "ci95": None,
    }  # one question: no interval


class Interrupt:
    """A generator that answers like ``reader`` until its budget of calls runs out."""

    def __init__(self, calls):
        self.inner = ScriptedGenerator(reader)
        self.calls = calls
        self.n_ctx, self.passage_order = self.inner.n_ctx, self.inner.passage_order
        self.name = self.identity = "interrupt"
        self.count_tokens = self.inner.count_tokens

    def stream(self, messages, **kwargs):
        if len(self.inner.prompts) >= self.calls:
            raise KeyboardInterrupt
        return self.inner.stream(messages, **kwargs)


@pytest.fixture
def fake_models(monkeypatch):
    """The `eval` command with fakes at the model boundary; ``generators`` lists the
    generator each successive run gets."""
    generators = []

    def load_models(self, status=lambda message: None):
        self.embedder = HashEmbedder(dim=4096)
        self.generator = generators.pop(0)

    monkeypatch.setattr(Session, "load_models", load_models)
    return generators


def test_eval_command_writes_results_records_and_plot(tmp_path, fake_models, capsys):
    root = write_dataset(tmp_path / "toy")
    fake_models.append(ScriptedGenerator(reader))
    out = tmp_path / "results" / "toy.json"
    # The toy is scripted for the paper's retrieval: dense, iteration 2 with the draft alone.
    assert main(toy_eval_args(root, out)) == 0
    summary = json.loads(out.read_text())
    assert list(summary) == [
        "dataset",
        "n",
        "iterations",
        "adaptive",
        "differences",
        "retrieval",
        "retrieval_settings",
        "seconds",
    ]
    assert summary["dataset"] == "toy" and summary["n"] == 3
    assert [list(r) for r in summary["iterations"]] == [
        [
            "t",
            "em",
            "f1",
            "acc",
            "acc_judge",
            "answer_recall",
            "gold_recall",
            "evidence_recall",
            "stated",
            "looped",
            "llm_calls",
            "seconds",
        ]
    ] * 2
    # q1 and q2 go wrong at t=1 and right at t=2; q3 is right throughout.
    assert summary["iterations"][0]["em"] == pytest.approx(1 / 3, abs=1e-4)
    assert summary["iterations"][1]["em"] == 1.0
    assert summary["adaptive"]["iterations"] == pytest.approx(5 / 3, abs=1e-4)
    # Acc gains 1, 1 and 0: mean 2/3, 95% interval 1.96 * sd / sqrt(3).
    assert summary["differences"]["t=2 vs t=1"]["acc"] == {"mean": 0.6667, "ci95": 0.6533}
    assert set(summary["retrieval"]) == {
        "recall@5",
        "recall@10",
        "recall@100",
        "ndcg@10",
        "answer_recall@1",
        "gold_recall@1",
    }
    # every retrieval setting is scored on the question alone, and paired with dense
    compared = summary["retrieval_settings"]
    assert list(compared["settings"]) == ["hybrid", "dense", "lexical"]
    assert compared["settings"]["dense"] == summary["retrieval"]
    assert list(compared["differences"]) == ["hybrid vs dense", "lexical vs dense"]
    assert set(compared["differences"]["hybrid vs dense"]["answer_recall@1"]) == {"mean", "ci95"}
    lines = out.with_suffix(".jsonl").read_text().splitlines()
    assert json.loads(lines[0])["config"]["iterations"] == 2
    assert [json.loads(line)["id"] for line in lines[1:]] == ["q1", "q2", "q3"]
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    table = capsys.readouterr().out
    assert "toy  n=3" in table and "adapt 1.67" in table
    assert "t=2 vs t=1: Acc +0.667 ±0.653  AnsRec" in table
    assert "  hybrid vs dense: recall@5 +0.000" in table


def test_eval_adaptive_only_stops_where_the_app_stops(tmp_path, fake_models, capsys):
    root = write_dataset(tmp_path / "toy")
    full, stopping = ScriptedGenerator(reader), ScriptedGenerator(reader)
    fake_models.extend([full, stopping])
    assert main([*toy_eval_args(root, tmp_path / "full.json"), "--no-replay"]) == 0
    out = tmp_path / "adaptive.json"
    assert main([*toy_eval_args(root, out), "--no-replay", "--adaptive-only"]) == 0
    summary, derived = json.loads(out.read_text()), json.loads((tmp_path / "full.json").read_text())
    assert summary["iterations"] == [] and summary["differences"] == {}
    assert {k: v for k, v in summary["adaptive"].items() if k != "seconds"} == {
        k: v for k, v in derived["adaptive"].items() if k != "seconds"
    }
    # q3's second search finds what it read: the app stops before drafting it again.
    assert (len(full.prompts), len(stopping.prompts)) == (6, 5)
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert records[0]["config"]["stops"] == "adaptive"
    assert [len(r["iterations"]) for r in records[1:]] == [2, 2, 1]
    assert "adapt 1.67" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # argparse: the two cannot go together
        main([*toy_eval_args(root, out), "--adaptive-only", "--no-adaptive"])


def test_eval_resumes_after_interruption(tmp_path, fake_models, capsys):
    root = write_dataset(tmp_path / "toy")
    out = tmp_path / "toy.json"
    args = toy_eval_args(root, out)
    fake_models.append(Interrupt(calls=3))  # q1 completes, q2 is cut during its second draft
    assert main(args) == 130
    records = out.with_suffix(".jsonl")
    assert [json.loads(line).get("id") for line in records.read_text().splitlines()[1:]] == ["q1"]
    with records.open("a") as fh:
        fh.write('{"id": "q2", "quest')  # a line torn by the kill
    rerun = ScriptedGenerator(reader)
    fake_models.append(rerun)
    assert main(args) == 0
    # Only q2 and q3, two iterations each, less q2's first draft: the memo replays it.
    assert len(rerun.prompts) == 3
    err = capsys.readouterr().err
    assert "1 of 3 questions already" in err
    assert "5 passages, 0 embedded now" in err  # the corpus index is cached
    assert json.loads(out.read_text())["iterations"][1]["em"] == 1.0
    ids = [json.loads(line)["id"] for line in records.read_text().splitlines()[1:]]
    assert ids == ["q1", "q2", "q3"]


def test_eval_refuses_to_resume_other_settings(tmp_path, fake_models, capsys):
    root = write_dataset(tmp_path / "toy")
    out = tmp_path / "toy.json"
    fake_models.extend([ScriptedGenerator(reader), ScriptedGenerator(reader)])
    assert main(["eval", str(root), "--iterations", "1", "--limit", "1", "--out", str(out)]) == 0
    assert main(["eval", str(root), "--iterations", "1,2", "--out", str(out)]) == 2
    assert "other settings" in capsys.readouterr().err


def test_eval_retrieval_only_dataset(tmp_path, fake_models, capsys):
    queries = [{"_id": "c1", "text": "Cheese is made from milk.", "gold_doc_ids": ["d5"]}]
    root = write_dataset(tmp_path / "claims", queries)
    fake_models.append(ScriptedGenerator(reader))
    out = tmp_path / "claims.json"
    assert main(["eval", str(root), "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["iterations"] == [] and summary["adaptive"] is None
    assert summary["retrieval"] == {"recall@5": 1.0, "recall@10": 1.0, "recall@100": 1.0, "ndcg@10": 1.0}
    assert out.with_suffix(".png").exists()
    assert main(["eval", str(root), "--draft-source", "gold"]) == 2


def test_eval_on_a_retrieval_only_set_asks_for_no_reader(tmp_path, monkeypatch, capsys):
    """A set without answers (scifact) is scored on retrieval alone: in a home with no
    reader pulled, no reader is asked for or loaded."""
    claims = [{"_id": q["_id"], "text": q["text"], "gold_doc_ids": q["gold_doc_ids"]} for q in QUERIES]
    root = write_dataset(tmp_path / "claims", claims)
    monkeypatch.setenv("ITERRETGEN_HOME", str(tmp_path / "home"))

    def no_reader(self, status=lambda message: None):
        raise AssertionError("a retrieval-only set loaded the reader")

    def embedder_only(self, status=lambda message: None):
        self.embedder = HashEmbedder(dim=4096)

    monkeypatch.setattr(Session, "load_models", no_reader)
    monkeypatch.setattr(Session, "load_embedder", embedder_only)
    out = tmp_path / "claims.json"
    assert main(["eval", str(root), "--iterations", "1", "--out", str(out), "--retrieval", "dense"]) == 0
    summary = json.loads(out.read_text())
    assert summary["iterations"] == [] and summary["retrieval"]["recall@5"] > 0
