"""The unit that is indexed, retrieved, shown as a source and given to the model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath


@dataclass(frozen=True)
class Passage:
    id: int
    text: str
    title: str
    source: str  # file path (or dataset document id) the passage came from
    location: str = ""  # "p. 3" for PDFs, "lines 10-24" for text; empty when unknown
    score: float = 0.0
    # Which ranker found it: "dense", "lexical" or "both" (engine/retrieval/hybrid.py);
    # "" where dense retrieval alone ran.
    ranker: str = ""

    def with_score(self, score: float) -> Passage:
        return replace(self, score=float(score))

    @property
    def searched_text(self) -> str:
        """The passage as a query or a teacher reads it: its title, then its text."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    @property
    def citation(self) -> str:
        """How a source is named to the user: path plus page or line range."""
        return f"{self.source} ({self.location})" if self.location else self.source

    @property
    def untitled(self) -> bool:
        """Titled by its file's name alone (a PDF without a title of its own): a source
        list says the file once."""
        return self.title == PurePath(self.source).name


@dataclass(frozen=True)
class Section:
    """Sources from one section of one file, each with its citation number: a source list
    names the section once ("[1] lines 125-143, [2] lines 138-144"), where eight passages
    of one long page each repeated its title and path."""

    title: str  # "" where the passages are titled by their file's name alone
    source: str
    numbered: tuple[tuple[int, Passage], ...]


def by_section(sources: Sequence[Passage]) -> list[Section]:
    """``sources`` numbered from [1] in their order, grouped by title and file, each group
    where its first passage is."""
    groups: dict[tuple[str, str], list[tuple[int, Passage]]] = {}
    for n, passage in enumerate(sources, 1):
        groups.setdefault((passage.title, passage.source), []).append((n, passage))
    return [
        Section("" if numbered[0][1].untitled else title, source, tuple(numbered))
        for (title, source), numbered in groups.items()
    ]
