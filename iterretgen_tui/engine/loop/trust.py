"""Whether an answer can be trusted as it stands, judged from the loop's own record: a
draft that looped and was cut inside a sentence, one that stated no answer, an answer
that shares no content word with any passage the model read or states a number none
holds, or one to a question about a name no passage read mentions. The chat then says
so and leads with the evidence."""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum

from .answers import (
    OPTION,
    TOKEN,
    answer_numbers,
    code_spans,
    content_words,
    keys,
    named,
    normalize_answer,
    numbers,
    only_restates,
    outside_code,
    uncited,
    unglued,
)
from .events import FinalAnswer
from .evidence import option_command
from .follow_up import finished
from .prompts import DEMO_SUBJECTS, reasoning
from .question_kind import FACTOID
from .sentences import SENTENCE_GAP

UNSAID = "Your documents don't seem to say"


class Weakness(str, Enum):
    LOOPED = "looped"
    NO_ANSWER = "no_answer"
    NOT_FOUND = "not_found"
    UNSUPPORTED = "unsupported"

    def message(self) -> str:
        return {
            Weakness.LOOPED: "The model started repeating itself, so its answer was cut short and may be incomplete.",
            Weakness.NO_ANSWER: "No answer found: the model did not state one.",
            Weakness.NOT_FOUND: f"{UNSAID}: the passages read do not state an answer to this question. "
            "The nearest evidence:",
            Weakness.UNSUPPORTED: "The model's answer is not supported by the passages it read "
            "(none of them states it).",
        }[self]


def supported(
    answer: str, passages_text: list[str], question: str | None = None, quoted: list[str] | None = None
) -> bool:
    """Some content word of the answer occurs in some passage, as written or with what
    glues its words read as spaces ("Ada" in "Ada,maintainer,2019"), or it has none to
    check. With the ``question`` (a factoid's), every number the answer states (its [n]
    citation marks aside) also occurs in the question or in a passage the evidence quotes
    (``quoted``; any passage where none is given): a small reader invents numbers (asked
    for a port no passage gives, the 1.5B answered 8080; asked for a person's phone
    number, it gave a server's port from another passage read, beside evidence on that
    person that holds no number). On hotpotqa-dev200 at the adaptive stop, 6 of the 30
    answers with a digit are marked, all 6 wrong; none of the 20 real-documents answers
    with a digit is (docs/answers.md). So does every key chord it names ("Ctrl+Q"): it
    took one from a table of shortcuts read beside the sentence that names the right key."""
    words = content_words(answer)
    if not words:
        return True
    read: set[str] = set()
    for text in passages_text:
        read |= set(normalize_answer(text).split()) | set(normalize_answer(unglued(text)).split())
    if question is None:
        return bool(words & read)
    backing = [*(passages_text if quoted is None else quoted), question]
    held = set().union(*map(numbers, backing))
    return bool(words & read) and answer_numbers(answer) <= held and not unheld_keys(uncited(answer), backing)


def unheld_keys(text: str, backing: list[str]) -> set[str]:
    """The key chords ``text`` names that no text of ``backing`` names."""
    return keys(text) - set().union(*map(keys, backing))


def weakness_message(final: FinalAnswer, weak: Weakness) -> str:
    """What the chat says of a weak answer: a decline on an option that no page of its
    command read defines names the two ("rsync -a" over pages without rsync's), where the
    general words left the user to guess why the documents would not say."""
    undefined = weak is Weakness.NOT_FOUND and final.evidence is not None and final.evidence.option_undefined
    named = option_command(final.standalone or final.question) if undefined else None
    if named is None:
        return weak.message()
    option, command = named
    return (
        f"{UNSAID} what {option} does for {command}: no passage read defines it on a page of {command}. "
        "The nearest evidence:"
    )


