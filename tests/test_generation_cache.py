"""The eval's memo of greedy generations: replays what was read, never a cancelled one."""

from __future__ import annotations

import threading
import time

from iterretgen_tui.engine.evaluation import evaluate
from iterretgen_tui.engine.evaluation.generation_cache import CachedGenerator

from .fakes import ScriptedGenerator, paper_options

PROMPT = [{"role": "user", "content": "Where was Gustave Eiffel born?"}]


def read(generator, messages=PROMPT, *, max_tokens=16, stop_after=None, cancel=None):
    pieces = []
    stream = generator.stream(messages, max_tokens=max_tokens, cancel=cancel or threading.Event())
    for piece in stream:
        pieces.append(piece)
        if stop_after and len(pieces) == stop_after:
            break
    stream.close()
    return "".join(pieces)


def test_a_repeated_prompt_is_replayed_with_its_original_cost(tmp_path):
    inner = ScriptedGenerator(["So the answer is Dijon.", "So the answer is Lyon."])
    memo = CachedGenerator(inner, tmp_path / "memo.sqlite")
    assert read(memo) == "So the answer is Dijon."
    assert read(memo) == "So the answer is Dijon."
    assert len(inner.prompts) == 1
    assert memo.replayed[0] is None and memo.replayed[1] >= 0.0
    # Another process (a later eval) finds it too; another model or budget does not.
    again = CachedGenerator(inner, tmp_path / "memo.sqlite")
    assert read(again) == "So the answer is Dijon." and len(inner.prompts) == 1
    inner.identity = "model-b"
    other = CachedGenerator(inner, tmp_path / "memo.sqlite")
    assert read(other) == "So the answer is Lyon."
    inner.identity = "scripted"
    assert read(again, max_tokens=3) == "So the answer"
    assert len(inner.prompts) == 3


def test_what_the_reader_stopped_at_is_replayed_and_a_reader_wanting_more_gets_the_rest(tmp_path):
    inner = ScriptedGenerator(["So the answer is Dijon. And then more words follow"])
    memo = CachedGenerator(inner, tmp_path / "memo.sqlite")
    assert read(memo, stop_after=5) == "So the answer is Dijon."
    assert read(memo, stop_after=1) == "So the answer is Dijon."  # replayed whole, in one piece
    assert len(inner.prompts) == 1 and memo.replayed[1] is not None
    # A reader whose rule reads on (a changed stopping rule) is not cut at the old stop.
    assert read(memo) == "So the answer is Dijon. And then more words follow"
    assert len(inner.prompts) == 2 and memo.replayed[2] is None
    assert read(memo) == "So the answer is Dijon. And then more words follow"  # now ended: replayed
    assert len(inner.prompts) == 2


def test_a_fresh_generation_that_departs_from_the_replay_is_not_spliced_onto_it(tmp_path):
    # llama.cpp's greedy text can differ with the prompt-cache state: the reader then gets
    # the replay alone, never the replay's start glued to another text's tail.
    inner = ScriptedGenerator(["So the answer is Dijon. And more", "The answer is: Paris, then more words"])
    memo = CachedGenerator(inner, tmp_path / "memo.sqlite")
    assert read(memo, stop_after=5) == "So the answer is Dijon."
    assert read(memo) == "So the answer is Dijon."
    assert len(inner.prompts) == 2 and memo.replayed[-1] is not None


def test_a_memo_from_before_the_ended_column_is_read(tmp_path):
    import sqlite3

    db = sqlite3.connect(str(tmp_path / "memo.sqlite"))
    db.execute("CREATE TABLE generations (key TEXT PRIMARY KEY, text TEXT, seconds REAL)")
    db.commit()
    db.close()
    inner = ScriptedGenerator(["So the answer is Dijon."])
    memo = CachedGenerator(inner, tmp_path / "memo.sqlite")
    assert read(memo) == read(memo) == "So the answer is Dijon."
    assert len(inner.prompts) == 1


def test_a_cancelled_generation_is_not_kept(tmp_path):
    inner = ScriptedGenerator(["So the answer is Dijon."])
    memo = CachedGenerator(inner, tmp_path / "memo.sqlite")
    cancel = threading.Event()
    cancel.set()
    assert read(memo, cancel=cancel) == ""
    assert read(memo) == "So the answer is Dijon."
    assert len(inner.prompts) == 2


def test_eval_records_charge_a_replayed_generation_its_original_seconds(tmp_path):
    from iterretgen_tui.engine.evaluation.datasets import load_dataset

    from .test_evaluate import fake_retriever, reader, write_dataset

    dataset = load_dataset(write_dataset(tmp_path / "toy"))
    # A slow reader, so generation dominates each iteration's time and the comparison
    # below does not hang on milliseconds of retrieval jitter (it did on a loaded machine).
    memo = CachedGenerator(ScriptedGenerator(reader, delay=0.05), tmp_path / "memo.sqlite")
    kwargs = dict(retriever=fake_retriever(dataset), generator=memo, options=paper_options(iterations=2, top_k=1))
    first = evaluate.evaluate_question(dataset.questions[0], **kwargs)
    started = time.perf_counter()
    second = evaluate.evaluate_question(dataset.questions[0], **kwargs)
    replay_wall = time.perf_counter() - started
    assert [s["replayed"] for s in first["iterations"]] == [False, False]
    assert [s["replayed"] for s in second["iterations"]] == [True, True]
    assert [s["answer"] for s in second["iterations"]] == [s["answer"] for s in first["iterations"]]
    # Charged what its generations took when they ran; a fresh iteration also paid for
    # writing the memo, which a slow disk made 15% of it, so the bound against it is loose.
    assert sum(s["seconds"] for s in second["iterations"]) >= sum(memo.replayed)
    for fresh, replay in zip(first["iterations"], second["iterations"]):
        assert replay["seconds"] >= 0.5 * fresh["seconds"]
    assert replay_wall < 0.5 * sum(s["seconds"] for s in second["iterations"])  # charged, not spent


def test_a_readers_probability_of_yes_is_kept_and_a_reader_without_one_has_none(tmp_path):
    class Odds(ScriptedGenerator):
        asked = 0

        def yes_probability(self, messages) -> float:
            self.asked += 1
            return 0.25

    inner = Odds(["Yes"])
    cached = CachedGenerator(inner, tmp_path / "memo.sqlite")
    check = [{"role": "user", "content": "Does it say?"}]
    assert cached.yes_probability(check) == 0.25 and cached.yes_probability(check) == 0.25
    assert inner.asked == 1
    assert CachedGenerator(Odds(["Yes"]), tmp_path / "memo.sqlite").yes_probability(check) == 0.25  # from disk
    assert not hasattr(CachedGenerator(ScriptedGenerator(["Yes"]), tmp_path / "other.sqlite"), "yes_probability")
