"""The paper's answer and retrieval metrics, each a fraction in [0, 1] for one question.

Answers are compared after SQuAD normalisation (engine/loop/answers.py, the same one the
adaptive stop uses), against every gold alias, keeping the best.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from ..loop.answers import mentions, normalize_answer, token_f1, yes_or_no


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(a) for a in answers))


def f1(prediction: str, answers: Sequence[str]) -> float:
    return max((token_f1(prediction, a) for a in answers), default=0.0)


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """Some gold alias occurs in the text (whole words, normalised)."""
    return any(mentions(text, answer) for answer in answers)


def accuracy(prediction: str, answers: Sequence[str]) -> float:
    return float(contains_answer(prediction, answers))


def answer_recall(passage_texts: Iterable[str], answers: Sequence[str]) -> float:
    return float(any(contains_answer(text, answers) for text in passage_texts))


def gold_recall(retrieved_ids: Iterable[str], gold_ids: Iterable[str]) -> float:
    gold = set(gold_ids)
    return len(gold & set(retrieved_ids)) / len(gold) if gold else 0.0


def recall_at(ranked_ids: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    return gold_recall(ranked_ids[:k], relevant)


def ndcg_at(ranked_ids: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """nDCG with linear gains, as trec_eval and BEIR compute it."""
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked_ids[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


# Acc† (Shao et al., 2023): an LLM decides whether the prediction implies the gold answer.
JUDGE_PROMPT = """In the following task, you are given a Question, a model Prediction for the Question, and a Ground-truth Answer to the Question. You should decide whether the model Prediction implies the Ground-truth Answer.

Question
{question}

Prediction
{prediction}

Ground-truth Answer
{answer}

Does the Prediction imply the Ground-truth Answer? Output Yes or No:"""


def judge_messages(question: str, prediction: str, answer: str) -> list[dict[str, str]]:
    content = JUDGE_PROMPT.format(question=question, prediction=prediction, answer=answer)
    return [{"role": "user", "content": content}]


def parse_judge(reply: str) -> bool | None:
    """The judge's Yes or No (``yes_or_no``); no verdict never counts as correct."""
    return yes_or_no(reply)
