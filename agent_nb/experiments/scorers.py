"""Scorers: any function ``(cell) -> bool | float | dict | None``, and the ones shipped.

A ``bool`` is a pass or a fail (the table gives its rate with a Wilson interval), a number is
averaged (with a bootstrap interval), a ``dict`` is several scores named ``scorer.key``, and
``None`` means "does not apply" (left out of the statistics). A scorer may be ``async``. One that
counts something bad says ``lower_is_better = True`` (as ``has_gap`` does), and ``compare`` then
calls a change for the better a fix.
Scorers run beside the cell's run (on the worker, on a cluster), where its live trace is.

```python
scorers.contains()                        # the output contains the input's "expected"
scorers.had_in_context("writer", "rain")  # the writer's model was given a message with "rain"
scorers.has_gap("duplicate answer")       # a harness answered twice
```
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ArgumentError, UsageError, bad_argument
from ..messages import Message
from .cells import Cell

__all__ = [
    "ModelJudge",
    "Scorer",
    "contains",
    "equals",
    "gap_count",
    "had_in_context",
    "has_gap",
    "json_valid",
    "name_of",
    "no_gaps",
    "not_in_context",
    "regex",
    "tokens_under",
]


class Scorer:
    """A named score of a cell; subclasses define ``score``."""

    name = "score"

    def __call__(self, cell: Cell) -> Any:
        return self.score(cell)

    def score(self, cell: Cell) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"scorers.{self.name}"


def name_of(scorer: Any) -> str:
    """A scorer's name: its ``name``, else its function's name."""
    name = getattr(scorer, "name", None)
    if isinstance(name, str) and name:
        return name
    name = getattr(scorer, "__name__", None)
    if isinstance(name, str) and name and name != "<lambda>":
        return name
    raise bad_argument(
        "Experiment",
        "a scorer",
        scorer,
        "give a named function (def ...) or an object with a 'name'",
        "lambdas have none",
    )


def _wanted(cell: Cell, value: Any, field: str) -> Any:
    if value is not None:
        return value
    if cell.case is None or field not in cell.case.fields:
        return None
    return cell.case.fields[field]


class _TextScorer(Scorer):
    def __init__(self, kind: str, value: Any, field: str, case_sensitive: bool) -> None:
        self.value, self.field, self.case_sensitive = value, field, case_sensitive
        self.name = f"{kind}({value!r})" if value is not None else f"{kind}({field})"

    def _fold(self, text: str) -> str:
        return text if self.case_sensitive else text.casefold()


class _Contains(_TextScorer):
    def score(self, cell: Cell) -> bool | None:
        wanted = _wanted(cell, self.value, self.field)
        if wanted is None:
            return None
        output = self._fold(cell.output)
        if isinstance(wanted, str):
            return self._fold(wanted) in output
        return all(self._fold(str(t)) in output for t in wanted)


class _Equals(_TextScorer):
    def score(self, cell: Cell) -> bool | None:
        wanted = _wanted(cell, self.value, self.field)
        if wanted is None:
            return None
        return self._fold(cell.output.strip()) == self._fold(str(wanted).strip())


def contains(text: str | list[str] | None = None, *, field: str = "expected", case_sensitive: bool = False) -> Scorer:
    """The output contains ``text`` (every one of a list); by default the input's ``expected`` field."""
    return _Contains("contains", text, field, case_sensitive)


def equals(value: str | None = None, *, field: str = "expected", case_sensitive: bool = False) -> Scorer:
    """The output, stripped, equals ``value`` (by default the input's ``expected``)."""
    return _Equals("equals", value, field, case_sensitive)


class _Regex(Scorer):
    def __init__(self, pattern: str, flags: int) -> None:
        try:
            self.pattern = re.compile(pattern, flags)
        except re.error as exc:
            raise ArgumentError(
                f"scorers.regex: {pattern!r} is not a regular expression: {exc}", argument="pattern"
            ) from exc
        self.name = f"regex({pattern!r})"

    def score(self, cell: Cell) -> bool:
        return self.pattern.search(cell.output) is not None


def regex(pattern: str, flags: int = 0) -> Scorer:
    """The output matches ``pattern`` somewhere (``re.search``)."""
    return _Regex(pattern, flags)


class _JsonValid(Scorer):
    name = "json_valid"

    def score(self, cell: Cell) -> bool:
        try:
            json.loads(cell.output)
        except ValueError:
            return False
        return True


def json_valid() -> Scorer:
    """The output is one JSON value."""
    return _JsonValid()


class _InContext(Scorer):
    def __init__(self, executor: str, fact: str | Callable[[str], bool], present: bool) -> None:
        if not isinstance(executor, str) or not executor:
            raise bad_argument("scorers.had_in_context", "executor", executor, "give an executor id")
        if not isinstance(fact, str) and not callable(fact):
            raise bad_argument("scorers.had_in_context", "fact", fact, "give a text, or a function of a text")
        self.executor, self.fact, self.present = executor, fact, present
        shown = repr(fact) if isinstance(fact, str) else getattr(fact, "__name__", "fact")
        self.name = f"{'had' if present else 'not'}_in_context({executor!r}, {shown})"

    def score(self, cell: Cell) -> bool:
        table = cell.trace.who_has(self.fact)
        try:
            holder = table[self.executor]
        except (KeyError, ArgumentError):
            known = [h.viewpoint for h in table]
            raise ArgumentError(
                f"{self.name}: the run has no executor {self.executor!r} (it has: {', '.join(known)})",
                argument="executor",
            ) from None
        return bool(holder.in_context) is self.present


