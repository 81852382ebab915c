"""Metric functions against hand-worked cases, and the strict judge parser."""

import math

import pytest

from iterretgen_tui.engine.evaluation import metrics


@pytest.mark.parametrize(
    "prediction, answers, expected",
    [
        ("The Danube.", ["Danube"], 1.0),  # article, case and punctuation normalised away
        ("danube river", ["Danube"], 0.0),
        ("Orioles", ["Pittsburgh Pirates", "Orioles"], 1.0),  # any alias counts
        ("", ["Danube"], 0.0),
    ],
)
def test_exact_match(prediction, answers, expected):
    assert metrics.exact_match(prediction, answers) == expected


def test_f1_hand_worked():
    # pred tokens {big, red, dog} vs gold {red, dog}: P = 2/3, R = 1, F1 = 0.8
    assert metrics.f1("the big red dog", ["red dog"]) == pytest.approx(0.8)
    # the best alias wins: "red" alone gives P = 1/3, R = 1 -> 0.5, "red dog" 0.8
    assert metrics.f1("the big red dog", ["red", "red dog"]) == pytest.approx(0.8)
    assert metrics.f1("", ["red dog"]) == 0.0
    assert metrics.f1("yes", ["no"]) == 0.0


def test_accuracy_is_whole_word_containment():
    assert metrics.accuracy("So it was refounded in 1505, I think", ["1505"]) == 1.0
    assert metrics.accuracy("in 1505", ["1"]) == 0.0  # "1" is not inside "1505"
    assert metrics.accuracy("Charles Babbage, the mathematician", ["babbage"]) == 1.0
    assert metrics.accuracy("", ["Rush"]) == 0.0
    assert metrics.accuracy("anything", ["The"]) == 0.0  # a gold that normalises to nothing


def test_answer_and_gold_recall():
    texts = ["Rush is a Canadian rock band.", "Neil Peart was its drummer."]
    assert metrics.answer_recall(texts, ["Rush"]) == 1.0
    assert metrics.answer_recall(texts, ["Toto"]) == 0.0
    assert metrics.answer_recall([], ["Rush"]) == 0.0
    assert metrics.gold_recall(["d4", "d9", "d1"], ["d4", "d6"]) == 0.5
    assert metrics.gold_recall(["d4", "d6"], ["d4", "d6"]) == 1.0


def test_recall_and_ndcg_hand_worked():
    ranked = ["a", "x", "b", "y"]
    relevant = {"a": 1, "b": 1}
    assert metrics.recall_at(ranked, relevant, 1) == 0.5
    assert metrics.recall_at(ranked, relevant, 3) == 1.0
    # DCG = 1/log2(2) + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3)
    assert metrics.ndcg_at(ranked, relevant, 10) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert metrics.ndcg_at(["b", "a"], relevant, 10) == pytest.approx(1.0)
    assert metrics.ndcg_at(["x"], relevant, 10) == 0.0
    # graded relevance: the more relevant document first is ideal
    assert metrics.ndcg_at(["b", "a"], {"a": 2, "b": 1}, 10) < 1.0


@pytest.mark.parametrize(
    "reply, verdict",
    [
        ("Yes", True),
        ("  yes.", True),
        ("YES!", True),
        ("No", False),
        ("no.\n", False),
        ("**Yes**", True),
        ("No, the Prediction", False),
        ("Yes, because it names Rush", True),
        ("Maybe", None),
        ("", None),
        ("Nope", None),
        ("Yesterday", None),
        ("The answer is yes", None),
        ("I think: No", None),
    ],
)
def test_parse_judge_is_strict(reply, verdict):
    assert metrics.parse_judge(reply) is verdict


def test_judge_prompt_has_the_papers_fields():
    [message] = metrics.judge_messages("Who?", "Rush", "Rush band")
    content = message["content"]
    assert "Question\nWho?" in content
    assert "Prediction\nRush" in content
    assert "Ground-truth Answer\nRush band" in content
    assert content.endswith("Does the Prediction imply the Ground-truth Answer? Output Yes or No:")
