"""Who has a fact: for each executor of a run, was it in its active context, did it write it, did it pass it on.

A fact is a piece of text (matched case-insensitively, whitespace ignored) or a predicate
on text. The answer is computed from the trace alone, so it reports what really
happened in a run, not what a design says should happen.

```python
table = trace.who_has("23 kg")
table["orchestrator"].in_context   # where it was: empty (falsy) when never
```
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ..contents import shorten
from ..errors import ArgumentError, bad_argument
from ..messages import AgentResponse, ChatResponse, Message
from ..rendering import Displayable

if TYPE_CHECKING:
    from .snapshots import ContextSnapshot, Trace

__all__ = [
    "SCOPES",
    "ContextTable",
    "Fact",
    "FactTable",
    "Holder",
    "Where",
    "check_scope",
    "context_table",
    "strings_of",
    "who_has",
]

Fact = Union[str, Callable[[str], bool]]  # noqa: UP007 - Python 3.10 evaluates this at run time
LEGEND = (
    "C: in its active context · W: wrote it to the chat · R: returned it "
    "(for the user's chat: C the user saw or said it, W the user said it)"
)
CHAT = "user's chat"
"""The viewpoint of the person in the conversation: what was written to the chat."""


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def matcher(fact: Fact) -> Callable[[str], bool]:
    """``fact`` as a test on one string."""
    if callable(fact):
        return lambda text: bool(fact(text))
    if not isinstance(fact, str) or not fact.strip():
        raise ArgumentError(f"a fact is a non-empty text or a function of text, got {fact!r}", argument="fact")
    needle = _normal(fact)
    return lambda text: needle in _normal(text)


def strings_of(value: Any, *, offered: bool = True) -> Iterator[str]:
    """Every piece of text a value carries: message contents, tool arguments and results, card options.

    ``offered=False`` leaves out the options a question or card offers (offered is not chosen).
    Objects choose what they carry explicitly by defining ``texts()``.
    """
    if value is None or isinstance(value, bool) or type(value) in _SILENT:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, Message):
        for c in value.contents:
            if c.type == "text":
                yield c.text
            elif c.type == "function_call":
                yield c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments, default=str)
            elif c.type == "function_result":
                yield c.exception or json.dumps(c.result, default=str)
            elif c.type == "user_input_request":
                yield c.prompt
                if offered:
                    yield from c.options
            elif c.type == "user_input_response":
                yield c.text
    elif isinstance(value, (AgentResponse, ChatResponse)):
        for m in value.messages:
            yield from strings_of(m, offered=offered)
    elif callable(getattr(value, "texts", None)):
        for item in value.texts():
            yield from strings_of(item, offered=offered)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings_of(item, offered=offered)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from strings_of(item, offered=offered)
    elif isinstance(value, (int, float)):
        yield str(value)
    elif not hasattr(value, "__dict__"):  # no instance can grow a texts(): the type alone decides
        _SILENT.add(type(value))


_SILENT: set[type] = set()
"""Types whose values carry no text (a workflow's own slotted message types): met once, let go at once after."""


@dataclass(frozen=True, slots=True)
class Where:
    """One place a fact was found: an invocation, and the message ids or state keys that hold it."""

    turn: int
    superstep: int
    at: tuple[str, ...]

    def __str__(self) -> str:
        turn = f"turn {self.turn}, " if self.turn else ""
        return f"{turn}superstep {self.superstep}: {', '.join(self.at)}"


@dataclass(frozen=True, slots=True)
class Holder:
    """What one viewpoint did with the fact; each field lists where, and is falsy when never."""

    viewpoint: str
    kind: str
    in_context: tuple[Where, ...] = ()
    wrote: tuple[Where, ...] = ()
    """Wrote it to the user's chat (for the user's chat: said it, or was shown it)."""
    returned: tuple[Where, ...] = ()
    """Sent it on: a component's result to its caller, an orchestrator's inputs to a component."""

    def marks(self) -> tuple[bool, bool, bool]:
        return bool(self.in_context), bool(self.wrote), bool(self.returned)


class _Finder:
    """A fact's test, remembered per message: a conversation's messages are shared by every snapshot."""

    __slots__ = ("_seen", "scope", "test")

    def __init__(self, test: Callable[[str], bool], scope: str = "model") -> None:
        self.test, self.scope = test, scope
        self._seen: dict[int, bool] = {}  # by id: the messages outlive the search, and never change

    def holds(self, m: Message) -> bool:
        hit = self._seen.get(id(m))
        if hit is None:
            hit = self._seen[id(m)] = any(self.test(t) for t in strings_of(m))
        return hit

    def ids(self, messages: Sequence[Message]) -> list[str]:
        return [m.message_id or f"#{i + 1}" for i, m in enumerate(messages) if self.holds(m)]

    def places(self, s: ContextSnapshot) -> tuple[list[str], list[str], list[str]]:
        test = self.test
        context = self.ids(s.context(self.scope))
        context += [f"state {k}" for k, v in s.state.items() if any(test(t) for t in strings_of(v))]
        returned = [
            f"to {', '.join(sent.targets) or 'nobody'}"
            for sent in s.sent
            if any(test(t) for t in strings_of(sent.message))
        ]
        return context, self.ids(s.wrote), returned


class FactTable(Displayable):
    """The answer to "who has this fact?": one row per viewpoint, in the order of the trace."""

    def __init__(self, fact: Fact, rows: Sequence[Holder]) -> None:
        self.fact = fact
        self.rows = tuple(rows)

    @property
    def label(self) -> str:
        return repr(self.fact) if isinstance(self.fact, str) else getattr(self.fact, "__name__", "a predicate")

    def __getitem__(self, viewpoint: str) -> Holder:
        for row in self.rows:
            if row.viewpoint == viewpoint:
                return row
        names = ", ".join(r.viewpoint for r in self.rows)
        raise KeyError(f"no viewpoint {viewpoint!r} in this table (viewpoints: {names})")

    def __iter__(self) -> Iterator[Holder]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def to_text(self, *, width: int = 100) -> str:
        """A plain table: ✓ or · per column, and where for every ✓."""
        name = max([len(r.viewpoint) for r in self.rows] + [9])
        lines = [f"who has {shorten(self.label, width - 8)}?", f"{'viewpoint':<{name}}  context  wrote  returned"]
        for r in self.rows:
            c, w, ret = ("✓" if m else "·" for m in r.marks())
            lines.append(f"{r.viewpoint:<{name}}  {c:^7}  {w:^5}  {ret:^8}")
        for r in self.rows:
            for label, where in (("context", r.in_context), ("wrote", r.wrote), ("returned", r.returned)):
                if where:
                    lines.append(shorten(f"  {r.viewpoint} {label}: " + "; ".join(map(str, where)), width))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"FactTable({self.label}, {len(self.rows)} viewpoints)"


def who_has(trace: Trace, fact: Fact, *, scope: str = "model") -> FactTable:
    """For ``fact``, per executor of ``trace`` (and the user's chat, when the trace has one): where it was.

    In context means in what the executor's model received (``scope="model"``: its instructions and
    history too), or in what the executor handed its agent (``scope="executor"``).
    """
    check_scope("who_has", scope)
    finder = _Finder(matcher(fact), scope)
    found: dict[str, dict[str, list[Where]]] = {eid: {"c": [], "w": [], "r": []} for eid in trace.executor_ids}
    kinds: dict[str, str] = {}
    for s in trace:
        kinds.setdefault(s.executor_id, s.kind)
        slots = found.setdefault(s.executor_id, {"c": [], "w": [], "r": []})
        for key, at in zip("cwr", finder.places(s), strict=True):
            if at:
                slots[key].append(Where(s.turn, s.superstep, tuple(at)))
    rows = [
        Holder(eid, kinds.get(eid, "not run"), tuple(f["c"]), tuple(f["w"]), tuple(f["r"])) for eid, f in found.items()
    ]
    if trace.chat:
        said = finder.ids([m for m in trace.chat if m.role == "user"])
        shown = finder.ids([m for m in trace.chat if m.role != "user"])
        rows.append(
            Holder(
                CHAT,
                "chat",
                (Where(0, 0, tuple(said + shown)),) if said or shown else (),
                (Where(0, 0, tuple(said)),) if said else (),
            )
        )
    return FactTable(fact, rows)


class ContextTable(Displayable):
    """Several facts against every viewpoint: the table of docs/context-distribution.md, computed from a run."""

    def __init__(self, tables: Mapping[str, FactTable]) -> None:
        self.tables = dict(tables)
        self.labels = tuple(self.tables)

    def rows(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """Per viewpoint: its name, its kind, and per fact the marks ``C``, ``W``, ``R`` (``·`` for none)."""
        first = next(iter(self.tables.values()), None)
        out = []
        for i, row in enumerate(first.rows if first else ()):
            marks = []
            for table in self.tables.values():
                c, w, r = table.rows[i].marks()
                marks.append("".join(letter for letter, on in zip("CWR", (c, w, r), strict=True) if on) or "·")
            out.append((row.viewpoint, row.kind, tuple(marks)))
        return out

    def __getitem__(self, key: tuple[str, str]) -> str:
        """``table["orchestrator", "the request"]`` → the marks, such as ``"CW"``."""
        viewpoint, label = key
        for name, _, marks in self.rows():
            if name == viewpoint:
                return marks[self.labels.index(label)]
        raise KeyError(f"no viewpoint {viewpoint!r}")

    def to_text(self) -> str:
        rows = self.rows()
        name = max([len(r[0]) for r in rows] + [9])
        widths = [max(len(label), 3) for label in self.labels]
        lines = [
            f"{'viewpoint':<{name}}  " + "  ".join(f"{lab:<{w}}" for lab, w in zip(self.labels, widths, strict=True))
        ]
        for viewpoint, _, marks in rows:
            cells = "  ".join(f"{m:<{w}}" for m, w in zip(marks, widths, strict=True))
            lines.append(f"{viewpoint:<{name}}  {cells}")
        lines.append(LEGEND)
        return "\n".join(lines)


def context_table(trace: Trace, facts: Mapping[str, Fact], *, scope: str = "model") -> ContextTable:
    """``who_has`` for each of ``facts`` (label → fact), as one table (``scope`` as for ``who_has``)."""
    return ContextTable({label: who_has(trace, fact, scope=scope) for label, fact in facts.items()})


SCOPES = ("model", "executor")
"""What an active context is read as: what the model received, or what the executor handed its agent."""


def check_scope(where: str, scope: object) -> None:
    """Refuse a scope that is not one of ``SCOPES``, saying which there are."""
    if scope not in SCOPES:
        raise bad_argument(
            where, "scope", scope, "give 'model' (what the model received) or 'executor' (what its executor gave)"
        )
