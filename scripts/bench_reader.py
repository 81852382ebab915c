#!/usr/bin/env python
"""Reader benchmarks, printed as JSON with the CPU they ran on.

qa: questions of a QA set through the real loop (the eval harness's own per-question
    scoring, no replay cache), for one --llm: Acc/EM/F1/answer recall per iteration and
    at the adaptive stop, and seconds per question (median and mean).
speed: raw llama.cpp prompt and decode tokens/s of one --llm on a real ~900-token
    prompt (the app's own prompt over hotpotqa passages), for each --threads value
    (n_threads and n_threads_batch alike).
reuse: an iteration 2 with kept passages: iteration 1 reads 5 hotpotqa passages and
    drafts; iteration 2 finds 3 new ones. Seconds to its first token with the new passages
    first and with the last prompt's passages first (``passage_order``; docs/performance.md,
    "The reader"); the orders alternate.
orders: whole questions of the real-documents set (tests/data/realdocs) through the app's
    session, each asked once per ``passage_order`` value in alternating order, every ask
    starting with only the instruction and demos evaluated (restored from their saved
    state, the app's steady state): seconds per question and per iteration, side by side
    in one run, and whether the answers agree.
prefixes: the same questions, each asked once starting from the saved state of its kind's
    demos and once evaluating them with the prompt (what every new process and every
    switch of question kind paid before, engine/loop/prefix_states.py), in alternating
    order: seconds to the first token and per question; also the one-time costs of making
    both states (evaluated, and read back from disk by a new generator).
lookup: greedy drafts of iteration-1 prompts, plainly and with llama-cpp-python's
    prompt-lookup decoding (``LlamaPromptLookupDecoding``): seconds to the first token and
    of decoding, and whether the texts are identical.

Usage:
  scripts/bench_reader.py qa --llm qwen2.5-coder-1.5b-instruct --set hotpotqa-dev200 --limit 10
  scripts/bench_reader.py speed --llm qwen2.5-coder-1.5b-instruct --threads 1,2
  scripts/bench_reader.py reuse --llm qwen2.5-coder-1.5b-instruct --repeats 3
  scripts/bench_reader.py lookup --llm qwen2.5-coder-1.5b-instruct --repeats 5
  scripts/bench_reader.py orders --questions 12
  scripts/bench_reader.py prefixes --questions 12
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench_common import print_report

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # beside the checkout; --data elsewhere


def _generator(llm: str, n_ctx: int, threads: int | None):
    from iterretgen_tui import models
    from iterretgen_tui.engine.loop.generator import LlamaGenerator

    path = models.resolve_llm(llm)
    return LlamaGenerator(path, n_ctx=n_ctx, device="cpu", n_threads=threads, passage_order=models.passage_order(path))


def qa(args) -> dict:
    from iterretgen_tui.commands.eval import open_dataset_retriever
    from iterretgen_tui.config import Settings
    from iterretgen_tui.engine.evaluation import evaluate
    from iterretgen_tui.engine.evaluation.datasets import load_dataset
    from iterretgen_tui.session import Session

    settings = Settings(llm=args.llm, device="cpu", embed_backend=args.embed_backend)
    dataset = load_dataset(args.data / args.set)
    questions = dataset.questions[args.offset : args.offset + args.limit]
    session = Session(settings)
    session.load_embedder(lambda message: print(message, file=sys.stderr))
    retriever = open_dataset_retriever(dataset, session.embedder, lambda m: print(m, file=sys.stderr))
    generator = _generator(args.llm, settings.n_ctx, args.threads)
    records = []
    for i, question in enumerate(questions, 1):
        records.append(
            evaluate.evaluate_question(
                question,
                retriever=retriever,
                generator=generator,
                options=replace(settings.loop, iterations=args.iterations),
            )
        )
        final = records[-1]["iterations"][records[-1]["adaptive"]["t"] - 1]["answer"]
        print(
            f"{i}/{len(questions)} {records[-1]['seconds']:.1f} s  {final[:70]!r}  gold {question.answers[0]!r}",
            file=sys.stderr,
            flush=True,
        )
        if args.out:  # a long run stopped early still leaves the questions it finished
            args.out.write_text(json.dumps(_qa_report(args, records, generator.n_threads), indent=2) + "\n")
    return _qa_report(args, records, generator.n_threads)


def _qa_report(args, records: list[dict], threads: int) -> dict:
    from iterretgen_tui.engine.evaluation import evaluate

    adaptive_seconds = [sum(s["seconds"] for s in r["iterations"][: r["adaptive"]["t"]]) for r in records]
    return {
        "llm": args.llm,
        "set": args.set,
        "offset": args.offset,
        "n": len(records),
        "threads": threads,
        "iterations": evaluate.summarize(records, range(1, args.iterations + 1), judged=False),
        "adaptive": evaluate.summarize_adaptive(records, judged=False),
        "seconds_per_question": {
            "adaptive_median": round(statistics.median(adaptive_seconds), 2),
            "adaptive_mean": round(statistics.fmean(adaptive_seconds), 2),
            f"t{args.iterations}_median": round(statistics.median(r["seconds"] for r in records), 2),
        },
        "answers": [
            {
                "id": r["id"],
                "gold": r["gold"][0],
                "by_t": [s["answer"] for s in r["iterations"]],
                "acc_by_t": [s["scores"]["acc"] for s in r["iterations"]],
                "seconds_by_t": [s["seconds"] for s in r["iterations"]],
                "adaptive_t": r["adaptive"]["t"],
            }
            for r in records
        ],
    }


def _prompt_tokens(llm, count_tokens, budget: int, data: Path) -> list[int]:
    """The app's own first-iteration prompt for a hotpotqa question over its corpus'
    passages, filled to about ``budget`` tokens, rendered by the GGUF's chat template."""
    from iterretgen_tui.engine.loop.generator import chat_formatter
    from iterretgen_tui.engine.loop.prompts import build_prompt

    passages, questions = _hotpot_passages(data, 40)
    question = questions[0]
    prompt = build_prompt(question, passages, count_tokens=count_tokens, budget=budget)
    text = chat_formatter(llm)(messages=prompt.messages).prompt
    return llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)


