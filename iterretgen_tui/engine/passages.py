"""The unit that is indexed, retrieved, shown as a source and given to the model."""

from __future__ import annotations

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
