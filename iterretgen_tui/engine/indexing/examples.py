"""Example questions for a folder, drawn from its own headings (the passages' titles).

The sections with the most passages are what a folder is most about; one question per
file, so the examples show the breadth of the folder rather than one long document.
A title is "Document › Heading" (chunking.py) or the document's title alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from .chunking import SECTION, document_of, heading_of

WH_WORDS = {"how", "what", "why", "when", "where", "which", "who"}
AUXILIARIES = {"do", "does", "did", "is", "are", "was", "were", "can", "could", "should", "will", "would", "to"}
MAX_WORDS = 8  # longer headings read as sentences, not topics
MAX_NAME_WORDS = 4  # a document title longer than this is a sentence, not a name to ask about
# A heading as many documents as this share is their template's ("Flags", "Synopsis", "See Also"
# on every page of npm's or CMake's command docs), not what one of them is about.
TEMPLATE_DOCUMENTS = 2
# A section's number is no part of its topic ("Chapter 2. Users and Groups", "3.1 Setup").
NUMBERING = re.compile(
    r"^(?:(?:chapter|section|part|appendix)\s+[\dIVXLC]+[.:)]?|\d+(?:\.\d+)*[.)]|\d+(?:\.\d+)+)\s+", re.I
)
# A first heading that names a part of any document, not this one ("Introduction" then
# "Usage" asked "What does Introduction say about usage?").
GENERIC_NAMES = {
    "introduction",
    "overview",
    "contents",
    "table of contents",
    "summary",
    "abstract",
    "preface",
    "readme",
}


def question_for(title: str) -> str:
    """A question a heading invites: itself when it is one ("How do I …", "Why is …"),
    else one about the topic it names ("What you see" names a topic, not a question)."""
    document = title.rpartition(SECTION)[0]
    heading = _unshouted(_own_heading(title).rstrip(":."))
    if heading.endswith("?"):
        return heading
    words = heading.lower().split()
    if (words[0] in WH_WORDS and len(words) > 1 and words[1] in AUXILIARIES) or words[0] in AUXILIARIES - {"to"}:
        return f"{heading}?"
    topic = _in_sentence(heading) if _proper(heading) or _title_case(heading) else heading[0].lower() + heading[1:]
    name = _unshouted(NUMBERING.sub("", document_of(document)))
    if name and len(name.split()) <= MAX_NAME_WORDS and "?" not in name and name.lower() not in GENERIC_NAMES:
        return f"What does {_in_sentence(name)} say about {topic}?"
    return f"What do the documents say about {topic if document else heading}?"


def example_questions(headings: Sequence[tuple[str, str, int]], n: int = 3) -> list[str]:
    """Up to ``n`` questions from (title, source, passages) rows, most passages first: one
    a file, one a subfolder before a second from any, and none that only another's
    numbers or codes tell apart (a folder of release notes asked three times about "Fixes
    since v2.35", "v2.34" and "v2.36"; Rust's error index about "E0382", "E0277" and
    "E0106"), nor about a heading of the documents' template."""
    questions: list[str] = []
    files: set[str] = set()
    shapes: set[str] = set()
    # A section beats any document's bare title: a long file without headings is a
    # changelog or a dump ("NEWS", "Older NEWS" over Valgrind's manual), and a short one a
    # lone "# Title" line.
    template = _template(headings)
    ranked = [
        row
        for row in sorted(headings, key=lambda row: (SECTION not in row[0], -row[2]))
        if _topic(*row[:2]) and _own_heading(row[0]).lower() not in template
    ]
    for once_a_folder in (True, False):
        folders: set[Path] = set()
        for title, source, _count in ranked:
            question, folder = question_for(title), Path(source).parent
            shape = _shape(question)
            if source in files or shape in shapes or (once_a_folder and folder in folders):
                continue
            questions.append(question)
            files.add(source)
            shapes.add(shape)
            folders.add(folder)
            if len(questions) == n:
                return questions
    return questions


def _own_heading(title: str) -> str:
    """A section's own heading, without its number: "Guide › 3.1 Setup" -> "Setup"."""
    return NUMBERING.sub("", heading_of(title))


def _template(headings: Sequence[tuple[str, str, int]]) -> set[str]:
    """The section headings that ``TEMPLATE_DOCUMENTS`` or more documents share; a file's copy
    (the same document title) is the same document."""
    documents: dict[str, set[str]] = {}
    for title, _source, _count in headings:
        if SECTION in title:
            documents.setdefault(_own_heading(title).lower(), set()).add(document_of(title))
    return {leaf for leaf, names in documents.items() if len(names) >= TEMPLATE_DOCUMENTS}


def _shape(question: str) -> str:
    """The question without its numbers, versions and codes ("v2.35", "E0382")."""
    return re.sub(r"\b[^\W\d]*\d[\w.]*", "#", question.lower())


def _topic(title: str, source: str) -> bool:
    """A heading worth asking about: a few words, not the file's name, which the indexer
    falls back to and a PDF's title often is ("invoice-scan" for invoice-scan.pdf)."""
    heading = heading_of(title)
    words = _own_heading(title).split()
    return (
        bool(words)
        and len(words) <= MAX_WORDS
        and heading not in (Path(source).name, Path(source).stem)
        and re.search(r"[A-Za-z]{3}", heading) is not None
    )


def _proper(text: str) -> bool:
    """Starts with an acronym or a name with inner capitals (keep its case): "GPU setup", "FAISS", "iOS"."""
    first = text.split()[0]
    return any(c.isupper() for c in first[1:]) or any(c.isdigit() for c in first)


def _title_case(text: str) -> bool:
    """A later word is capitalised too ("Users and Groups"): lowering only the first
    letter would read "users and Groups"."""
    return any(word[:1].isupper() for word in text.split()[1:])


# Short words that, in capitals inside a title, are its joining words, not acronyms.
_JOINING = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "with"}


def _unshouted(text: str) -> str:
    """A title in capitals as a title ("TRIGGERS" -> "Triggers", a plain-text
    specification's; "WINDOWS AND PANES" -> "Windows and Panes", a manual page's): its
    words of five letters or more capitalised, its joining words after the first in lower
    case, other short ones, which may be acronyms ("DPKG", "API"), left as they are."""
    if not text.isupper():
        return text
    words = text.split()
    return " ".join(
        word.capitalize()
        if sum(ch.isalpha() for ch in word) > 4
        else word.lower()
        if k and word.lower() in _JOINING
        else word
        for k, word in enumerate(words)
    )


def _in_sentence(name: str) -> str:
    """A title read inside a question: its leading article in lower case when a common
    word follows ("The chat window" -> "the chat window"; "The Hobbit" keeps its case)."""
    first, _, rest = name.partition(" ")
    if first in ("The", "A", "An") and rest[:1].islower():
        return f"{first.lower()} {rest}"
    return name