def speed(args) -> dict:
    import llama_cpp

    rows = []
    for threads in args.threads:
        generator = _generator(args.llm, 4096, threads)
        llm = generator._llm
        tokens = _prompt_tokens(llm, generator.count_tokens, args.prompt_tokens, args.data)
        prompt_s, decode_s = [], []
        for _ in range(args.repeats):
            llm.reset()
            started = time.perf_counter()
            llm.eval(tokens)
            prompt_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            for _ in range(args.decode_tokens):  # greedy; past an end token is as fast
                llm.eval([llm.sample(top_k=1, temp=0.0)])
            decode_s.append(time.perf_counter() - started)
        rows.append(
            {
                "threads": threads,
                "prompt_tokens": len(tokens),
                "prompt_tok_s": round(len(tokens) / statistics.median(prompt_s), 1),
                "decode_tok_s": round(args.decode_tokens / statistics.median(decode_s), 1),
            }
        )
        del generator, llm
    return {
        "llm": args.llm,
        "llama_cpp_python": llama_cpp.__version__,
        "repeats": args.repeats,
        "decode_tokens": args.decode_tokens,
        "rows": rows,
    }


def _hotpot_passages(data: Path, n: int) -> tuple[list, list[str]]:
    from iterretgen_tui.engine.passages import Passage

    folder = data / "hotpotqa-dev200"
    with (folder / "corpus.jsonl").open() as fh:
        passages = [
            Passage(i, d["text"], d["title"], d["_id"]) for i, d in ((i, json.loads(x)) for i, x in zip(range(n), fh))
        ]
    with (folder / "queries.jsonl").open() as fh:
        questions = [json.loads(line)["text"] for line in fh]
    return passages, questions


def _draft(generator, prompt, max_tokens: int) -> tuple[str, float, float]:
    """The greedy draft of ``prompt``; seconds to its first piece and to its end."""
    import threading

    started, first, pieces = time.perf_counter(), None, []
    for piece in generator.stream(prompt.messages, max_tokens=max_tokens, cancel=threading.Event()):
        first = first or time.perf_counter() - started
        pieces.append(piece)
    return "".join(pieces), first or 0.0, time.perf_counter() - started


def reuse(args) -> dict:
    from iterretgen_tui.engine.loop.iterretgen import carry_forward
    from iterretgen_tui.engine.loop.prompts import build_prompt

    generator = _generator(args.llm, 4096, args.threads)
    passages, questions = _hotpot_passages(args.data, 10 * args.repeats)
    budget = generator.n_ctx - 256
    seconds = {"last prompt first": [], "new first": []}
    tokens = []
    for r in range(args.repeats):
        earlier, new = passages[10 * r : 10 * r + 5], passages[10 * r + 5 : 10 * r + 8]
        orders = {"last prompt first": (*earlier, *new), "new first": carry_forward(new, earlier)}
        first = build_prompt(questions[r], earlier, count_tokens=generator.count_tokens, budget=budget)
        for name in list(orders) if r % 2 == 0 else list(orders)[::-1]:
            generator.reset()
            _draft(generator, first, args.decode_tokens)  # iteration 1, as the loop leaves the cache
            second = build_prompt(questions[r], orders[name], count_tokens=generator.count_tokens, budget=budget)
            seconds[name].append(_draft(generator, second, 1)[1])
            tokens.append(second.tokens)
    return {
        "llm": args.llm,
        "threads": generator.n_threads,
        "repeats": args.repeats,
        "iteration_2_prompt_tokens_median": statistics.median(tokens),
        "iteration_2_first_token_s_median": {k: round(statistics.median(v), 2) for k, v in seconds.items()},
        "ratio": round(statistics.median(seconds["last prompt first"]) / statistics.median(seconds["new first"]), 3),
    }


