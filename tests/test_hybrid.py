"""Hybrid retrieval: the fused order, which ranker found each passage, and a keyword-only
match the embedding misses."""

from __future__ import annotations

import pytest

from iterretgen_tui import models
from iterretgen_tui.engine.indexing.index import PassageIndex
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


def test_an_option_the_search_names_lifts_its_definition_on_the_page_ranked_first():
    def page(name: str, source: str, text: str, score: float) -> Passage:
        return Passage(id=ord(name), text=text, title=source.upper(), source=source, score=score)

    sort = "Sorting options:\n-t: sort by time, newest first.\n-r: reverse the order while sorting."
    dense = [
        page("A", "ls.1", "ls lists the files of a directory, sorted by name.", 0.9),
        page("B", "ls.1", sort, 0.8),
        page("C", "ls.1", "-a: do not ignore entries starting with a dot.", 0.7),
        page("D", "ssh.1", "-S ctl_path: the location of a control socket.", 0.6),
        page("E", "ls.1", "-S: sort by file size, largest first.", 0.5),
        page("F", "ls.1", "The -S option and the -t option both sort.", 0.4),
    ]
    asked = "What does ls -S do?"
    found = fuse(dense, [], 3, dense_weight=0.7, options={"-S"}, named=_named(asked))
    # E defines -S on the page of the first passage: it rises; ssh's -S (another page) and
    # a sentence that names -S without defining it do not
    assert [p.source + p.text[:2] for p in found] == ["ls.1-S", "ls.1ls", "ls.1So"]
    assert [p.id for p in fuse(dense, [], 3, dense_weight=0.7, options={"-s"})] == [ord("A"), ord("B"), ord("C")]
    assert [p.id for p in fuse(dense, [], 3, dense_weight=0.7)] == [ord("A"), ord("B"), ord("C")]
    # the retriever reads the options from each search, a digit option too ("tmux -2")
    digit = [dense[0], page("G", "ls.1", "-2: assume the terminal supports 256 colours.", 0.8), dense[2]]
    hybrid = HybridRetriever(Fixed(digit), Fixed([]), depth=4)
    assert hybrid.retrieve("What is ls -2 for?", 1)[0].id == ord("G")
    assert hybrid.retrieve("What is ls 2 for?", 1)[0].id == ord("A")
    # a section headed by the option defines it too (npm's docs: "#### `dry-run`")
    headed = [
        Passage(1, "npm publish publishes a package.", "npm-publish", "npm-publish.md", score=0.9),
        Passage(2, "Default: false. Type: Boolean.", "npm-publish › `dry-run`", "npm-publish.md", score=0.5),
        Passage(3, "npm pack makes a tarball.", "npm-pack", "npm-pack.md", score=0.4),
    ]
    asked = "What does npm publish --dry-run do?"
    assert fuse(headed, [], 1, dense_weight=0.7, options={"--dry-run"}, named=_named(asked))[0].id == 2


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
