"""What one iteration's streamed draft amounts to: the draft without its
repetition, the answer it states (asked for when it states none; the option it stands
for where the question names two; the rest of a two-hop question asked where the draft
answered its inner part; the question asked again without the turns where the draft
copied the last turn's answer), and the evidence sentence from the passages it was
written from. The loop records these in its trace."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .answers import content_words, uncited
from .bridges import Redraft, answer_the_rest
from .choices import option_answered
from .events import IterationTrace
from .evidence import Around, SentenceEmbedder, choose_evidence
from .follow_up import ask_for_answer, demo_and_turn_words
from .generator import Generator, Message
from .prompts import Prompt, extract_answer, stated_answer
from .question_kind import FACTOID, yes_no_answer
from .repetition import LoopGuard

# A demo written out: at least this share of the draft's content words are the demos',
# and at most READ_SHARE this turn's (a draft of the question reuses its passages' words).
DEMO_SHARE = 0.8
READ_SHARE = 0.2
DEMO_WORDS = 5  # a shorter draft ("Yes, it can. So the answer is yes.") shares only the demos' frame


def draft_outcome(
    question: str,
    kind: str,
    guard: LoopGuard,
    prompt: Prompt,
    generator: Generator,
    embedder: SentenceEmbedder | None,
    cancel: threading.Event,
    redraft: Redraft,
    around: Around | None = None,
    said: str = "",
    context: str = "",
) -> dict:
    """IterationTrace's draft, answer, looped, stated, asked, asked_rest and evidence fields.
    ``said``: the answer of the turn before, where the prompt showed the turns; ``context``:
    the turn before with the question, where it points back as typed (the evidence's support)."""
    draft = guard.kept.strip()
    if said and kind == FACTOID and writes_out_a_demo(draft, prompt.messages) and not cancel.is_set():
        # Shown the turns, the 1.5B once wrote out a demo word for word ("And on Posix?",
        # read as "Where is npm's cache directory on Posix by default?" -> "On the Origin
        # of Species was written by Charles Darwin. ... So the answer is 1505."); the same
        # question without them drafted "... is `~/.npm`".
        draft = redraft(question, FACTOID) or draft
    answer = stated_answer(draft, kind)
    asked = not answer and kind == FACTOID and not cancel.is_set()
    if asked:
        answer = ask_for_answer(generator, prompt.messages, draft, cancel)
    rest = ""
    if kind == FACTOID:
        answer = yes_no_answer(question, option_answered(question, draft, answer))
        if not cancel.is_set():
            answer, rest = answer_the_rest(question, draft, answer, redraft)
    if copies(answer, said) and not cancel.is_set():
        # Shown the turns, the 1.5B may state the last answer again ("Which command turns
        # Corepack on?" -> "corepack enable"; "And which one removes its proxies?" ->
        # "corepack enable"; an open question's whole reply: "And how do I build it?" ->
        # how the last turn said to start the project): the same question over the same
        # passages, without them. A factoid's draft that answers in a sentence of its own
        # states no "So the answer is" ("... on Posix by default is `~/.npm`."): that
        # sentence is its answer. An open question's reply is its draft.
        again = redraft(question, kind)
        if again and kind == FACTOID:
            answer = extract_answer(again)
        elif again:
            draft, answer = again, stated_answer(again, kind)
    return {
        "draft": draft,
        # Without a stated answer the draft's last sentence is scored, as before.
        "answer": answer or extract_answer(draft),
        "looped": guard.looped,
        "stated": bool(answer),
        "asked": asked,
        "asked_rest": rest,
        "evidence": (
            choose_evidence(question, prompt.passages, embedder, answer, around, draft, context)
            if embedder is not None
            else None
        ),
    }


def writes_out_a_demo(draft: str, messages: Sequence[Message]) -> bool:
    """Most of the draft's content words are the demos' (every message before the last)
    and few are in this turn's (its passages, turns and question): it is a demo's text,
    not an answer to this question."""
    words = content_words(draft)
    if len(words) < DEMO_WORDS or len(messages) < 2:
        return False
    demos, turn = demo_and_turn_words(messages)
    return len(words & demos) >= DEMO_SHARE * len(words) and len(words & turn) <= READ_SHARE * len(words)


def copies(answer: str, said: str) -> bool:
    """The answer says what the turn before said, word for word ("yes" and numbers,
    without content words, are never copies); citation marks aside."""
    words = content_words(uncited(answer))
    return bool(words) and words == content_words(uncited(said))


def query_draft(previous: IterationTrace) -> str:
    """What the next query is formed from: the draft (cut before any repetition), or,
    when nothing of it is left, the evidence sentence."""
    if previous.draft or previous.evidence is None:
        return previous.draft
    return previous.evidence.text
