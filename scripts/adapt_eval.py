"""Retrieval before and after `adapt`: the numbers that need no LLM.

    python scripts/adapt_eval.py --query-encoder NAME DATASET_DIR ... [--drafts RECORDS.jsonl ...]

For each dataset, with the base query encoder and then the adapted one (over the same
index: the passage side is unchanged, so nothing is re-embedded), it reports
- T=1: the top-k for the question alone, scored as `eval` scores iteration 1
  (gold_recall, answer_recall), plus recall@k and nDCG@10 against the qrels;
- T=2 with the unadapted y1: the top-k for `y1 || q`, with y1 from the given `eval`
  records (drafted from the base encoder's T=1 passages). A true adapted T=2 would need
  new drafts from the adapted T=1 passages; this measures only the query side.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from statistics import fmean

from iterretgen_tui import config
from iterretgen_tui.commands.eval import open_dataset_retriever
from iterretgen_tui.engine.evaluation.adapt import drafts_from_records
from iterretgen_tui.engine.evaluation.datasets import load_dataset
from iterretgen_tui.engine.evaluation.evaluate import retrieval_metrics, retrieval_scores
from iterretgen_tui.engine.loop.queries import form_query
from iterretgen_tui.session import Session


def _mean_scores(questions, queries, retriever, k: int) -> dict[str, float]:
    rows = [retrieval_scores(found, q) for q, found in zip(questions, retriever.retrieve_many(queries, k))]
    return {key: round(fmean(r[key] for r in rows), 4) for key in rows[0]}


def measure(dataset, drafts: dict, settings, k: int, say) -> dict:
    session = Session(settings)
    session.load_embedder(say)
    retriever = open_dataset_retriever(dataset, session.embedder, say)
    questions = list(dataset.questions)
    result = {
        "identity": session.embedder.identity,
        "t1": {"n": len(questions), **_mean_scores(questions, [q.text for q in questions], retriever, k)},
        "qrels": retrieval_metrics(questions, retriever),
    }
    drafted = [q for q in questions if q.id in drafts]
    if drafted:  # T=1 on the same questions as T=2, so the two compare
        result["t1_drafted"] = {"n": len(drafted), **_mean_scores(drafted, [q.text for q in drafted], retriever, k)}
        queries = [form_query(q.text, drafts[q.id].draft) for q in drafted]
        result["t2_unadapted_y1"] = {"n": len(drafted), **_mean_scores(drafted, queries, retriever, k)}
    retriever.index.close()
    return result


def _table(name: str, before: dict, after: dict, top_k: int) -> str:
    lines = [f"{name}", f"  {'':<34}{'n':>5}{'before':>9}{'after':>9}{'delta':>9}"]
    parts = (("t1", "T=1"), ("t1_drafted", "T=1 (drafted)"), ("t2_unadapted_y1", "T=2 (unadapted y1)"))
    for part, label in parts:
        if part not in before:
            continue
        for key in ("gold_recall", "answer_recall"):
            b, a = before[part][key], after[part][key]
            lines.append(f"  {label + ' ' + key:<34}{before[part]['n']:>5}{b:>9.3f}{a:>9.3f}{a - b:>+9.3f}")
    for key, b in before["qrels"].items():
        if key == f"recall@{top_k}":
            continue  # the T=1 gold_recall row
        a = after["qrels"][key]
        lines.append(f"  {'q-only ' + key:<34}{before['t1']['n']:>5}{b:>9.3f}{a:>9.3f}{a - b:>+9.3f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", type=Path, nargs="+", metavar="DATASET_DIR")
    parser.add_argument("--query-encoder", required=True, metavar="NAME", help="the adapted encoder")
    parser.add_argument(
        "--drafts",
        type=Path,
        action="append",
        default=[],
        metavar="RECORDS.jsonl",
        help="`eval` records with iteration-1 drafts (for the T=2 rows)",
    )
    parser.add_argument("--top-k", type=int, default=5, help="passages per retrieval, as in eval")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    drafts: dict[str, dict] = {}
    for path in args.drafts:
        directory, found = drafts_from_records(path)
        drafts.setdefault(directory, {}).update(found)
    base = config.load({"query_encoder": ""})
    adapted = replace(base, query_encoder=args.query_encoder)
    results = {}
    for directory in args.datasets:
        dataset = load_dataset(directory)
        known = drafts.get(str(dataset.directory), {})
        before = measure(dataset, known, base, args.top_k, say)
        after = measure(dataset, known, adapted, args.top_k, say)
        assert before["identity"] == after["identity"], "the adapted encoder must keep the passage index"
        results[dataset.name] = {"before": before, "after": after}
        print(
            _table(f"{dataset.name} (top-{args.top_k}, query encoder {args.query_encoder})", before, after, args.top_k)
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
