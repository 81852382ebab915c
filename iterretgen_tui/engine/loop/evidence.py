"""Evidence: from the passages the model read, the two adjacent sentences that best
answer the question, scored by the embedder that already ranks the passages: the
sentence closest to the question, with whichever neighbour in its passage is closer
(the fact often sits next to the sentence that echoes the question; docs/answers.md).
When the model stated an answer that some sentences mention, the closest of those is
chosen: the evidence then shows where the answer comes from. A quote whose last sentence
ends in a colon also takes what the colon introduces (a command, a list). Beside it, one
more sentence: the one closest to the draft with the question, as Iter-RetGen's next
search is formed, where it is at least half as close as the first quote's sentence.
Where the draft named the bridge of a two-hop question ("the International Olympic
Committee" for the president of Avery Brundage's organisation),
that sentence is often the second hop ("President of the International Olympic Committee
... Thomas Bach"), which holds the answer (docs/answers.md).

Shown under every answer ("From your documents: ... [2]"), it is what the user can
trust whatever the model wrote: a retrieved sentence, quoted, with its source. A
passage is a window of words that starts and ends where its word count says; a sentence
it cuts at either edge is made whole from the passage before or after it in the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import PurePath
from typing import Protocol

import numpy as np

from ..indexing.chunking import SECTION, heading_of, spanning
from ..indexing.restructuredtext import indentation
from ..markdown_tables import cells, is_row, is_rule
from ..passages import Passage
from .answers import (
    NAMED_OPTION,
    OPTION_WORD,
    OPTION_WORDS,
    content_words,
    mentions,
    named_options,
    only_restates,
    stems,
    unglued,
)
from .prompts import reasoning
from .sentences import SENTENCE_GAP

MIN_WORDS = 3  # shorter pieces are headings or list stubs, not statements
MAX_WORDS = 60  # a run-on "sentence" (a table, a code block) is cut into windows this long
MAX_MENDED = 30  # words a cut sentence takes from the passage beside it, at most
# Content words of an answer that states something; the words of a shorter one ("it does
# not convert the string") are in many sentences that do not back it.
STATEMENT_WORDS = 3
# A second quote less than this share as close to the draft with the question as the first
# quote's sentence is off the subject: on a small folder the best of the rest was a recipe's
# step under a café's opening hours (docs/answers.md).
ALSO_SHARE = 0.5

# A sentence ends at a stop that whitespace follows ("config.toml" does not end one; see
# sentences.py for "St. Louis"), a blank line, or before a list item or heading; single
# line breaks are hard wraps (Markdown, plain text) inside a sentence. A list item starts
# with a bullet (a PDF's or a manual page's "•" too: run together, a PDF's list was one
# sentence) or a number.
_BLOCK_END = r"\n\s*\n|\n(?=[ \t]*(?:[-*+•>]|#{1,6}|\d+[.)])\s)"  # a paragraph's or list item's end
_SENTENCE_END = re.compile(rf"{_BLOCK_END}|{SENTENCE_GAP}")
# A code fence's line, with its language ("```js"): a code block's edge, where a sentence
# ends and what a cut sentence takes from beside it stops.
_FENCE = re.compile(r"^[ \t]*```")
# A Markdown heading names what follows; quoted, it was glued to the sentence after it
# ("## Windows vs. POSIX The default operation ..."), and alone it states nothing. In a
# code block, the same line is a comment ("# start the server"), which says what the code
# does: it stays.
_HEADING = re.compile(r"^[ \t]*#{1,6}\s")
# Quote marks and bullets are how a page is drawn, not words: a quote's ">" goes (where a
# quote starts or ends, so does its sentence), a bullet shows as "•".
_QUOTE_MARKS = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_BULLET = re.compile(r"^[-*+•][ \t]+")
DRAWN_BULLET = "• "
# Passages keep no blank lines, so a list item ran on into the paragraph after it
# ("* Returns: {string}" then "The `path.dirname()` method returns ..."): an item's line
# that a capitalised line follows ends its sentence (not one ending in a colon).
_ITEM = re.compile(r"^[ \t]*(?:[-*+•]|\d+[.)])[ \t]")
_CAPITALISED = re.compile(r"^[ \t]*[A-Z]")
# A command's option at a line's start ("-c, --check checks the syntax only", a manual
# page's tag "-i, --ignore-case:"). A PDF keeps an option list as such lines, and run
# together the 1.5B gave one option's meaning to the next.
_OPTION = re.compile(r"^[ \t]*--?[A-Za-z0-9][\w-]*(?:[=\[,:]|[ \t]|$)")
_ENDED = re.compile(r"""(?:[.!?]["')\]]*|:|\n\s*\n)\s*$""")  # text that ends where a sentence does
_WORD = re.compile(r"\S+")
_ASKS = re.compile(r"""\?["'”’)\]]*$""")  # a sentence that is a question

# The passages before and after a passage in its file (None where there is none).
Around = Callable[[int], tuple[Passage | None, Passage | None]]


class SentenceEmbedder(Protocol):
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_batch(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray: ...


@dataclass(frozen=True)
class Quote:
    text: str
    n: int  # the passage's citation number among the answer's sources, [n]
    passage_id: int
    source: str
    location: str = ""
    score: float = 0.0

    @property
    def citation(self) -> str:
        return f"{self.source} ({self.location})" if self.location else self.source


@dataclass(frozen=True)
class Evidence(Quote):
    also: Quote | None = None  # the sentence closest to the draft with the question
    # How near the passages read come to saying an answer: the best score of any of their
    # sentences against the question, or the question followed by its stated answer
    # (engine/loop/grounding.py declines under the embedder's bound).
    support: float = 0.0
    # The question asks what a command's option does and no passage read defines it (a
    # statement or a section heading) on a page that names the command (its title; a
    # PDF's text): its statements elsewhere (gzip's "-a --ascii" for "rsync -a") are
    # another command's, however near they score.
    option_undefined: bool = False

    @property
    def quotes(self) -> tuple[Quote, ...]:
        return (self, self.also) if self.also else (self,)

    @property
    def texts(self) -> list[str]:
        return [quote.text for quote in self.quotes]


def sentences(text: str) -> list[str]:
    """A passage's statements, in order: sentences, long ones cut into word windows. A
    piece too short to stand alone that follows a colon completes that sentence ("to run
    the file, enter: node hello-world.js")."""
    return [sentence for sentence, _ in statements(text)]


def statements(text: str) -> list[tuple[str, int | None]]:
    """``sentences``, each with the list item it belongs to (a number counted through the
    passage; None outside a list): "It costs 45 EUR a month." goes on the item "- We
    switch to FiberCo in April." it follows on that item's line. A table's row is an item
    of its own. A code block's lines stay lines (run together, a quoted block read "$ cargo
    build Compiling hello_cargo v0.1.0 ..."): only their words are scored and read. Items
    too short to stand alone all go on the sentence that introduces them ("... the parser
    can manage: • INTEGER; • BOOLEAN; • NULL;"): only the first did, the others were
    dropped."""
    found: list[tuple[str, int | None]] = []
    gathering = False  # the last statement takes the short items that follow it
    drawn, rows = _drawn(text)
    code = _code_lines(text)
    for block, part in enumerate(re.split(_BLOCK_END, drawn)):
        item = block if _ITEM.match(part) or _OPTION.match(part) or part.strip() in rows else None
        for sentence in re.split(SENTENCE_GAP, part):
            words = _words(sentence)
            short = 0 < len(words) < MIN_WORDS
            if short and found and (gathering or found[-1][0].endswith(":")):
                if len(found[-1][0].split()) + len(words) <= MAX_WORDS:
                    found[-1] = (f"{found[-1][0]} {' '.join(words)}", found[-1][1])
                    gathering = item is not None
                    continue
            gathering = False
            spans = [[start, min(start + MAX_WORDS, len(words))] for start in range(0, len(words), MAX_WORDS)]
            if len(spans) > 1 and spans[-1][1] - spans[-1][0] < MIN_WORDS:  # a run-on's last words ("with one.")
                tail = spans.pop()
                spans[-1][1] = tail[1]
            breaks = _code_breaks(sentence, len(words), code)
            found += [(_joined(words, a, b, breaks), item) for a, b in spans if b - a >= MIN_WORDS]
    return found


def _code_lines(text: str) -> set[str]:
    """The lines of the passage's code blocks, stripped. A passage cut inside a block has
    one fence unpaired: the last, where the first follows a line that introduces it
    ("... enter the following command:"), else not known (no lines then)."""
    lines = text.split("\n")
    fences = [k for k, line in enumerate(lines) if _FENCE.match(line)]
    if len(fences) % 2:
        if not (fences[0] and lines[fences[0] - 1].rstrip().endswith(":")):
            return set()
        fences.append(len(lines))
    return {lines[k].strip() for a, b in zip(fences[::2], fences[1::2]) for k in range(a + 1, b)} - {""}


def _code_breaks(sentence: str, count: int, code: set[str]) -> set[int]:
    """The indices of the sentence's ``count`` words (``_words``: a bullet is no word)
    that begin a code block's line after another of its lines."""
    breaks: set[int] = set()
    k, before = count - len(sentence.split()), False
    for line in sentence.split("\n"):
        own = len(line.split())
        if own:
            coded = line.strip() in code
            if coded and before and k > 0:
                breaks.add(k)
            before = coded
        k += own
    return breaks


def _joined(words: Sequence[str], start: int, end: int, breaks: set[int]) -> str:
    return "".join(("\n" if k in breaks else " ") * (k > start) + words[k] for k in range(start, end))


def _as_drawn(text: str) -> str:
    return _drawn(text)[0]


def _drawn(text: str) -> tuple[str, set[str]]:
    """The passage's lines with a blank one wherever a rendered page ends a paragraph:
    headings and code fences' lines, the edges of a quote (its marks gone), after a list
    item that a capitalised line follows, and around each row of a table; and its
    tables' rows as read."""
    lines: list[str] = []
    quoted = False
    drawn_rows, rows = _table_rows(_without_headings(text))
    for k, line in enumerate(drawn_rows):
        marks = _QUOTE_MARKS.match(line)
        if marks:
            line = line[marks.end() :]
        after = drawn_rows[k + 1] if k + 1 < len(drawn_rows) else ""
        if bool(marks) != quoted or (lines and (_item_ends(lines[-1], line) or _option_starts(lines[-1], line, after))):
            lines.append("")
        quoted = bool(marks)
        lines.append(line)
    return "\n".join(lines), rows


def _without_headings(text: str) -> list[str]:
    """The passage's lines, its headings and code fences' lines made blank (a code
    block's comments are kept)."""
    lines = text.split("\n")
    fenced = False
    for k, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            lines[k] = ""
        elif not fenced and _HEADING.match(line):
            lines[k] = ""
    return lines


def _table_rows(lines: list[str]) -> tuple[list[str], set[str]]:
    """A Markdown table's rows as statements of their own, each cell named by its column
    ("Package manager: pnpm; Binary names: `pnpm`, `pnpx`"): run together, a table was
    one run of cells, quoted in windows. The header and the rule under it go. Also the
    rows as read."""
    out: list[str] = []
    rows: set[str] = set()
    header: list[str] = []
    for k, line in enumerate(lines):
        if not is_row(line):
            header = []
            out.append(line)
            continue
        if is_rule(line):
            continue
        row = cells(line)
        if k + 1 < len(lines) and is_rule(lines[k + 1]):
            header = row
            continue
        named = [f"{name}: {cell}" if name else cell for name, cell in zip_longest(header, row, fillvalue="") if cell]
        out += ["", "; ".join(named), ""]
        rows.add(out[-2])
    return out, rows


def _item_ends(line: str, next_line: str) -> bool:
    """An item's line that a capitalised line follows, unless its colon introduces that
    line (a definition's term, "- nobody, nogroup:", then its description) or that line
    is indented under the item, which goes on there ('"Where is that file on' then
    '  Linux?"': an item wrapped at a capital, in a text that keeps its indentation; the
    indexer puts a wrapped item on one line of its passage, formats.py)."""
    return (
        bool(_ITEM.match(line) and _CAPITALISED.match(next_line))
        and not line.rstrip().endswith(":")
        and indentation(next_line) <= indentation(line)
    )


def _option_starts(before: str, line: str, after: str) -> bool:
    """``line`` opens an option's own statement: a manual page's tag (manpage.py ends it
    with a colon, its description under it), or an option after a sentence's end or beside
    another option's line, as a PDF lists them ("Usage: tool [OPTION] FILE" then "-c,
    --check checks the syntax only" then "-o, ..."). An option named inside a sentence
    ("... combined with the" then "-f") goes on in it."""
    if not _OPTION.match(line):
        return False
    return line.rstrip().endswith(":") or bool(_ENDED.search(before) or _OPTION.match(before) or _OPTION.match(after))


_LEADING_OPTIONS = 4  # words at a statement's start that may be its options ("-e PATTERNS, --regexp=PATTERNS:")
# What a statement that defines options gains over the best cosine: MiniLM scores "What
# does the -c option of asn1Parser do?" closer to the manual's opening than to "-c,
# --check checks the syntax only", and the reader answered from the opening.
DEFINES_BONUS = 1.0


def definitions_first(asked: str, sentences: Sequence[str], passages: Sequence[Passage]) -> np.ndarray:
    """What each sentence gains over its cosine with ``asked``: ``DEFINES_BONUS`` for an
    option's own statement ("-c, --check checks the syntax only", "• `-v`: ...") that
    starts with an option ``asked`` names, case kept ("-c" is not "-C"), or for any
    sentence of a section headed by it (``passages``: each sentence's own); else 0."""
    named = named_options(asked)
    return DEFINES_BONUS * np.array(
        [
            bool(named) and (_defines(sentence, named) or _heads(passage, named))
            for sentence, passage in zip(sentences, passages, strict=True)
        ]
    )


def defines_option(passage: Passage, options: Set[str]) -> bool:
    """The passage is a section headed by one of ``options`` (npm's docs: "#### `dry-run`"),
    or a statement of it is one's own statement."""
    return _heads(passage, options) or any(_defines(sentence, options) for sentence in sentences(passage.text))


_OPTION_WORD_STEMS = stems(" ".join(OPTION_WORDS))  # "the -d flag": no command's word
# A command said beside its option: a word just before it ("rsync -a", "asn1Decoding's
# -t"), or after the "of", "in" or "for" that follows it ("the -r option of cp").
_BEFORE_OPTION = re.compile(r"([^\W_][\w.-]*(?:'s)?)\s+$")
_AFTER_OPTION = re.compile(rf"\s+(?:{OPTION_WORD}\s+)?(?:of|in|for)\s+([^\W_][\w.-]*)")


def option_command(question: str) -> tuple[str, str] | None:
    """The question's first option and the command it says beside it (``_BEFORE_OPTION``):
    ("-a", "rsync"); None where it says none ("What does -p do when making directories?",
    mkdir's page named by no word of its title): no page can be told to be its command's."""
    option = NAMED_OPTION.search(question)
    if option is None:
        return None
    before = _BEFORE_OPTION.search(question[: option.start()])
    after = _AFTER_OPTION.match(question[option.end() :])
    for match in (before, after):
        if match and _word_stems(match.group(1)) - _OPTION_WORD_STEMS:
            return option.group().strip(), match.group(1).removesuffix("'s")
    return None


def _owner(passage: Passage) -> str:
    """What says whose page a passage is: its title, or its text too where the title is
    only its file's name (a PDF's passages: "Invoking asn1Parser" is in the text)."""
    untitled = passage.title == PurePath(passage.source).name
    return f"{passage.title} {passage.text}" if untitled else passage.title


def _heads(passage: Passage, options: Set[str]) -> bool:
    """The passage's section heading is one of ``options``, its dashes and code quotes
    optional ("`dry-run`" heads the section on --dry-run)."""
    heading = heading_of(passage.title).strip("` ").lstrip("-")
    return any(heading == option.lstrip("-") for option in options)


def _word_stems(text: str) -> set[str]:
    """``stems`` of the words between any signs: "TOUCH(1)" holds touch, "ssh-keygen" ssh."""
    return stems(re.sub(r"\W+", " ", text))


def _defines(sentence: str, options: Set[str]) -> bool:
    head = sentence.removeprefix(DRAWN_BULLET).replace("`", "").split()[:_LEADING_OPTIONS]
    # A tag ends at its colon: "--inspect-brk flag: Unlike --inspect, ..." defines one.
    tag = next((k + 1 for k, word in enumerate(head) if word.endswith(":")), len(head))
    return bool(head and _OPTION.match(head[0]) and options & named_options(" ".join(head[:tag])))


def _item_ended(ahead: str, text: str) -> bool:
    """``ahead`` ends with a list item's whole line, which ``text`` does not go on."""
    lines = ahead.rstrip(" \t").split("\n")
    return len(lines) > 1 and lines[-1] == "" and _item_ends(lines[-2], text)


def _words(sentence: str) -> list[str]:
    """A sentence's words, its bullet drawn as "•" and not counted as a word."""
    words = sentence.split()
    if _BULLET.match(sentence.lstrip()) and len(words) > 1:
        return [DRAWN_BULLET + words[1], *words[2:]]
    return words


def choose_evidence(
    question: str,
    passages: Sequence[Passage],
    embedder: SentenceEmbedder,
    answer: str = "",
    around: Around | None = None,
    draft: str = "",
    context: str = "",
) -> Evidence | None:
    """The sentence closest to the question, among those that mention ``answer`` when
    some do (where none does and the answer is a statement, the sentence closest to the
    question with it), with its closer neighbour; None when no passage has a sentence. An
    answer of no content words ("yes") is not looked for: its sentence is the one closest to
    the question with the draft's reasoning. With ``draft``, ``also`` quotes the
    sentence closest to it with the question that the first quote does not hold. With
    ``around``, a sentence cut by the passage's first or last word is completed from
    the passage beside it. Its ``support`` is the best any sentence scores against the
    question, or the question with ``answer`` (and with the draft's reasoning where the
    answer only restates the question), and so does ``context`` (the turn before and the
    question, where the question points back as typed: "Can I stop it there?" says
    little alone)."""
    stated = [statements(p.text) for p in passages]
    split = [[sentence for sentence, _ in own] for own in stated]
    candidates = [(n, i, s) for n, own in enumerate(split, 1) for i, s in enumerate(own)]
    if not candidates:
        return None
    with_answer = [f"{question} {answer}"] if content_words(answer) else []
    with_context = [context, *(f"{context} {answer}" for _ in with_answer)] if context else []
    if draft and only_restates(answer, question):
        # "What does E4 mean?" -> "E4" adds nothing to the question; the draft's
        # reasoning, which the chat shows in its place, is what is backed or not.
        with_answer.append(f"{question} {reasoning(draft)}")
    # A yes or a no rests on what the draft read: nearest the question alone, "Can an
    # implementation rely on it?" was quoted from a list of what the specification proposes.
    yes_or_no = bool(answer.strip()) and not content_words(answer)
    with_reasons = [f"{question} {reasoning(draft)}"] if yes_or_no and content_words(draft) else []
    with_draft = [f"{draft}\n{question}"] if content_words(draft) else []
    queries = embedder.embed_queries([question, *with_answer, *with_context, *with_reasons, *with_draft])
    vectors = embedder.embed_batch([under_heading(passages[n - 1], s) for n, _, s in candidates])
    supporting = 1 + len(with_answer) + len(with_context)
    sentence_texts = [s for *_, s in candidates]
    # An option the question names that a sentence read defines is said, however far
    # MiniLM scores "What does touch -a change?" from "-a: change only the access time",
    # where the passage's title names some other word of the question (its command: over
    # pages without rsync's, gzip's "-a --ascii" does not say what "rsync -a" does). A
    # passage titled by its file's name alone (a PDF manual's) names it in its text.
    others = _word_stems(NAMED_OPTION.sub(" ", question)) - _OPTION_WORD_STEMS
    titled = [not others or bool(others & _word_stems(_owner(p))) for p in passages]
    owners = [passages[n - 1] for n, _, _ in candidates]
    said = definitions_first(question, sentence_texts, owners) * np.array([titled[n - 1] for n, _, _ in candidates])
    support = float(((vectors @ queries[:supporting].T).max(axis=1) + said).max())
    option_undefined = option_command(question) is not None and not said.any()
    backing = backing_sentences(sentence_texts, answer) if with_answer else []
    if with_answer and not backing and not states(answer):
        # Where no sentence names the answer, its passage's title may ("tool 2.2
        # (2022-03-27)" over the release's changes, for when it came out): the sentences
        # under it back it.
        backing = backing_sentences([f"{passages[n - 1].title}: {s}" for n, _, s in candidates], answer)
    # A statement no sentence backs (an open question's summary, an answer in words of its
    # own) comes from the sentence nearest it with the question: nearest the question alone,
    # how the debugger's watchers work was quoted from the page's opening line.
    by_answer = 1 if with_answer and not backing and states(answer) else 0
    scores = vectors @ queries[supporting if with_reasons else by_answer]
    # The option the answer states is quoted where it is defined, as one the question names:
    # "Which column option creates a table?" -> "--table" was quoted from "--table-name".
    # Its definition backs the answer, whether or not it repeats it: "What does tail -f
    # do?" -> "tail -f" was quoted from less's page, which says "similar to tail -f".
    defining = definitions_first(f"{question} {answer}", sentence_texts, owners)
    scores = scores + defining
    backing = sorted({*backing, *np.flatnonzero(defining)}) if backing else backing
    best = max(backing or range(len(candidates)), key=lambda k: scores[k])
    n, i, _ = candidates[best]
    passage, own = passages[n - 1], split[n - 1]
    by_position = {(cn, ci): float(score) for (cn, ci, _), score in zip(candidates, scores)}
    # An item's sibling in a list is another statement, not context: "Anna cancels the
    # contract by 31 March." was quoted after the item before it, "It costs 45 EUR a month."
    # So is a table's row ("API: Punycode; Stability: (0) Deprecated" then Query string's).
    items = [item for _, item in stated[n - 1]]
    neighbours = [
        (by_position[(n, j)], j)
        for j in (i - 1, i + 1)
        if (n, j) in by_position and (None in (items[i], items[j]) or items[i] == items[j])
    ]
    j = max(neighbours)[1] if neighbours else i
    text, location = _quote(passage, own, min(i, j), max(i, j), around)
    also = None
    if with_draft:
        by_draft = vectors @ queries[-1]
        # Another row or item of the quoted one's file says another thing, as its neighbour
        # would (above): quoted only where it holds a word of the draft that the quote does
        # not ("Owner: Tomas" quoted, then the row of a branch he does not own).
        told = content_words(draft) - content_words(text)
        beside = set()
        if items[i] is not None:
            beside = {
                (cn, k)
                for cn, own_items in enumerate(stated, 1)
                if passages[cn - 1].source == passage.source
                for k, (sentence, item) in enumerate(own_items)
                if item is not None and not content_words(sentence) & told
            }
        floor = ALSO_SHARE * float(by_draft[best])
        also = _also(candidates, by_draft, floor, text, passages, split, around, beside)
    return Evidence(text, n, passage.id, passage.source, location, float(scores[best]), also, support, option_undefined)


def backing_sentences(sentences: Sequence[str], answer: str) -> list[int]:
    """The sentences that mention the answer; where none does and the answer is a
    statement (``STATEMENT_WORDS``), those that hold every content word of it in any
    order and form: a draft's sentence stated as the answer ("The command does nothing
    if the variable is already set") is seldom the page's own ("If <variable> is already
    set ..., then the command does nothing")."""
    said = [k for k, sentence in enumerate(sentences) if backs(sentence, answer)]
    if said or not states(answer):
        return said
    own = stems(answer)
    return [k for k, sentence in enumerate(sentences) if own <= stems(unglued(sentence))]


def states(answer: str) -> bool:
    """The answer states something (``STATEMENT_WORDS`` content words or more), not a
    phrase."""
    return len(stems(answer)) >= STATEMENT_WORDS


def backs(sentence: str, answer: str) -> bool:
    """The sentence mentions the answer, as written or with what glues its words read
    as spaces (``unglued``)."""
    return mentions(sentence, answer) or mentions(unglued(sentence), answer)


def _also(
    candidates: Sequence[tuple[int, int, str]],
    scores: np.ndarray,
    floor: float,
    quoted: str,
    passages: Sequence[Passage],
    split: Sequence[Sequence[str]],
    around: Around | None,
    beside: Set[tuple[int, int]] = frozenset(),
) -> Quote | None:
    """The best-scored sentence that ``quoted`` does not already say (a passage repeated
    in another file says it again), that is not ``beside`` it (passage number, sentence
    index), that asks nothing (an FAQ's question, nearest a draft that answers it, was
    quoted under the answer) and that says more than its passage's title (a contents
    page's "• The Valgrind Quick Start Guide: • 1."), with what it introduces if it ends
    in a colon, made whole where the passage's window cut it; None when it scores below
    ``floor``."""
    for k in np.argsort(-scores, kind="stable"):
        n, i, sentence = candidates[k]
        passage = passages[n - 1]
        if sentence in quoted or (n, i) in beside or _ASKS.search(sentence):
            continue
        if stems(sentence) <= stems(passage.title):
            continue
        if scores[k] < floor:
            return None
        text, location = _quote(passage, split[n - 1], i, i, around)
        return Quote(text, n, passage.id, passage.source, location, float(scores[k]))
    return None


def _quote(passage: Passage, own: Sequence[str], first: int, last: int, around: Around | None) -> tuple[str, str]:
    """Sentences ``first`` to ``last`` of the passage (``own``) as one quote and its
    location, made whole with ``around``."""
    if own[last].endswith(":") and last + 1 < len(own):
        last += 1  # "To open the data, run:" is not said until what it introduces is
    text = drawn_together(own[first : last + 1])
    if around is None:
        return text, passage.location
    return _made_whole(text, own[first], own[last], passage, around)


def drawn_together(pieces: Sequence[str]) -> str:
    """Consecutive sentences as one text, as the page draws them: a list item, and what
    follows a piece that ends no sentence (an item's line, a table's row), on a line of
    its own. Run on, "• Returns: {Timeout} a reference to `timeout`" read into "Sets the
    timer's start time ...", and a table's rows into one line of cells. A code block's
    lines start on a line of their own."""
    text = pieces[0]
    for before, piece in zip(pieces, pieces[1:]):
        apart = not _ENDED.search(before) or piece.startswith(DRAWN_BULLET) or "\n" in piece
        text += ("\n" if apart else " ") + piece
    return text


def under_heading(passage: Passage, sentence: str) -> str:
    """The sentence as scored: after the heading of the section it sits in, which says
    what "The method returns ..." is about. A document's own title is not added: on
    Wikipedia paragraphs, whose titles name the entity, the evidence then held the answer
    less often (docs/answers.md)."""
    _, in_section, heading = passage.title.rpartition(SECTION)
    return f"{heading}: {sentence}" if in_section else sentence


def _made_whole(text: str, first: str, last: str, passage: Passage, around: Around) -> tuple[str, str]:
    """``text`` (sentences ``first`` to ``last`` of the passage) with the words it lacks
    where the passage's window cut its first or last sentence, and the location that
    covers them."""
    words = passage.text.split()
    # Compared as the passage has them: a bullet there is "*", "-" or "+", not "•".
    opening, closing = first.removeprefix(DRAWN_BULLET).split(), last.removeprefix(DRAWN_BULLET).split()
    at_start = words[: len(opening)] == opening
    at_end = words[len(words) - len(closing) :] == closing
    if not (at_start or at_end):
        return text, passage.location
    before, after = around(passage.id)
    start = _cut_start(before.text, passage.text) if at_start and before else ""
    end = _cut_end(passage.text, after.text) if at_end and after else ""
    location = passage.location
    if start:
        location = spanning(before.location, location)
    if end:
        location = spanning(location, after.location)
    return " ".join(part for part in (start, text, end) if part), location


def _cut_start(before: str, text: str) -> str:
    """The words of the sentence that ``text`` begins inside, from ``before``, the passage
    ahead of it (whose last words ``text`` repeats); "" when ``text`` begins a sentence."""
    before_words = before.split()
    shared = _overlap(before_words, text.split())
    if not shared:
        return ""  # not the same run of words: a new page or section starts here
    starts = [m.start() for m in _WORD.finditer(before)]
    ahead = before[: starts[len(before_words) - shared]]
    if not ahead.strip() or _ENDED.search(ahead) or _item_ended(ahead, text):
        return ""
    piece = _words(_SENTENCE_END.split(_as_drawn(ahead))[-1])
    return " ".join(piece) if len(piece) <= MAX_MENDED else "… " + " ".join(piece[-MAX_MENDED:])


def _cut_end(text: str, after: str) -> str:
    """The rest of the sentence that ``text`` ends inside, from ``after``, the passage that
    follows it; "" when ``text`` ends a sentence."""
    after_words = after.split()
    shared = _overlap(text.split(), after_words)
    if not shared or _ENDED.search(text):
        return ""
    ends = [m.end() for m in _WORD.finditer(after)]
    # Read from where the cut sentence starts in ``text``, so a list item's line ends it
    # here as it would anywhere (_as_drawn); the words up to the cut are ``text``'s own.
    begun = _SENTENCE_END.split(text)[-1]
    drawn = _SENTENCE_END.split(_as_drawn(begun + after[ends[shared - 1] :]))[0]
    piece = drawn.split()[len(_as_drawn(begun).split()) :]
    return " ".join(piece) if len(piece) <= MAX_MENDED else " ".join(piece[:MAX_MENDED]) + " …"


def _overlap(first: list[str], second: list[str]) -> int:
    """How many words ``first`` ends with that ``second`` starts with (the chunker's
    overlap); 0 below three, which two passages of different sections may share by chance."""
    for k in range(min(len(first), len(second)), 2, -1):
        if first[-k:] == second[:k]:
            return k
    return 0