def weakness(final: FinalAnswer) -> Weakness | None:
    """Why the final answer is weak, the worst reason first; None when it is not, or
    when no draft was written at all (cancelled first: there is nothing to judge)."""
    if not final.iterations:
        return None
    last = final.iterations[-1]
    if not last.stated or not final.answer.strip():
        return Weakness.NO_ANSWER
    if final.unsaid or final.grounded is False:  # False: a verdict in history written before
        return Weakness.NOT_FOUND
    # Cut where it began to repeat a whole sentence, the draft is whole: all five drafts
    # the guard cut over the real documents' 71 questions and 22 follow-ups were, four
    # with the key fact in the answer (docs/answers.md).
    if last.looped and finished(last.draft) != last.draft.rstrip():
        return Weakness.LOOPED
    question = f"{final.question} {final.standalone}" if final.kind == FACTOID else None
    texts = read_texts(final)
    if (
        not supported(final.answer, texts, question, quoted_texts(final, texts))
        or unmentioned(final.searched, final.answer, texts)
        or unread_code(final.answer, [final.searched, *texts])
    ):
        return Weakness.UNSUPPORTED
    return None


# A literal in quotes, without spaces ('http3', "utf-8"): a value the answer says to pass.
_LITERAL = re.compile(r"""(?<![\w'"])(['"])([^\s'"]+)\1(?!\w)""")
_WORD = re.compile(r"[^\W_]+")


def unread_code(answer: str, texts: list[str]) -> set[str]:
    """The code the answer names that no text (the question, the passages read) holds: a
    command-line option not held as written ("--gc"), or a piece in backquotes or a
    literal in quotes none of whose words any text holds. Asked how to tune Rust's garbage
    collector, over the Rust book and Cargo's guide, the 1.5B answered "use the rustc
    command with the --gc option"; asked how to enable HTTP/3 over undici's docs, "the
    MockAgent.enableNetConnect method with the string 'http3'". A single dash counts only
    with a letter or two ("-f", "-rf"), not a word ("well-known" is no option); a piece
    with one word held is the passages' code written out (`path.basename('/a/b.html')`),
    and one of no words (`'.'`) has none to look for."""
    said = {option for option in OPTION.findall(answer) if option.startswith("--") or len(option) <= 3}
    held = set().union(*(OPTION.findall(text) for text in texts))
    words = set().union(*(_WORD.findall(text.lower()) for text in texts))
    literals = (literal for _, literal in _LITERAL.findall(outside_code(answer)))
    pieces = [*code_spans(answer), *literals]
    unread = {piece for piece in pieces if (own := set(_WORD.findall(piece.lower()))) and not own & words}
    return (said - held) | unread


def unmentioned(question: str, answer: str, passages_text: list[str]) -> list[str]:
    """The names the question asks about (its capitalised words past a sentence's first,
    its words joined by a hyphen: a tool's, a package's, and the names code gives, joined
    by dots or underscores: a module's member, a function's) that the answer states and no
    passage read mentions as a word, as written, with its dots left out ("US" in "U.S.")
    or its hyphens read as a space or nothing ("read only", "readonly"): asked which Rust
    compilers CMake supports, over CMake's docs that never say Rust, the 1.5B answered
    "Rust compiler versions 3.19 or later" from a sentence on version ranges; asked how
    to install plugins with vim-plug over Vim's manual, "with vim-plug by copying the
    plugin file to the right directory"; asked what path.copy() does over Node.js's path
    page, that it "is not a standard method"."""
    read = "\n".join(passages_text).lower()
    stated, texts = answer.lower(), (read, read.replace(".", ""))
    tokens = TOKEN.findall(question)
    joined = [token for token in tokens if _HYPHENATED.fullmatch(token)]
    coded = _CODE_NAME.findall(question)
    names = sorted({re.sub(r"'s$", "", name).lower() for name in [*named(tokens), *joined, *coded]})
    return [
        name
        for name in names
        if _says(stated, name) and not any(_says(text, form) for text in texts for form in _forms(name))
    ]


_HYPHENATED = re.compile(r"[^\W\d_]\w*(?:-\w+)+")  # "vim-plug", "x86_64-pc-solaris"; no date
# "fs.readFileSync", "worker_threads"; not "e.g." (a one-letter part) or a version.
_CODE_NAME = re.compile(r"(?<![\w.])[^\W\d_]\w*(?:\.[^\W\d_]\w+)+|(?<![\w.])[^\W\d_]\w*_\w+")


