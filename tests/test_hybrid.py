"""Hybrid retrieval: the fused order, which ranker found each passage, and a keyword-only
match the embedding misses."""

from __future__ import annotations

import pytest

from iterretgen_tui import models
from iterretgen_tui.engine.indexing.index import FileRecord, PassageIndex
from iterretgen_tui.engine.indexing.indexer import sync_corpus
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.engine.retrieval.hybrid import HybridRetriever, _named, fuse
from iterretgen_tui.engine.retrieval.modes import build_retriever
from iterretgen_tui.ui.iterations import passage_label


def ranked(*pairs: tuple[str, float]) -> list[Passage]:
    return [Passage(id=ord(name), text=name, title="", source=name, score=score) for name, score in pairs]


def test_the_fused_order_of_a_hand_built_case():
    dense = ranked(("A", 0.9), ("B", 0.8), ("C", 0.1))  # normalised: A 1, B 0.875, C 0
    lexical = ranked(("C", 10.0), ("D", 5.5), ("A", 1.0))  # normalised: C 1, D 0.5, A 0
    fused = fuse(dense, lexical, 4, dense_weight=0.7)
    # A 0.7, B 0.6125, C 0.3, D 0.15
    assert [p.source for p in fused] == ["A", "B", "C", "D"]
    assert [round(p.score, 4) for p in fused] == [0.7, 0.6125, 0.3, 0.15]
    assert [p.ranker for p in fused] == ["both", "dense", "both", "lexical"]
    # a lighter dense weight lets the keyword ranking lead
    assert [p.source for p in fuse(dense, lexical, 2, dense_weight=0.3)] == ["C", "D"]  # C 0.7, D 0.35


def test_the_ranker_is_judged_in_each_rankers_own_top_k():
    dense = ranked(("A", 0.9), ("B", 0.8), ("E", 0.7))  # A 1, B 0.5, E 0
    lexical = ranked(("D", 3.0), ("E", 2.0), ("B", 1.0))  # D 1, E 0.5, B 0
    found = [(p.source, p.ranker) for p in fuse(dense, lexical, 2, dense_weight=0.5)]
    assert found == [("A", "dense"), ("D", "lexical")]  # ties keep dense's order
    # E is in neither top 2 but in both rankings, and their agreement lifts it to the top
    dense = ranked(("A", 1.0), ("B", 0.9), ("E", 0.8), ("G", 0.0))
    lexical = ranked(("D", 10.0), ("F", 9.0), ("E", 8.0), ("H", 0.0))
    found = [(p.source, p.ranker) for p in fuse(dense, lexical, 2, dense_weight=0.5)]
    assert found == [("E", "both"), ("A", "dense")]


def test_one_empty_ranking_leaves_the_other_order():
    dense = ranked(("A", 0.9), ("B", 0.5))
    assert [p.source for p in fuse(dense, [], 2, dense_weight=0.7)] == ["A", "B"]
    assert [p.source for p in fuse([], dense, 2, dense_weight=0.7)] == ["A", "B"]
    assert fuse([], [], 3, dense_weight=0.7) == []


def titled(*triples: tuple[str, str, float]) -> list[Passage]:
    return [Passage(id=ord(name), text=name, title=title, source=name, score=score) for name, title, score in triples]


def test_a_passage_whose_whole_title_the_search_names_rises():
    dense = titled(("A", "Toto", 0.9), ("C", "Porcaro family", 0.8), ("B", "Jeff Porcaro", 0.7))
    lexical = titled(("A", "Toto", 3.0), ("B", "Jeff Porcaro", 2.2), ("C", "Porcaro family", 1.0))
    # A 1.0, C 0.7 x 0.5 = 0.35, B 0.3 x 0.6 = 0.18 (+ 0.2 where the title is named)
    plain = fuse(dense, lexical, 3, dense_weight=0.7)
    assert [p.source for p in plain] == ["A", "C", "B"]
    named = "Which band did jeff porcaro, the drummer, play with?"
    lifted = fuse(dense, lexical, 3, dense_weight=0.7, named=_named(named))
    assert [(p.source, round(p.score, 4)) for p in lifted] == [("A", 1.0), ("B", 0.38), ("C", 0.35)]
    # word for word and whole: "Porcaro family" is not named, nor "Toto" by "Totoro"
    assert [p.source for p in fuse(dense, lexical, 3, dense_weight=0.7, named=_named("the porcaro totoro"))] == [
        "A",
        "C",
        "B",
    ]
    # a bonus big enough to reorder, and titles too short to trust get none
    assert [p.source for p in fuse(dense, lexical, 1, dense_weight=0.7, named=_named(named), title_bonus=1.0)] == ["B"]
    rust_then_go = titled(("A", "Rust", 0.9), ("B", "Go", 0.1))
    assert [p.source for p in fuse(rust_then_go, [], 1, dense_weight=0.7, named=_named("go"), title_bonus=1.0)] == ["A"]


