"""A question back when the question points at one of several things the documents name.

"What services does this clinic provide?" asked with no clinic in the conversation has no
one answer when the passages found name the Causeway VA Clinic, the Maplewood VA Clinic
and the Minneapolis VA Clinic: a reader would pick one and answer as if it were meant.
The chat asks instead: "Which clinic do you mean: Causeway VA Clinic, Maplewood VA Clinic
or Minneapolis VA Clinic?" (MTRAG-UN's underspecified questions; docs/conversations.md
measures how often it asks, and how often it asks where it should not).

The rule reads no model: a demonstrative ("this", "that", "these", "those") points at
something, and so does "the" in a question that names nothing else; what it points at is
unresolved when the conversation never used that word; and it is ambiguous when the
passages of the first search name at least two different things of that kind (names
ending with the word: "... State Park" for "the park"; where none does, the parts of
the passages' titles that do: "Git v2.38.1 Release Notes" for "the release").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from ..indexing.chunking import document_of
from ..passages import Passage
from .answers import SENTENCE_STOPS, STOPWORDS, TOKEN, content_words, named
from .conversation import Asked, Turn, conversation_text, read_question
from .generator import Generator

DEMONSTRATIVES = frozenset({"this", "that", "these", "those"})
PHRASE_WORDS = 3  # words of a reference after its determiner: "that NASA mission"
SHOWN = 3  # candidates named in the question back
# Words before a name that are not part of it ("The Sierra County", "About NASA's Mission").
LEADS = frozenset({"The", "A", "An", "This", "That", "These", "Those", "Our", "Your", "Its", "Their", "About", "All"})


def references(question: str) -> list[list[str]]:
    """The phrases the question points at: the words after a demonstrative, then after a
    "the" that does not say itself which one, where the question names nothing; each up
    to a function word or punctuation."""
    tokens = TOKEN.findall(question)
    pointed = [phrase_after(tokens, i) for i in range(len(tokens)) if demonstrative(tokens, i)]
    if not names_something(tokens):
        pointed += [phrase for _, phrase in bare_the(tokens)]
    return [phrase for phrase in pointed if phrase]


def bare_the(tokens: Sequence[str]) -> list[tuple[int, list[str]]]:
    """Each "the" that does not say itself which one, at its index, with its phrase."""
    return [
        (i, phrase_after(tokens, i))
        for i, token in enumerate(tokens)
        if token.lower() == "the" and not restricted(tokens, i)
    ]


def demonstrative(tokens: Sequence[str], i: int) -> bool:
    """ "this", "these", "those", and "that" where it is no relative pronoun ("the
    river that flows", "true that prices rise"): first, or after a function word."""
    word = tokens[i].lower()
    if word != "that":
        return word in DEMONSTRATIVES
    return i == 0 or tokens[i - 1].lower() in STOPWORDS or tokens[i - 1] in SENTENCE_STOPS


def phrase_after(tokens: Sequence[str], i: int) -> list[str]:
    """Up to PHRASE_WORDS words after ``i``, to a function word, punctuation or a
    possessive, whose owner is what is pointed at ("the police department's program")."""
    phrase = []
    for word in tokens[i + 1 : i + 1 + PHRASE_WORDS]:
        if not word[0].isalpha() or word.lower() in STOPWORDS:
            break
        if word.lower().endswith("'s"):
            phrase.append(word[:-2])
            break
        phrase.append(word)
    return phrase


def kind_names(question: str) -> list[list[str]]:
    """A phrase of capitalised words after a "the" that does not say itself which one, in
    a question that names nothing else ("the Police Department's success"): a name, or
    only a kind where several things are named by it. A capitalised word before a lower
    case one ("the COVID-19 vaccines") is no such phrase: it says which."""
    tokens = TOKEN.findall(question)
    return [
        phrase
        for i, phrase in bare_the(tokens)
        if phrase
        and all(word[0].isupper() for word in phrase)
        and not names_something(tokens[: i + 1] + tokens[i + 1 + len(phrase) :])
    ]


# Words that make "the X" one thing by themselves ("the second city", "the most awards"),
# and the words after X that say which one ("the river that...", "the capital of...").
SELECTING = frozenset({"first", "second", "third", "fourth", "fifth", "last", "next", "same", "other", "only", "most"})
RESTRICTING = frozenset({"that", "which", "who", "whom", "whose", "where", "when", "of"})


def restricted(tokens: Sequence[str], i: int) -> bool:
    """The "the" at ``i`` says itself which one: a word of its phrase selects it, or a
    clause or an "of" follows the phrase. (A number ends a phrase: "the 1959 final"
    points at nothing.)"""
    phrase = phrase_after(tokens, i)
    if any(word.lower() in SELECTING for word in phrase):
        return True
    after = i + 1 + len(phrase)
    return after < len(tokens) and tokens[after].lower() in RESTRICTING


def names_something(tokens: Sequence[str]) -> bool:
    """The question names what it is about ("the band that Paul McCartney formed")."""
    return bool(named(tokens))


def holding(words: Sequence[str], passages: Sequence[Passage]) -> list[Passage]:
    """The passages that hold every one of ``words`` (or its singular or plural)."""
    own = [forms(word) for word in words]
    return [
        p for p in passages if all(said & set(re.findall(r"[a-z]+", f"{p.title} {p.text}".lower())) for said in own)
    ]


def forms(word: str) -> set[str]:
    """The word and its singular or plural, lower case: "parks" names a "park"."""
    word = word.lower()
    return {word, word[:-1] if word.endswith("s") else word + "s"}


def candidates(head: str, passages: Sequence[Passage], phrase: Sequence[str]) -> list[str]:
    """The names the passages give things of the kind ``head`` ("Sampson State Park" for
    "park"; a plural head also takes singular names), in the order they first appear,
    each at least one word more than the reference itself. A section's heading names
    what the section does, no thing of its kind (``titled``)."""
    heads = {head, head[:-1]} if head.lower().endswith("s") else {head}
    ends = "|".join(re.escape(form[0].upper() + form[1:]) for form in sorted(heads))
    # Capitalised words ending with the head, where the name ends (no capitalised word after).
    pattern = re.compile(rf"\b((?:[A-Z][\w'&-]*\.?[ ]+(?:(?:of|the|and|for)[ ]+)?){{1,4}})({ends})\b(?![ ]+[A-Z])")
    own = {word.lower() for word in phrase}
    found: dict[str, str] = {}
    for passage in passages:
        for match in pattern.finditer(f"{document_of(passage.title)}\n{passage.text}"):
            words = name_words(match.group(1).split())
            if not any(re.sub(r"'s$|\.$", "", word.lower()) not in own | STOPWORDS for word in words):
                continue  # only the reference's own words: "State Library" for "this state library"
            name = " ".join([*words, match.group(2)])
            found.setdefault(name.lower(), name)
    return list(found.values())


# What splits a document's title into parts: a page's name from its site's ("Small Claims |
# Superior Court of California", "Vectors - The Rust Programming Language").
_TITLE_PARTS = re.compile(r"\s+[|»–—-]\s+|:\s+")
# A word of a name, a version's dots inside it ("v2.38.1"), none at its end ("Notes.").
_NAME_WORD = re.compile(r"\w(?:[\w'&-]|\.(?=\w))*")


def titled(head: str, passages: Sequence[Passage], phrase: Sequence[str], question: str) -> list[str]:
    """The parts of the passages' titles that name a thing of the kind ``head`` (a
    capitalised head, followed by capitalised words only: "Git v2.38.1 Release Notes"
    for "the maintenance release"), in the order found, each at least one word more than
    the reference itself; none where the question holds one of them whole (it says
    which). Where a folder's documents are the things meant, their titles name them; a
    section's heading names what the section does ("Iterating Over the Values" named no
    value asked about in "How do I iterate over the values in a vector?")."""
    heads, own = forms(head), {word.lower() for word in phrase}
    asked = {word.lower() for word in _NAME_WORD.findall(question)}
    found: dict[str, str] = {}
    for passage in passages:
        for part in _TITLE_PARTS.split(document_of(passage.title)):
            words = _NAME_WORD.findall(part)
            at = [k for k, word in enumerate(words) if word.lower() in heads and word[0].isupper()]
            lower = {word.lower() for word in words}
            if at and all(word[0].isupper() for word in words[at[0] + 1 :]) and lower - own - heads - STOPWORDS:
                if lower <= asked:
                    return []
                found.setdefault(part.lower(), part.strip())
                break
    return list(found.values())


_RUN_TOGETHER = re.compile(r"[a-z][A-Z]|[A-Z](?=[A-Z][a-z])")  # "ProvidedSierra", "POSITIONThe"


def name_words(words: list[str]) -> list[str]:
    """The words of a name: without a leading article or function word, and starting
    after text run together by a page's markup ("Services ProvidedSierra" -> "Sierra",
    "POSITIONThe San Bruno" -> "San Bruno")."""
    for i in range(len(words) - 1, -1, -1):
        join = _RUN_TOGETHER.search(words[i])
        if join:
            words = [words[i][join.start() + 1 :], *words[i + 1 :]]
            break
    while words and (words[0] in LEADS or words[0].lower() in STOPWORDS):
        words = words[1:]
    return words


def ambiguity(asked: Asked, passages: Sequence[Passage]) -> str:
    """The question back to the user ("Which park do you mean: A, B or C?") when the
    question as read points at something the conversation never named and the passages
    name several such things; "" when it does not."""
    said = {form for word in re.findall(r"[A-Za-z]+", conversation_text(asked.turns, 10**6)) for form in forms(word)}
    for phrase in references(asked.searched):
        back = asked_about(phrase, passages, said, asked.searched)
        if back:
            return back
    tokens = TOKEN.findall(asked.searched)
    naming = named(tokens)
    if naming:
        # A question that names something may still not say which: "the police
        # department's Explorer program" where pages of two police departments tell of
        # their Explorer programs. Only the passages holding every word it names count,
        # and a name holding one of those words is the one meant ("the clinic in Maplewood").
        among = holding(naming, passages)
        for _, phrase in bare_the(tokens):
            back = (
                asked_about(phrase, among, said, asked.searched, naming)
                if phrase and not any(w[0].isupper() for w in phrase)
                else ""
            )
            if back:
                return back
    for phrase in kind_names(asked.searched):
        # A kind where two or more names end with it: "Auburn Police Department" and
        # "Morgan Hill Police Department" for "the Police Department".
        kind = " ".join(phrase)
        names = [name for name in candidates(phrase[-1], passages, phrase) if name.lower().endswith(f" {kind.lower()}")]
        if len(names) >= 2 and phrase[-1].lower() not in said:
            return which(kind, names[:SHOWN])
    return ""


def asked_about(
    phrase: Sequence[str], passages: Sequence[Passage], said: set[str], question: str, naming: Sequence[str] = ()
) -> str:
    """The question back about ``phrase`` where the passages name two or more things of
    its kind and the conversation never used its head; "" otherwise, or where a name
    holds one of the question's ``naming`` words. The head is the phrase's last noun:
    from the right, the first word the passages name things by ("library" in "this
    library provide"). Where two or more names end with the whole reference ("...
    Police Department" for "the police department"), only those are listed. Where no
    name in the text ends with the head, the passages' titles name the things
    (``titled``, against ``question``, the question as read)."""
    meant = {form for word in naming for form in forms(word)}
    for end in range(len(phrase), 0, -1):
        head = phrase[end - 1]
        names = candidates(head, passages, phrase) or titled(head, passages, phrase, question)
        if names:
            if any(meant & set(name.lower().split()) for name in names):
                return ""
            reference = " ".join(phrase[:end])
            whole = [name for name in names if name.lower().endswith(f" {reference.lower()}")]
            names = whole if len(whole) >= 2 else names
            return which(reference, names[:SHOWN]) if len(names) >= 2 and head.lower() not in said else ""
    return ""


def which(phrase: str, names: Sequence[str]) -> str:
    listed = f"{', '.join(names[:-1])} or {names[-1]}"
    return f"Which {phrase} do you mean: {listed}?"


_WHICH = re.compile(r"^Which (.+?) do you mean: (.+)\?$")


def chosen(question: str, turns: Sequence[Turn]) -> str:
    """The question asked back about, with the one the reply names in its place ("Long
    Point" after "Which park do you mean: ..., Long Point State Park or ...?" -> "Are dogs
    allowed in Long Point State Park?"), or, where the reply names none of those listed
    but says which in a few words of its own (``qualifier``: "the one on Seneca Lake",
    "the 2.37.5 one"), the reference with those words after it ("Are dogs allowed in the
    park on Seneca Lake?"): the list shows a few of the things found, and the reader,
    left to read such a reply, often keeps it as it is. "" where the turn before asked
    nothing back, or the reply names more than one listed, or neither way says which."""
    if not turns:
        return ""
    asked_back = _WHICH.match(turns[-1].answer)
    said = content_words(question)
    if not asked_back or not said:
        return ""
    phrase, listed = asked_back.groups()
    *rest, last = listed.rsplit(" or ", 1)
    names = [*(rest[0].split(", ") if rest else []), last]
    meant = [name for name in names if said <= unversioned(content_words(name))]
    pointer = re.compile(rf"\b(?:the|this|that|these|those)\s+{re.escape(phrase)}\b", re.IGNORECASE)
    if not pointer.search(turns[-1].question):
        return ""
    own = qualifier(question) if not meant else ""
    if len(meant) != 1 and not own:
        return ""
    return pointer.sub(meant[0] if meant else f"the {phrase} {own}", turns[-1].question, count=1)


_REPLY_LEADS = frozenset({"i", "mean", "meant", "no", "the", "this", "that", "one"})
_PREPOSITIONS = frozenset({"in", "on", "at", "near", "from", "for", "of", "by", "with", "about"})
QUALIFIER_WORDS = 4  # a reply that says which in more words is read by the reader


def qualifier(reply: str) -> str:
    """The words of a reply to a question back that say which thing is meant ("on Seneca
    Lake" in "The one on Seneca Lake", "2.37.5" in "the 2.37.5 one"), or "" where the
    reply does not read as one: a question, more than ``QUALIFIER_WORDS`` words, a word
    that is neither a preposition, a number nor a capitalised name, or no such name or
    number but its own first word ("Thanks", "Never mind": a capital that may only
    start the sentence)."""
    if reply.rstrip().endswith("?"):
        return ""
    words = [word for word in (part.strip(",") for part in reply.strip(" .!").split()) if word]
    start, end = 0, len(words)
    while start < end and words[start].lower() in _REPLY_LEADS:
        start += 1
    while end > start and words[end - 1].lower() in {"one", "please"}:
        end -= 1
    if start == end or end - start > QUALIFIER_WORDS:
        return ""
    kinds = [_qualifying(word) for word in words[start:end]]
    says = any(kind == "number" or (kind == "name" and start + k > 0) for k, kind in enumerate(kinds))
    if not (all(kinds) and says):
        return ""
    # "In Minneapolis" goes mid-sentence: "the clinic in Minneapolis"
    return " ".join(word.lower() if kind == "preposition" else word for word, kind in zip(words[start:end], kinds))


def _qualifying(word: str) -> str:
    if any(c.isdigit() for c in word):
        return "number"
    if word[0].isupper() and word.lower() not in STOPWORDS:
        return "name"
    return "preposition" if word.lower() in _PREPOSITIONS else ""


def unversioned(words: set[str]) -> set[str]:
    """``words`` and each version among them without its "v": "v2.37.5" is "2.37.5" to a
    user choosing among "Git v2.37.5 Release Notes" and others."""
    return words | {word[1:] for word in words if re.fullmatch(r"v\d+", word)}


def read_reply(question: str, turns: Sequence[Turn], generator: Generator, cancel: threading.Event) -> Asked:
    """The question read with its turns: the choice that answers a question back, put
    in its place without the reader; any other question as the reader rewrites it
    (conversation.read_question)."""
    choice = chosen(question, turns)
    return Asked(question, tuple(turns), choice) if choice else read_question(question, turns, generator, cancel)
