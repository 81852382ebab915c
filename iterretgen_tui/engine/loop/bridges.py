"""An answer that resolves only the inner part of a two-hop question. Asked "Who married
the publisher of The North Star?", the reader writes "The publisher of The North Star was
Frederick Douglass. ... So the answer is Frederick Douglass.": it answered the bridge,
the inner question, and stopped. The rest of the question, with the bridge filled in
("Who married Frederick Douglass?"), is then asked afresh over the same passages, and
its answer is the answer (docs/evaluation.md, "Bridge answers").

The draft says which part the answer resolves: a sentence "X is ANSWER" (or was, are,
were) whose X is a phrase of the question that comes after the words asking what is
wanted of it ("married", "the employer of"), or after a question word that asks
something of it ("Where was X born?"). An X that opens the question otherwise ("Who was
X?", "Lorenzo Monaco was influenced by which painter?") is what the question asks about.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .answers import STOPWORDS, content_words, mentions, normalize_answer
from .choices import named_options
from .prompts import stated_answer
from .question_kind import FACTOID
from .sentences import SENTENCE_GAP

# A fresh draft over the same passages for another question of a kind (the factoid or
# the open prompt's; the text, its answer unread).
Redraft = Callable[[str, str], str]

_SENTENCE = re.compile(SENTENCE_GAP)
_WORD = re.compile(r"[^\W_][\w'’.-]*")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_LEADING_ARTICLES = frozenset({"the", "a", "an"})
# Question words that ask something of the phrase after them ("Where was the builder of
# the Eiffel Tower born?"); "Who is the builder ...?" asks for the phrase itself.
_ASKS_OF = frozenset({"where", "when", "why", "how"})
_SKIPPED = 1  # words of the question's phrase the draft may leave out
# "How much" and "how many" ask for an amount, as "how" alone asks for a way: they say
# nothing of the phrase after them ("How much does it cost to store a gigabyte?" is not
# "How much does it $0.02?" for a draft "The cost to store a gigabyte is $0.02.").
_AMOUNTS = frozenset({"much", "many"})
# A phrase the draft cut short of the question's: a clause goes on after it ("the film
# that has a score composed by ...").
_CLAUSE = frozenset({"that", "who", "whom", "whose", "which", "where", "when"})
# A preposition the phrase ends on in the question ("the person X was named after").
_TRAILING = frozenset({"after", "by", "for", "from", "in", "into", "of", "on", "to", "with"})


def answer_the_rest(question: str, draft: str, answer: str, redraft: Redraft) -> tuple[str, str]:
    """(the answer, the rest of the question that gave it): ``(answer, "")`` when it is
    no bridge, or when the new draft states nothing or the bridge again."""
    rest = rest_of_question(question, draft, answer)
    if rest is None:
        return answer, ""
    again = stated_answer(redraft(rest, FACTOID))
    if not content_words(again) or mentions(again, answer) or mentions(answer, again):
        return answer, ""
    return again, rest


def rest_of_question(question: str, draft: str, answer: str) -> str | None:
    """The question with the phrase ``answer`` stands for replaced by it, when the draft
    says the answer is an inner part of the question; None otherwise. Questions that name
    two options are left to choices.py."""
    if not content_words(answer) or named_options(question) is not None:
        return None
    bare = re.escape(_ARTICLE.sub("", answer.strip()))
    identity = re.compile(rf"^(?P<x>.+?)\s+(?:is|was|are|were)\s+(?:the\s+)?{bare}\b", re.IGNORECASE)
    for sentence in _SENTENCE.split(draft):
        found = identity.match(sentence.strip())
        if found is None:
            continue
        span = _inner_span(question, found["x"])
        if span is not None:
            start, end = span
            return f"{question[:start]}{answer.strip()}{question[end:]}"
    return None


def _inner_span(question: str, phrase: str) -> tuple[int, int] | None:
    """Where ``phrase`` sits in the question, its leading article included, when content
    words of the question come before it and no clause goes on after it. The draft may
    drop a word of the question's phrase ("the director of The White Countess" for "the
    director of film The White Countess"): its two content words or more are found in
    order, with at most ``_SKIPPED`` of the question's between them."""
    wanted = [n for *_, n in _words(phrase) if _is_content(n)]
    if len(wanted) < 2:
        return None
    words = _words(question)
    content = [
        k
        for k, (*_, word, n) in enumerate(words)
        if _is_content(n) and not (word in _AMOUNTS and k and words[k - 1][2] == "how")
    ]
    normal = [words[k][3] for k in content]
    for at in range(len(content)):
        ends = _in_order(normal, at, wanted)
        if ends is None:
            continue
        first, last = content[at], content[ends]
        after = [w for _, _, w, _ in words[last + 1 :]]
        # A phrase that opens the question is what it asks about, unless a question word
        # asks something of it that the words after it say ("... born?").
        says = any(_is_content(n) for *_, n in words[last + 1 :])
        if at == 0 and not (words[0][2] in _ASKS_OF and says):
            return None
        if after[:1] and after[0] in _CLAUSE:
            return None
        if len(after) == 1 and after[0] in _TRAILING:
            last += 1  # "... named after?": the preposition belongs to the phrase
        while first > 0 and words[first - 1][2] in _LEADING_ARTICLES:
            first -= 1
        start, end = words[first][0], words[last][1]
        if question.count("(", start, end) > question.count(")", start, end):
            end = question.find(")", end) + 1 or end  # "The Zone (2017 Film)": its bracket closes
        return start, end
    return None


def _in_order(normal: list[str], at: int, wanted: list[str]) -> int | None:
    """The index in ``normal`` of ``wanted``'s last word, when ``wanted`` starts at ``at``
    and its words follow in order with at most ``_SKIPPED`` others among them."""
    if normal[at] != wanted[0]:
        return None
    k, skipped = at, 0
    for word in wanted[1:]:
        k += 1
        while k < len(normal) and normal[k] != word and skipped < _SKIPPED:
            k, skipped = k + 1, skipped + 1
        if k >= len(normal) or normal[k] != word:
            return None
    return k


def _words(text: str) -> list[tuple[int, int, str, str]]:
    """Each word's start, end, lower case and normalised form (metrics.py's, "" for an article)."""
    return [(m.start(), m.end(), m.group().lower(), normalize_answer(m.group())) for m in _WORD.finditer(text)]


def _is_content(normal: str) -> bool:
    return bool(normal) and normal not in STOPWORDS
