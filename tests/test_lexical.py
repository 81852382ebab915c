"""The keyword index (FTS5 beside the passages) and keyword retrieval: in step with every
write, built once for an older index, safe for any query text."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from iterretgen_tui.engine.indexing import index as index_module
from iterretgen_tui.engine.indexing.index import IndexMismatchError, PassageIndex
from iterretgen_tui.engine.indexing.indexer import open_folder_index, sync_corpus, sync_folder
from iterretgen_tui.engine.retrieval.lexical import (
    MAX_TERMS,
    LexicalRetriever,
    match_expression,
    query_terms,
    within_budget,
)

from .fakes import HashEmbedder
from .test_index import consistency

CORPUS = [
    ("d1", "Gasket parts", "Part XQ-4471 ships with a blue gasket and two steel bolts."),
    ("d2", "Gasket parts", "Part XR-2281 ships with a red gasket."),
    ("d3", "Café Zoë", "The café on the corner serves crème brûlée (and NEAR-perfect coffee)."),
    ("d4", "Title: weights", "Cheese is made from milk; whey is what is left."),
]

HOSTILE = [
    '"',
    '""',
    '"unbalanced quote',
    "AND",
    "OR",
    "NOT",
    "cheese AND",
    "NOT cheese",
    "cheese OR OR milk",
    "NEAR(cheese milk)",
    "NEAR(cheese milk, 2)",
    "*",
    "chee*",
    "^cheese",
    "^",
    "(",
    ")",
    "(cheese OR (milk",
    "-",
    "--cheese",
    "XQ-4471",
    "-4471",
    "title:",
    "title: cheese",
    "text:milk",
    "{title text}: milk",
    "🙂",
    "🧀 cheese 🥛",
    "the of and a",
    "",
    "   ",
    "\x00",
    "'; DROP TABLE passages; --",
    "+milk",
    ":",
    "café",
    "CAFE",
    "a" * 5000,
    "-".join(["x"] * 3000),
]


@pytest.fixture
def index(tmp_path):
    emb = HashEmbedder()
    index = PassageIndex.open(tmp_path / "index", embedder_identity=emb.identity, dim=emb.dim)
    sync_corpus(index, CORPUS, emb)
    yield index
    index.close()


def sources(passages) -> list[str]:
    return [p.source for p in passages]


@pytest.mark.parametrize("text", HOSTILE)
def test_any_query_text_is_safe(index, text):
    started = time.monotonic()
    found = LexicalRetriever(index).retrieve(text, 5)
    assert time.monotonic() - started < 2
    assert all(p.ranker == "lexical" for p in found)


def test_operators_and_punctuation_are_literal_words(index):
    retriever = LexicalRetriever(index)
    assert sources(retriever.retrieve("XQ-4471", 5)) == ["d1"]  # a phrase of its parts: not XR-2281
    assert sources(retriever.retrieve("NOT cheese", 5)) == ["d4"]  # NOT is a stop word, not an operator
    assert sources(retriever.retrieve("^cheese*", 5)) == ["d4"]
    assert sources(retriever.retrieve("title: weights", 5)) == ["d4"]
    assert sources(retriever.retrieve("NEAR(creme brulee)", 5)) == ["d3"]  # diacritics folded
    assert retriever.retrieve("the of and which", 5) == []
    assert retriever.retrieve("🙂 ?!", 5) == []


def test_a_long_draft_is_a_capped_disjunction_that_keeps_its_last_terms():
    words = [f"w{n}" for n in range(1000)]
    terms = query_terms(" ".join(words) + " the THE w999 " + "question words")
    assert len(terms) == MAX_TERMS and len(set(terms)) == MAX_TERMS
    assert terms[-2:] == ["question", "words"] and "w999" in terms and "w0" not in terms
    assert query_terms("The of AND the") == [] and query_terms("") == []
    assert match_expression(["xq-4471", "gasket"]) == '"xq-4471" OR "gasket"' and match_expression([]) is None


def test_the_commonest_terms_are_left_out_past_the_postings_budget():
    counts = {"cells": 9_000, "protein": 4_000, "kinase": 300, "zebrafish": 20}
    terms = ["cells", "zebrafish", "protein", "kinase", "xq-4471"]
    assert within_budget(terms, counts, budget=5_000) == ["zebrafish", "protein", "kinase", "xq-4471"]
    assert within_budget(terms, counts, budget=1_000) == ["zebrafish", "kinase", "xq-4471"]
    # the rarest term the index holds stays, however long its list
    assert within_budget(["cells", "xq-4471"], counts, budget=10) == ["cells", "xq-4471"]
    assert within_budget(terms, counts, budget=100_000) == terms


def test_term_frequencies_are_the_keyword_index_counts(index):
    counts = index.term_frequencies(["gasket", "blue", "nowhere", "crème"])
    assert counts["gasket"] == 2 and "nowhere" not in counts and "crème" not in counts
    assert index.term_frequencies([]) == {}


def test_bm25_ranks_by_rare_shared_terms_and_weights_the_title(index):
    hits = LexicalRetriever(index).retrieve("which part ships with a blue gasket", 5)
    assert sources(hits) == ["d1", "d2"] and hits[0].score > hits[1].score
    # "weights" is only in d4's title, "coffee" only in d3's text: the title weight decides.
    light = index.lexical_search('"weights" OR "coffee"', 5, title_weight=0.1)
    heavy = index.lexical_search('"weights" OR "coffee"', 5, title_weight=10.0)
    assert sources(light) == ["d3", "d4"] and sources(heavy) == ["d4", "d3"]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def keyword_sources(index, word: str) -> set[str]:
    return {Path(p.source).name for p in index.lexical_search(f'"{word}"', 50)}


def test_the_keyword_index_follows_add_edit_delete_and_rename(tmp_path):
    folder, emb = tmp_path / "docs", HashEmbedder()
    write(folder / "a.txt", "alpha walrus")
    write(folder / "b.txt", "beta narwhal")
    index = open_folder_index(folder, emb)
    sync_folder(folder, index, emb)
    assert keyword_sources(index, "walrus") == {"a.txt"} and keyword_sources(index, "narwhal") == {"b.txt"}

    write(folder / "a.txt", "alpha dugong")  # edit
    write(folder / "c.txt", "gamma walrus")  # add
    (folder / "b.txt").rename(folder / "renamed.txt")  # rename: its vectors are reused
    sync_folder(folder, index, emb)
    assert keyword_sources(index, "walrus") == {"c.txt"}
    assert keyword_sources(index, "dugong") == {"a.txt"}
    assert keyword_sources(index, "narwhal") == {"renamed.txt"}

    (folder / "c.txt").unlink()  # delete
    sync_folder(folder, index, emb)
    assert keyword_sources(index, "walrus") == set() and keyword_sources(index, "gamma") == set()
    consistency(index.directory, index)


def make_old_index(directory: Path, emb: HashEmbedder) -> None:
    """An index as the version before the keyword index wrote it: no FTS table, no triggers."""
    index = PassageIndex.open(directory, embedder_identity=emb.identity, dim=emb.dim)
    sync_corpus(index, CORPUS, emb)
    index.close()
    with sqlite3.connect(directory / "index.sqlite3") as db:
        for statement in index_module._LEXICAL_DROP:
            db.execute(statement)
        db.execute("DELETE FROM meta WHERE key = 'lexical'")


def test_an_old_index_gets_its_keyword_index_once_without_embedding_again(tmp_path):
    emb = HashEmbedder()
    make_old_index(tmp_path / "index", emb)
    index = PassageIndex.open(tmp_path / "index", embedder_identity=emb.identity, dim=emb.dim)
    with pytest.raises(IndexMismatchError, match="index the folder again"):
        index.lexical_search('"gasket"', 5)
    steps, calls = [], len(emb.calls)
    report = sync_corpus(index, CORPUS, emb, progress=steps.append)
    assert len(emb.calls) == calls and report.embedded == 0 and report.unchanged == 4
    assert steps and steps[-1].current == "keyword index: 4/4 passages"
    assert sources(index.lexical_search('"gasket"', 5)) == ["d1", "d2"] or sources(
        index.lexical_search('"gasket"', 5)
    ) == ["d2", "d1"]
    consistency(index.directory, index)
    steps.clear()
    sync_corpus(index, CORPUS, emb, progress=steps.append)
    assert not [s for s in steps if s.current.startswith("keyword index")], "built once"


def test_a_cancelled_build_leaves_the_old_index_and_a_rerun_builds_it(tmp_path):
    emb = HashEmbedder()
    make_old_index(tmp_path / "index", emb)
    index = PassageIndex.open(tmp_path / "index", embedder_identity=emb.identity, dim=emb.dim)
    cancel = threading.Event()
    cancel.set()
    with index.lock():
        assert index.build_lexical(cancel=cancel) is False
    assert index.meta("lexical") is None and len(index) == 4
    assert index.term_frequencies(["whey"]) == {}
    with pytest.raises(IndexMismatchError, match="no keyword index yet"):  # not SQLite's own error
        LexicalRetriever(index).retrieve("whey", 5)
    with index.lock():
        assert index.build_lexical() is True
    assert sources(index.lexical_search('"whey"', 5)) == ["d4"]
    assert index.term_frequencies(["whey"]) == {"whey": 1}


def test_another_tokenizer_rebuilds_the_keyword_index(index, monkeypatch):
    assert index.lexical_search('"ships"', 5) and not index.lexical_search('"ship"', 5)
    monkeypatch.setattr(index_module, "LEXICAL_TOKENIZER", "porter unicode61 remove_diacritics 2")
    with index.lock():
        index.build_lexical()
    assert sorted(sources(index.lexical_search('"ship"', 5))) == ["d1", "d2"]
    consistency(index.directory, index)