def lookup(args) -> dict:
    """Prompt lookup needs the logits of every prompt token (``logits_all``) to check its
    guesses, so it is a second model load, timed on prompt and decoding both."""
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from iterretgen_tui.engine.loop.llama_load import load_llama
    from iterretgen_tui.engine.loop.prompts import build_prompt

    plain = _generator(args.llm, 4096, args.threads)
    looking = copy.copy(plain)  # the same wrapper around a second model: one load, not two
    looking._llm = load_llama(
        model_path=str(plain.path),
        n_ctx=4096,
        n_threads=plain.n_threads,
        n_threads_batch=plain.n_threads,
        logits_all=True,
        draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10),
        verbose=False,
    )
    passages, questions = _hotpot_passages(args.data, 5 * args.repeats)
    seconds = {"plain": {"prompt": [], "decode": []}, "lookup": {"prompt": [], "decode": []}}
    identical = []
    for r in range(args.repeats):
        prompt = build_prompt(questions[r], passages[5 * r : 5 * r + 5], count_tokens=plain.count_tokens, budget=3840)
        texts = {}
        for name in ("plain", "lookup") if r % 2 == 0 else ("lookup", "plain"):
            generator = plain if name == "plain" else looking
            generator.reset()
            texts[name], first, total = _draft(generator, prompt, args.decode_tokens)
            seconds[name]["prompt"].append(first)
            seconds[name]["decode"].append(total - first)
        identical.append(texts["plain"] == texts["lookup"])
    return {
        "llm": args.llm,
        "threads": plain.n_threads,
        "repeats": args.repeats,
        "median_s": {n: {k: round(statistics.median(v), 2) for k, v in parts.items()} for n, parts in seconds.items()},
        "identical_texts": sum(identical),
    }