def test_each_search_names_its_own_titles():
    passages = titled(("A", "Toto", 0.9), ("B", "Jeff Porcaro", 0.85), ("C", "Steely Dan", 0.1))
    retriever = HybridRetriever(Fixed(passages), Fixed([]), depth=50, title_bonus=1.0)
    found = retriever.retrieve_many(["who founded Steely Dan?", "Jeff Porcaro's band", "toto"], 1)
    assert [[p.source for p in r] for r in found] == [["C"], ["B"], ["A"]]
    assert retriever.retrieve("Steely Dan", 1)[0].ranker == "dense"


def test_a_passage_whose_section_heading_the_search_names_rises():
    dense = titled(
        ("A", "Memcheck › 4.2. Use of uninitialised values", 0.9),
        ("B", "Quick Start › 3. Running your program under Memcheck", 0.5),
        ("C", "Quick Start › Usage", 0.45),
    )
    retriever = HybridRetriever(Fixed(dense), Fixed([]), depth=50, title_bonus=1.0)
    # every word of the heading in some form ("run", "running"), its number aside
    assert retriever.retrieve("How do I run my program under Memcheck?", 1)[0].source == "B"
    assert retriever.retrieve("How do I run Memcheck?", 1)[0].source == "A"  # "program" unsaid
    assert retriever.retrieve("What is the usage?", 1)[0].source == "A"  # one word names too much


def test_a_code_the_search_names_lifts_the_pages_titled_with_it():
    # 500 pages alike: the embedding ranks "an error code" pages, keyword search the one named
    dense = titled(("A", "E0138 - Error codes index", 0.73), ("B", "E0132 - Error codes index", 0.69))
    lexical = titled(("C", "E0382 - Error codes index", 8.2), ("D", "Error codes index", 6.8), ("A", "x", 1.0))
    found = fuse(dense, lexical, 2, dense_weight=0.7, named=_named("What does error E0382 mean?"))
    assert [p.source for p in found] == ["C", "A"]  # C 0.3 + 0.7; A 0.7
    # a code that titles three files names a topic ("p53" in papers' titles), not a page
    topic = titled(("A", "Aging", 0.9), ("B", "p53 in context", 0.8), ("C", "Roles of p53", 0.1), ("D", "p53", 0.0))
    assert fuse(topic, [], 1, dense_weight=0.7, named=_named("Does p53 act?"))[0].source == "A"
    assert fuse(topic[:3], [], 1, dense_weight=0.7, named=_named("Does p53 act?"))[0].source == "B"  # two files
    # a word with one digit or none is no code ("v2", "utf8"), nor a number alone, an
    # ordinal or a version
    for words in ("What changed in v2?", "Is utf8 the default?", "What happened in 0382?", "v20 in the 17th?"):
        plain = titled(("A", "v2 utf8 0382 notes", 0.9), ("B", "E0382 v2 utf8 v20 17th", 0.1))
        assert fuse(plain, [], 1, dense_weight=0.7, named=_named(words))[0].source == "A"


class Fixed:
    def __init__(self, ranking):
        self.ranking, self.asked = ranking, []

    def retrieve_many(self, queries, k):
        self.asked.append(k)
        return [self.ranking[:k] for _ in queries]


def test_every_search_reads_both_rankings_deeper_than_k():
    dense, lexical = Fixed(ranked(("A", 0.9), ("B", 0.8))), Fixed(ranked(("B", 2.0)))
    retriever = HybridRetriever(dense, lexical, depth=50)
    assert [p.source for p in retriever.retrieve("q", 1)] == ["A"]  # A 0.7, B 0.3
    assert [[p.source for p in r] for r in retriever.retrieve_many(["q1", "q2"], 100)] == [["A", "B"]] * 2
    assert dense.asked == lexical.asked == [50, 100]
    assert retriever.retrieve_many([], 5) == []


def test_the_iteration_pane_names_the_ranker():
    passage = ranked(("A", 0.9))[0]
    assert "found by" not in passage_label(1, passage).plain
    assert passage_label(1, fuse([passage], [passage], 1, dense_weight=0.7)[0]).plain.endswith("found by both")


# Codes an embedding sees as near neighbours; only the asked one's passage words it differently.
CODES = ["XQ-1447", "XQ-7441", "XQ-4147", "XQ-4714", "XQ-4741", "XQ-4417", "QX-4471"]
COLOURS = ["red", "green", "black", "white", "grey", "orange", "yellow"]
OTHER = [
    "Cheese is made from milk.",
    "The Eiffel Tower is in Paris.",
    "Mitochondria make energy for the cell.",
    "The river floods every spring.",
    "Chess openings: the Sicilian defence.",
]


