"""Answer normalisation and overlap (SQuAD's definitions), shared by the adaptive
stop, the evaluation metrics and the evidence so all judge "same answer" and "mentions
the answer" identically."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_YES_NO = re.compile(r"[\W_]*(yes|no)\b", re.IGNORECASE)
_PUNCT = str.maketrans("", "", string.punctuation)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CITATION = re.compile(r"\[\d+\]")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_POSSESSIVE = re.compile(r"['’]s\b")

# Words that carry no fact: an answer made only of them cannot be checked against passages.
STOPWORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been "
    "being it its this that these those there here he she they them his her their we you "
    "i me my our your not no yes do does did done so than then which who whom what when "
    "where why how can could would should will may might must also only just into about "
    "over under after before between each all any some such one".split()
)


# A command's option as a text names it ("-c", "--check", "--output=FILE"'s "--output").
# Normalised, it keeps its dashes, as words: read as punctuation, "-a" was the article and
# "--all" a stopword, so "-A" never converged with "-A" and no sentence mentioned it.
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
# ... and as a question or a search names one, a digit too ("tmux -2"): an answer's "-2"
# is more often a number, which normalising must leave as one.
NAMED_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z0-9][\w-]*")


OPTION_WORDS = ("option", "flag", "switch")  # what a text calls an option it names ("the -d flag")
OPTION_WORD = rf"(?:{'|'.join(OPTION_WORDS)})"  # ... as a pattern


def named_options(text: str) -> set[str]:
    """The command-line options ``text`` names, as written ("-S" is not "-s")."""
    return set(NAMED_OPTION.findall(text))


def normalize_answer(text: str) -> str:
    text = OPTION.sub(_dashes_as_words, text.lower()).translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _dashes_as_words(option: re.Match) -> str:
    name = option[0].lstrip("-")
    return "dash" * (len(option[0]) - len(name)) + name


# Characters that join words where the page wrote no space: markup ("{ref}`pip freeze`"
# read as "{ref}pip freeze"), a table's cells ("Ada,maintainer,2019") and dashes ("Faiss is
# MIT-licensed", which normalize_answer reads as "mitlicensed", states "MIT").
_GLUE = str.maketrans(dict.fromkeys("{}[]()<>`*|,;/-\u2013\u2014", " "))


def unglued(text: str) -> str:
    """The text with what glues its words read as spaces."""
    return text.translate(_GLUE)


# A function word written in capitals names something: CMake's ``@ONLY`` and ``ALL``, SQL's
# ``AS``, an IT department. "YES" and "NO" are still answers that name nothing.
_CAPITALS = re.compile(r"\b[A-Z]{2,}\b")


def content_words(text: str) -> set[str]:
    capitals = {word.lower() for word in _CAPITALS.findall(text)} - {"yes", "no"}
    return {w for w in normalize_answer(text).split() if w not in STOPWORDS or w in capitals}


# A word, with its apostrophes, ampersands and hyphens ("Macy's", "AT&T"), or a sign.
TOKEN = re.compile(r"\w[\w'&-]*|[^\w\s]")
SENTENCE_STOPS = frozenset(".?!")


def named(tokens: Sequence[str]) -> list[str]:
    """The capitalised words (of ``TOKEN``'s tokens) other than a sentence's first and "I"."""
    words, start = [], True
    for token in tokens:
        if token in SENTENCE_STOPS:
            start = True
            continue
        if token[0].isupper() and not start and token != "I":
            words.append(token)
        start = False
    return words


def only_restates(answer: str, question: str) -> bool:
    """The answer only repeats words of the question ("What is HAART therapy and how does
    it differ from AZT?" -> "HAART therapy"; "Which of the parser's options ...?" ->
    "the parser", its possessive's "s" aside). "Yes" and "no" have no content words and
    are answers."""
    words = content_words(answer)
    return bool(words) and words <= content_words(question) | content_words(_POSSESSIVE.sub("", question))


# What a word ends with in its other forms ("closes", "closed", "closing" of "close").
_SUFFIXES = ("ing", "es", "ed", "s", "e")
# Suffixes before which a final consonant doubles ("running", "stopped"), except these
# letters, which also end plain words ("falling", "passed", "added").
_DOUBLING = ("ing", "ed")
_KEPT_DOUBLE = "aeiouydlsz"


def stems(text: str) -> set[str]:
    """The content words with a plain suffix cut off: "closes" and "close" are one word,
    and so are "running" and "run" (a consonant doubled before the suffix is one)."""
    return {_stem(w) for w in content_words(text)}


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            cut = word[: -len(suffix)]
            return cut[:-1] if suffix in _DOUBLING and cut[-1] == cut[-2] and cut[-1] not in _KEPT_DOUBLE else cut
    return word


def mentions(text: str, answer: str) -> bool:
    """The normalised answer occurs in the normalised text as whole words (so "1" is not
    found inside "1505")."""
    answer = normalize_answer(answer)
    return bool(answer) and f" {answer} " in f" {normalize_answer(text)} "


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def numbers(text: str) -> set[str]:
    """The numbers a text states, each whole ("8080" in "localhost:8080", "3,000" as
    "3000", "1950" and "1951" in "1950-1951"). A dot stays: "3.1.0" is not "3.10", which
    normalize_answer reads alike."""
    return {number.replace(",", "") for number in _NUMBER.findall(text)}


_MODIFIER = r"(?:ctrl|control|alt|shift|cmd|meta|super)"
# After its modifiers, a key: a character, a function key or a named one ("Ctrl+Q",
# "Alt+F4", "Shift+Tab"), not a word ("Shift-click", "meta-data", "control-flow").
_KEY_NAME = r"(?:f\d{1,2}|tab|enter|return|esc|escape|space|backspace|delete|del|insert|home|end|pageup|pagedown|up|down|left|right|[a-z0-9])"
_KEY = re.compile(rf"\b{_MODIFIER}(?:\s*[+-]\s*{_MODIFIER})*\s*[+-]\s*(?:{_KEY_NAME}\b|[^\w\s])", re.IGNORECASE)


def keys(text: str) -> set[str]:
    """The key chords a text names, written alike ("Ctrl+Q", "CTRL-q" and "Control + Q"
    are "ctrl+q")."""
    return {re.sub(r"\s*[+-]\s*", "+", key.lower()).replace("control", "ctrl") for key in _KEY.findall(text)}


def answer_numbers(answer: str) -> set[str]:
    """The numbers an answer states, its citations ("[1]") aside."""
    return numbers(uncited(answer))


def code_spans(text: str) -> list[str]:
    """The pieces of code the text quotes in backquotes ("`cargo build`")."""
    return _CODE_SPAN.findall(text)


def outside_code(text: str) -> str:
    """The text with what it quotes in backquotes left out."""
    return _CODE_SPAN.sub(" ", text)


def uncited(answer: str) -> str:
    """The answer without its citation marks ("[1]")."""
    return _CITATION.sub(" ", answer)


def yes_or_no(reply: str) -> bool | None:
    """Strict: the reply must open with the word Yes or No (case and leading punctuation
    aside; small models go on with "No, the Prediction ..."). A verdict found anywhere
    else is none."""
    match = _YES_NO.match(reply)
    return match.group(1).lower() == "yes" if match else None
