"""Evaluation datasets in the BEIR-like layout of ../shared/data:
``corpus.jsonl`` ({"_id", "title", "text"}), ``queries.jsonl`` ({"_id", "text",
"answers"?, "gold_doc_ids"?}) and ``qrels.tsv`` (query-id, corpus-id, score)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import IterRetGenError


class DatasetError(IterRetGenError, ValueError):
    """The folder is not a dataset we can read; the message says which file and why."""


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answers: tuple[str, ...]  # gold aliases; empty for retrieval-only sets
    relevant: dict[str, int]  # corpus id -> graded relevance (qrels, else gold_doc_ids)


@dataclass(frozen=True)
class Dataset:
    directory: Path
    questions: tuple[Question, ...]

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def has_answers(self) -> bool:
        return any(q.answers for q in self.questions)

    def corpus(self) -> Iterator[tuple[str, str, str]]:
        """(doc_id, title, text) per line, read lazily: corpora can be large."""
        for number, record in _jsonl(self.directory / "corpus.jsonl"):
            try:
                yield str(record["_id"]), str(record.get("title") or ""), str(record["text"])
            except KeyError as exc:
                raise DatasetError(f"corpus.jsonl line {number}: missing {exc}") from None


def _jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path.name} line {number}: {exc.msg}") from None


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    if not path.exists():
        return qrels
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        cells = line.split("\t")
        if not line.strip() or (number == 1 and cells[0] == "query-id"):
            continue
        if len(cells) != 3:
            raise DatasetError(f"qrels.tsv line {number}: expected 3 tab-separated columns")
        try:
            score = int(cells[2])
        except ValueError:
            raise DatasetError(f"qrels.tsv line {number}: score {cells[2]!r} is not an integer") from None
        if score > 0:
            qrels.setdefault(cells[0], {})[cells[1]] = score
    return qrels


def load_dataset(directory: Path | str) -> Dataset:
    directory = Path(directory).expanduser().resolve()
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (directory / name).is_file():
            raise DatasetError(f"{directory} has no {name} (expected corpus.jsonl, queries.jsonl, qrels.tsv)")
    qrels = _qrels(directory / "qrels.tsv")
    questions = []
    for number, record in _jsonl(directory / "queries.jsonl"):
        if "_id" not in record or not str(record.get("text", "")).strip():
            raise DatasetError(f"queries.jsonl line {number}: needs _id and text")
        qid = str(record["_id"])
        relevant = qrels.get(qid) or {str(d): 1 for d in record.get("gold_doc_ids", [])}
        answers = tuple(str(a) for a in record.get("answers", []) if str(a).strip())
        questions.append(Question(qid, str(record["text"]), answers, relevant))
    if not questions:
        raise DatasetError(f"{directory / 'queries.jsonl'} has no questions")
    return Dataset(directory, tuple(questions))