def _realdocs_session(args):
    """The app's session over tests/data/realdocs, and ``args.questions`` of its questions
    spread evenly over the 71."""
    from iterretgen_tui import config
    from iterretgen_tui.session import Session

    docs = Path(__file__).resolve().parents[1] / "tests" / "data"
    items = [json.loads(line) for line in (docs / "realdocs-questions.jsonl").read_text("utf-8").splitlines()]
    items = [items[i * len(items) // args.questions] for i in range(args.questions)]
    settings = config.load({"llm": args.llm} if args.llm else {})
    session = Session(settings)
    session.load_models(lambda message: print(message, file=sys.stderr))
    session.open_folder(docs / "realdocs")
    return session, items


def _ask_timed(session, question: str, options=None) -> dict:
    """One whole question: seconds to its first token and in all, per iteration, the answer."""
    import threading

    from iterretgen_tui.engine.loop.events import FinalAnswer, Token

    started, first, final = time.perf_counter(), None, None
    for event in session.ask(question, cancel=threading.Event(), options=options):
        if first is None and isinstance(event, Token):
            first = time.perf_counter() - started
        final = event if isinstance(event, FinalAnswer) else final
    return {
        "first_token": round(first, 2),
        "seconds": round(time.perf_counter() - started, 2),
        "by_t": [round(trace.seconds, 2) for trace in final.iterations],
        "answer": final.answer,
    }


def _side_by_side(session, items, names, prepare) -> list[dict]:
    """Each question once per name in alternating order; ``prepare(name)`` before each ask
    returns its loop options."""
    rows = []
    for n, item in enumerate(items):
        row = {"id": item["id"]}
        for name in names if n % 2 == 0 else names[::-1]:
            session.generator.reset()
            row[name] = _ask_timed(session, item["question"], prepare(name))
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def orders(args) -> dict:
    session, items = _realdocs_session(args)
    settings, generator, names = session.settings, session.generator, ("new-first", "earlier-first")
    # reset() leaves the saved demos: every ask starts from them, as after any earlier question.
    rows = _side_by_side(session, items, names, lambda name: replace(settings.loop, passage_order=name))
    ratios = [r["earlier-first"]["seconds"] / r["new-first"]["seconds"] for r in rows]
    second = [
        r["earlier-first"]["by_t"][1] / r["new-first"]["by_t"][1]
        for r in rows
        if len(r["earlier-first"]["by_t"]) > 1 and len(r["new-first"]["by_t"]) > 1
    ]
    return {
        "llm": session.info()["llm"],
        "threads": generator.n_threads,
        "questions": len(rows),
        "seconds_per_question_median": {
            name: round(statistics.median(r[name]["seconds"] for r in rows), 2) for name in names
        },
        "earlier_over_new_per_question": {
            "median": round(statistics.median(ratios), 3),
            "quartiles": [round(q, 3) for q in statistics.quantiles(ratios, n=4)],
        },
        "earlier_over_new_iteration_2_median": round(statistics.median(second), 3) if second else None,
        "same_answer": sum(r["earlier-first"]["answer"] == r["new-first"]["answer"] for r in rows),
        "rows": rows,
    }


def prefixes(args) -> dict:
    from iterretgen_tui.engine.loop.generator import LlamaGenerator
    from iterretgen_tui.engine.loop.question_kind import question_kind

    session, items = _realdocs_session(args)
    generator, registered = session.generator, session.generator.prefixes
    folder = generator.states.folder
    for state in folder.glob("*.state"):
        state.unlink()  # the one-time cost is measured from nothing
    started = time.perf_counter()
    generator.warm()
    evaluated_once = time.perf_counter() - started
    second = LlamaGenerator(
        generator.path,
        n_ctx=generator.n_ctx,
        n_threads=generator.n_threads,
        prefixes=[p for _, p in registered],
        state_dir=folder,
    )
    started = time.perf_counter()
    second.warm()
    read_once = time.perf_counter() - started
    del second

    def prepare(name: str):
        generator.prefixes = registered if name == "saved" else []
        return None

    names = ("saved", "evaluated")
    rows = _side_by_side(session, items, names, prepare)
    generator.prefixes = registered
    kinds = [question_kind(item["question"]) for item in items]
    ratio = [r["saved"]["first_token"] / r["evaluated"]["first_token"] for r in rows]
    return {
        "llm": session.info()["llm"],
        "threads": generator.n_threads,
        "questions": len(rows),
        "kind_switches_in_order": sum(a != b for a, b in zip(kinds, kinds[1:], strict=False)),
        "both_states_evaluated_s": round(evaluated_once, 2),
        "both_states_read_from_disk_s": round(read_once, 2),
        "state_bytes": sorted(p.stat().st_size for p in folder.glob("*.state")),
        "first_token_s_median": {
            name: round(statistics.median(r[name]["first_token"] for r in rows), 2) for name in names
        },
        "seconds_per_question_median": {
            name: round(statistics.median(r[name]["seconds"] for r in rows), 2) for name in names
        },
        "saved_over_evaluated_first_token_median": round(statistics.median(ratio), 3),
        "same_answer": sum(r["saved"]["answer"] == r["evaluated"]["answer"] for r in rows),
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    modes = parser.add_subparsers(dest="mode", required=True)
    q = modes.add_parser("qa")
    q.add_argument("--llm", required=True)
    q.add_argument("--set", default="hotpotqa-dev200")
    q.add_argument("--limit", type=int, default=10)
    q.add_argument("--offset", type=int, default=0)
    q.add_argument("--iterations", type=int, default=3)
    q.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: half the cores)")
    q.add_argument("--embed-backend", default="torch")
    s = modes.add_parser("speed")
    s.add_argument("--llm", required=True)
    s.add_argument("--threads", type=lambda v: [int(x) for x in v.split(",")], default=[1, 2])
    s.add_argument("--prompt-tokens", type=int, default=900)
    s.add_argument("--decode-tokens", type=int, default=64)
    s.add_argument("--repeats", type=int, default=3)
    others = []
    for name in ("reuse", "lookup"):
        other = modes.add_parser(name)
        other.add_argument("--llm", required=True)
        other.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the app's)")
        other.add_argument("--repeats", type=int, default=3)
        other.add_argument("--decode-tokens", type=int, default=128)
        others.append(other)
    realdocs = []
    for name in ("orders", "prefixes"):
        o = modes.add_parser(name)
        o.add_argument("--llm", help="chat model (default: the app's)")
        o.add_argument("--questions", type=int, default=12, help="spread evenly over the 71")
        realdocs.append(o)
    for p in (q, s, *others, *realdocs):
        p.add_argument("--out", type=Path)
        p.add_argument("--data", type=Path, default=DATA, help="the QA sets' folder")
    args = parser.parse_args()
    run = {"qa": qa, "speed": speed, "reuse": reuse, "lookup": lookup, "orders": orders, "prefixes": prefixes}[
        args.mode
    ]
    print_report(run(args), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