def had_in_context(executor: str, fact: str | Callable[[str], bool]) -> Scorer:
    """``executor``'s model was given a message holding ``fact`` (by ``who_has``)."""
    return _InContext(executor, fact, True)


def not_in_context(executor: str, fact: str | Callable[[str], bool]) -> Scorer:
    """``executor``'s model was never given a message holding ``fact``."""
    return _InContext(executor, fact, False)


class _Gaps(Scorer):
    def __init__(self, kind: str | None, count: bool) -> None:
        self.kind, self.count = kind, count
        self.lower_is_better = kind is not None  # a gap is bad; no_gaps() is good
        self.name = "no_gaps" if kind is None else f"{'gap_count' if count else 'has_gap'}({kind!r})"

    def score(self, cell: Cell) -> bool | int:
        if self.kind is None:
            return not cell.findings
        n = cell.findings.get(self.kind, 0)
        return n if self.count else n > 0


def no_gaps() -> Scorer:
    """A harness run with no gap at all (no duplicate or missed answer, no lost click, no leak)."""
    return _Gaps(None, False)


def gap_count(kind: str) -> Scorer:
    """How many gaps of ``kind`` a harness run has (averaged over cells)."""
    return _Gaps(kind, True)


def has_gap(kind: str) -> Scorer:
    """Whether a harness run has a gap of ``kind`` (a rate over cells)."""
    return _Gaps(kind, False)


class _TokensUnder(Scorer):
    def __init__(self, limit: int) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise bad_argument("scorers.tokens_under", "n", limit, "give an int >= 0")
        self.limit = limit
        self.name = f"tokens_under({limit})"

    def score(self, cell: Cell) -> bool:
        return cell.tokens < self.limit


def tokens_under(n: int) -> Scorer:
    """Every model of the run together was given fewer than ``n`` tokens."""
    return _TokensUnder(n)


_NUMBER = re.compile(r"(?i)\bscore\s*[:=]\s*(-?\d+(?:\.\d+)?)|\b(pass|fail)\b")


class ModelJudge(Scorer):
    """A score given by a model: ``rubric`` and the cell's input, output and expected answer go to ``client``.

    ``client`` is any chat client (so a judge can be routed, recorded and replayed), or a function
    that makes one — ``make()``, once where the judge is used (on a cluster, on the worker: never
    shipped with open connections), or ``make(cell)``, one client per cell: what a recorded judge
    needs, since a cassette replays its requests in order and cells run concurrently
    (``lambda cell: cassette_client(cassette_for("judge", cell.config, cell.case), real)``). The
    model answers ``SCORE: <0..1>`` or ``PASS`` / ``FAIL``; anything else is a scorer error on that cell.
    """

    def __init__(self, client: Any, rubric: str, *, name: str = "judge") -> None:
        if not isinstance(rubric, str) or not rubric.strip():
            raise bad_argument("ModelJudge", "rubric", rubric, "give the rubric as a text")
        if not callable(getattr(client, "get_response", None)) and not callable(client):
            raise bad_argument("ModelJudge", "client", client, "give a chat client, or a function that makes one")
        self.rubric, self.name = rubric, name
        self._client = client if callable(getattr(client, "get_response", None)) else None
        self._make = None if self._client is not None else client
        self._per_cell = self._make is not None and _takes_a_cell(self._make)

    def __getstate__(self) -> Mapping[str, Any]:
        state = dict(self.__dict__)
        if self._make is not None:
            state["_client"] = None  # a made client stays where it was made
        return state

    @property
    def client(self) -> Any:
        """The judge's client (made on first use); one made per cell has no single client."""
        if self._per_cell:
            raise UsageError(f"{self.name}: its client is made for each cell (make(cell)); see client_for(cell)")
        if self._client is None:
            self._client = self._make()  # type: ignore[misc]
        return self._client

    def client_for(self, cell: Cell) -> Any:
        """The client that judges ``cell``."""
        return self._make(cell) if self._per_cell else self.client  # type: ignore[misc]

    async def score(self, cell: Cell) -> float:
        question = cell.case.input if cell.case is not None else ""
        text = question.text if isinstance(question, Message) else str(question)
        prompt = f"Input:\n{text}\n\nOutput:\n{cell.output}"
        if cell.expected is not None:
            prompt += f"\n\nExpected:\n{cell.expected}"
        messages = [
            Message("system", f"{self.rubric}\nAnswer with 'SCORE: <a number from 0 to 1>', or PASS or FAIL."),
            Message("user", prompt),
        ]
        response = await self.client_for(cell).get_response(messages)
        return judged(response.text, self.name)


def _takes_a_cell(make: Callable[..., Any]) -> bool:
    """Whether ``make`` takes a positional argument without a default (the cell)."""
    try:
        parameters = inspect.signature(make).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty
        for p in parameters
    )


def judged(reply: str, name: str = "judge") -> float:
    """The score in a judge's reply: ``SCORE: 0.8`` -> 0.8, ``PASS`` -> 1.0, ``FAIL`` -> 0.0."""
    match = _NUMBER.search(reply or "")
    if match is None:
        raise ValueError(f"{name}: the judge's reply holds no 'SCORE: x', PASS or FAIL: {reply[:120]!r}")
    if match.group(1) is not None:
        value = float(match.group(1))
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}: the judge's score {value} is outside 0..1")
        return value
    return 1.0 if match.group(2).lower() == "pass" else 0.0