@pytest.mark.slow
def test_a_code_only_keyword_search_matches_is_found_by_hybrid_not_by_dense(tmp_path):
    from iterretgen_tui.engine.embedding.embedder import SentenceEmbedder

    embedder = SentenceEmbedder(
        models.resolve_embedder(models.EMBEDDED_EMBEDDER), device="cpu", name="all-minilm-l6-v2"
    )
    corpus = [
        (code, "Spare parts", f"The gasket colour of part {code} is {colour}.") for code, colour in zip(CODES, COLOURS)
    ]
    corpus += [("XQ-4471", "Spare parts", "Part XQ-4471: the pump housing seal is supplied in blue.")]
    corpus += [(f"other{n}", text, text) for n, text in enumerate(OTHER)]
    index = PassageIndex.open(tmp_path / "index", embedder_identity=embedder.identity, dim=embedder.dim)
    sync_corpus(index, corpus, embedder)
    for question in ("Which gasket colour does part XQ-4471 come with?", "What colour is the gasket of XQ-4471?"):
        dense = build_retriever("dense", embedder, index).retrieve(question, 3)
        hybrid = build_retriever("hybrid", embedder, index).retrieve(question, 1)
        assert "XQ-4471" not in [p.source for p in dense]
        assert hybrid[0].source == "XQ-4471" and hybrid[0].ranker == "lexical"


def test_a_text_found_twice_is_returned_once_at_its_best_rank():
    def copy(name, source, score, text):
        return Passage(id=ord(name), text=text, title="", source=source, score=score)

    dense = [
        copy("A", "print", 0.9, "Optional  dependencies\nare off."),
        copy("B", "page", 0.85, "Optional dependencies are off."),
    ]
    dense += ranked(("C", 0.5), ("D", 0.1))
    found = fuse(dense, [], 2, dense_weight=0.7)
    assert [(p.source, p.ranker) for p in found] == [("print", "dense"), ("C", "dense")]  # whitespace aside
    chosen = fuse(dense, [], 3, dense_weight=0.7, choose=lambda copies: copies[-1])
    assert [p.source for p in chosen] == ["page", "C", "D"] and chosen[0].score == found[0].score


def test_of_copies_the_page_stands_for_the_book(tmp_path):
    from iterretgen_tui.engine.indexing.indexer import sync_folder

    from .fakes import HashEmbedder

    section = "## Optional dependencies\n\nA dependency marked optional is built only when a feature asks for it.\n"
    folder = tmp_path / "book"
    folder.mkdir()
    (folder / "features.md").write_text(f"# Features\n\n{section}", "utf-8")
    profiles = "".join(f"## Profile {n}\n\nProfile {n} sets optimisation level {n}.\n\n" for n in range(8))
    (folder / "print.md").write_text(f"# Book\n\n{profiles}{section}", "utf-8")  # over four times the page
    embedder = HashEmbedder()
    index = PassageIndex.open(tmp_path / "index", embedder_identity=embedder.identity, dim=embedder.dim)
    sync_folder(folder, index, embedder)
    found = build_retriever("hybrid", embedder, index).retrieve("When is an optional dependency built?", 5)
    texts = [" ".join(p.text.split()) for p in found]
    assert len(texts) == len(set(texts)) == 5  # one of them twice in the index
    copied = next(p for p in found if "built only when" in p.text)
    assert copied.source.endswith("features.md")


def test_of_copies_in_pages_alike_the_best_ranked_or_the_named_stands_for_them():
    class Records:
        def file_records(self, paths):
            sizes = {"book": 9000, "run": 1100, "build": 1200}
            return {path: FileRecord(path, sizes[path], 0, 0, "") for path in paths}

    retriever = HybridRetriever(Fixed([]), Fixed([]))
    retriever.index = Records()
    options = [
        Passage(id=n, text="-j N: jobs", title=f"{name} - The Book › Options", source=name.split()[-1])
        for n, name in enumerate(("book", "cargo build", "cargo run"))
    ]
    plain = _named("How many jobs?")
    assert retriever.page_copy(options, plain).source == "build"  # the book is a whole; the pages are alike
    assert retriever.page_copy(options[::2], plain).source == "run"
    # the page whose name the question says, though the other ranked first ("run" alone is no name)
    assert retriever.page_copy(options[::-1], _named("How many jobs does cargo build run?")).source == "build"
    # a part every page has ("The Book") tells none apart: the best ranked
    assert retriever.page_copy(options[::-1], _named("What does the book say?")).source == "run"
