"""Words, for deterministic matching of requests, sources and answers.

A request is matched against a component's description, a question against a source,
one answer against another.

Deliberately simple and fully predictable: lower-cased words, a short stop list, a plural
``s`` and an ``-ing`` or ``-ed`` dropped. It is what makes offline harness runs reproducible, not a search engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["SIMILAR", "best_passage", "content_words", "mentions", "overlap", "similar"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = """
a an and are as at be been but by can could do does for from had has have how i i'd i'm if in into is it its
me my of on or our please so than that the their them then there these this to too us was we what when where
which who why will with would you your yours also about any all some just like want get
"""
STOP = frozenset(_STOP_WORDS.split())


def _stem(word: str) -> str:
    """``opening`` → ``open``, ``booked`` → ``book``, ``flights`` → ``flight``: enough to match, no more."""
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that carry meaning: lower-cased, stop words left out, plurals folded."""
    return frozenset(_stem(w) for w in _WORD.findall(text.casefold()) if w not in STOP)


def overlap(a: Iterable[str] | str, b: Iterable[str] | str) -> int:
    """How many content words two texts (or word sets) share."""
    wa = content_words(a) if isinstance(a, str) else frozenset(a)
    wb = content_words(b) if isinstance(b, str) else frozenset(b)
    return len(wa & wb)


SIMILAR = 0.6
"""The share of the shorter message's words two messages must have in common to say the same thing."""


def similar(a: str, b: str, threshold: float = SIMILAR) -> bool:
    """Whether two messages say the same thing: one contains the other, or most of their words agree."""
    na, nb = " ".join(a.casefold().split()), " ".join(b.casefold().split())
    if not na or not nb:
        return False
    if na in nb or nb in na:
        return True
    wa, wb = content_words(a), content_words(b)
    return bool(wa and wb) and len(wa & wb) / min(len(wa), len(wb)) >= threshold


def mentions(text: str, choice: str) -> bool:
    """Whether ``text`` names ``choice`` as a whole word (or words), in any case."""
    return re.search(rf"(?<!\w){re.escape(choice.casefold())}(?!\w)", text.casefold()) is not None


def best_passage(query: str, sources: dict[str, str] | Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The sentence of the sources that shares the most content words with ``query``: ``(title, sentence)``.

    ``None`` when no sentence shares a word. Ties go to the first sentence.
    """
    wanted = content_words(query)
    best: tuple[int, str, str] | None = None
    items = sources.items() if isinstance(sources, dict) else sources
    for title, text in items:
        for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
            score = len(wanted & content_words(sentence))
            if score and (best is None or score > best[0]):
                best = (score, title, sentence)
    return None if best is None else (best[1], best[2])