def _forms(name: str) -> set[str]:
    """A name as a passage may write it: as it is, or its hyphens a space or nothing."""
    return {name, name.replace("-", " "), name.replace("-", "")}


def read_texts(final: FinalAnswer) -> list[str]:
    """The passages the model read, each its title and text, as the checks read them."""
    return [f"{p.title} {p.text}" for p in final.sources]


def _says(text: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text) is not None


def quoted_texts(final: FinalAnswer, texts: list[str]) -> list[str] | None:
    """The texts of the passages the evidence quotes (``texts`` are the sources'), where
    it quotes any."""
    if final.evidence is None:
        return None
    return [texts[quote.n - 1] for quote in final.evidence.quotes if 0 < quote.n <= len(texts)] or None


def restates(final: FinalAnswer) -> bool:
    """The stated answer only repeats words of the question: no answer to show as a
    headline (answers.only_restates)."""
    return only_restates(final.answer, final.searched)


def declined(final: FinalAnswer) -> bool:
    """The reply says no answer was found, rather than giving one."""
    return weakness(final) in (Weakness.NO_ANSWER, Weakness.NOT_FOUND)


def asks_back(final: FinalAnswer) -> bool:
    """The reply is a question back to the user ("Which one do you mean: A or B?")."""
    return bool(final.asked_back) or (not declined(final) and final.answer.rstrip().endswith("?"))


def reply_text(final: FinalAnswer) -> str:
    """The reply the chat shows, as plain text: the answer and the reasoning under it; a
    decline's message and the evidence in its place; or the question asked back."""
    if final.asked_back:
        return final.asked_back
    if declined(final):
        quotes = final.evidence.texts if final.evidence else []
        return " ".join([weakness_message(final, weakness(final)), *quotes])
    return "\n".join(shown_reply(final)).strip()


def shown_reply(final: FinalAnswer) -> tuple[str, str]:
    """The answer the chat shows as its headline ("" for none: none stated, or one that
    only restates the question) and the draft under it ("" where the draft only says
    that answer again, in no word of its own: "Error E0382 means that a variable was
    used after ..." under "Error E0382 means a variable was used after ..."), without the
    sentences it borrowed from the demos (``unborrowed``), and a factoid's without those
    that name a key chord its answer could not (``supported``). A factoid's draft is shown
    without its closing "So the answer is X.": the headline says X, or X only restates
    the question ("What does E4 mean?" -> "E4"), where the draft's reasoning is the
    answer."""
    last = final.iterations[-1] if final.iterations else None
    answer = final.answer.strip() if last and last.stated and not restates(final) else ""
    body = final.draft.strip()
    if last and last.stated and final.kind == FACTOID:
        body = reasoning(body) or ("" if answer else body)
    texts = read_texts(final)
    body = unborrowed(body, [final.question, final.searched, *texts])
    if final.kind == FACTOID:  # its reasoning names no key its answer could not
        backing = [final.question, final.searched, *(quoted_texts(final, texts) or texts)]
        body = _without(body, lambda sentence: bool(unheld_keys(sentence, backing)))
    return answer, "" if answer and content_words(body) <= content_words(answer) else body


def unborrowed(draft: str, texts: list[str]) -> str:
    """``draft`` without its sentences that name what a demo is about where no text (the
    question, the passages read) does: the reader borrowed them from its examples."""
    borrowed = [
        subject for subject in DEMO_SUBJECTS if _says(draft, subject) and not any(_says(t, subject) for t in texts)
    ]
    if not borrowed:
        return draft
    return _without(draft, lambda sentence: any(_says(sentence, subject) for subject in borrowed))


def _without(draft: str, dropped: Callable[[str], bool]) -> str:
    """``draft`` less its sentences that are ``dropped``."""
    sentences = re.split(SENTENCE_GAP, draft)
    kept = [sentence for sentence in sentences if not dropped(sentence)]
    return draft if len(kept) == len(sentences) else " ".join(kept)
