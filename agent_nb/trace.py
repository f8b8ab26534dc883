"""The trace: per executor invocation, what it had in its active context.

Every display, widget, analysis and test reads these records. An executor records a
``ContextSnapshot`` each time it handles a message: what arrived, what its context mode
kept and dropped, the exact messages its agent was given (after role reassignment),
what the agent answered, what it sent on and yielded, and how long it took.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from .contents import shorten, tool_work_as_text
from .errors import did_you_mean
from .messages import AgentResponse, Message

if TYPE_CHECKING:
    from .facts import Fact, FactTable

__all__ = ["ContextSnapshot", "Sent", "Trace"]


@dataclass(frozen=True, slots=True)
class Sent:
    """A message an executor sent, and the executors it was delivered to."""

    message: Any
    targets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ContextSnapshot:
    """One invocation of one executor."""

    executor_id: str
    superstep: int
    index: int
    """Position in the run: invocations are numbered in the order they started."""
    received: Any
    """The message delivered to the executor."""
    kind: str = "executor"
    """``"agent"`` for agent executors; ``"executor"``, ``"function"`` or a component kind otherwise."""
    context_mode: str | None = None
    context_filter: str | None = None
    """The name of the filter of a ``custom`` context mode."""
    kept: Sequence[Message] = ()
    """Of the received messages, those the context mode kept."""
    dropped: Sequence[Message] = ()
    """Of the received messages, those the context mode or filter dropped."""
    given: tuple[Message, ...] | None = None
    """The exact messages the agent was given, or ``None`` if the agent did not run."""
    cached: Sequence[Message] = ()
    """The executor's cache when the agent ran: ``given`` before roles were reassigned."""
    response: AgentResponse | None = None
    wrote: tuple[Message, ...] = ()
    """What it wrote to the user's chat itself (a harness component's message nodes, for one)."""
    state: Mapping[str, Any] = field(default_factory=dict)
    """What it keeps to itself and works from: variables, node state, plan (never sent on)."""
    turn: int = 0
    """The conversation turn the invocation belongs to (counted from 1 by a harness; 0 otherwise)."""
    sent: tuple[Sent, ...] = ()
    outputs: tuple[Any, ...] = ()
    started: float = 0.0
    """Seconds from the start of the run."""
    duration: float = 0.0
    error: str | None = None
    requested: tuple[str, ...] = ()
    """The ids of the requests for input it made (the run then waits for their answers)."""

    @property
    def status(self) -> str:
        """``failed``, ``waiting`` (it asked for input), ``answered`` (the agent ran), ``cached`` or ``ran``."""
        if self.error is not None:
            return "failed"
        if self.requested:
            return "waiting"
        if self.given is not None:
            return "answered"
        return "cached" if self.kind == "agent" else "ran"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, str]:
        from .display.bundle import mimebundle
        from .display.context import snapshot_html
        from .display.html import container

        return mimebundle(Trace([self]).to_text(), lambda: container(snapshot_html(self)), include, exclude)

    def reassigned(self) -> tuple[bool, ...]:
        """Per message of ``given``: whether its role was reassigned (another agent's reply handed over as user)."""
        if self.given is None:
            return ()
        if len(self.cached) != len(self.given):
            return (False,) * len(self.given)
        return tuple(g is not c for g, c in zip(self.given, self.cached, strict=True))


def describe_value(value: Any, width: int = 60) -> str:
    """How a delivered message reads in one line; workflow messages describe themselves."""
    if isinstance(value, str):
        return f"text {shorten(repr(value), width)}"
    if isinstance(value, Message):
        return f"{value.role} message {shorten(repr(value.text), width)}"
    describe = getattr(value, "describe", None)
    if callable(describe):
        return shorten(str(describe()), width)
    if isinstance(value, list):
        return f"list of {len(value)}"
    return shorten(f"{type(value).__name__} {value!r}", width + 10)


def describe_state(value: Any, width: int = 60) -> str:
    """A value of a snapshot's ``state`` in one line: mappings as ``k=v``, sequences joined by ``;``."""
    if isinstance(value, Mapping):
        text = ", ".join(f"{k}={v!r}" for k, v in value.items()) or "(none)"
    elif isinstance(value, (list, tuple)):
        text = "; ".join(str(v) for v in value) or "(none)"
    else:
        text = str(value)
    return shorten(text, width)


def message_line(m: Message, width: int, *, was: str | None = None) -> str:
    """One message in at most ``width`` characters: ``user, from planner (was assistant): I see…``."""
    who: str = m.role
    if m.author_name:
        who += f", from {m.author_name}"
    if was is not None and was != m.role:
        who += f" (was {was})"
    return shorten(f"{who}: {message_body(m)}", width)


def message_body(m: Message) -> str:
    """A message's contents as one readable text: tool work, card prompts and clicks included."""
    parts = []
    for c in m.contents:
        if c.type == "text":
            parts.append(c.text)
        elif c.type == "user_input_request":
            parts.append(c.prompt + "".join(f" [{o}]" for o in c.options))
        elif c.type == "user_input_response":
            parts.append(f"▸ {c.text}")
        elif c.type in ("function_call", "function_result"):
            parts.append(tool_work_as_text(c).text)
        else:
            parts.append(f"[{c.type}]")
    return " ".join(parts)


class Trace(Sequence[ContextSnapshot]):
    """The snapshots of one run, in the order invocations started.

    ``str(trace)`` is a readable report (no timings, so it is stable);
    ``trace.to_text(timings=True)`` adds them.
    """

    __slots__ = ("_snapshots", "chat", "executor_ids")

    def __init__(
        self,
        snapshots: Sequence[ContextSnapshot],
        executor_ids: Sequence[str] = (),
        *,
        chat: Sequence[Message] = (),
    ) -> None:
        self._snapshots = tuple(snapshots)
        self.executor_ids: tuple[str, ...] = tuple(executor_ids) or tuple(
            dict.fromkeys(s.executor_id for s in self._snapshots)
        )
        self.chat: tuple[Message, ...] = tuple(chat)
        """The user's chat transcript, when the run had one (a harness conversation)."""

    def __len__(self) -> int:
        return len(self._snapshots)

    @overload
    def __getitem__(self, index: int) -> ContextSnapshot: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ContextSnapshot]: ...
    def __getitem__(self, index: int | slice) -> ContextSnapshot | Sequence[ContextSnapshot]:
        return self._snapshots[index]

    def __iter__(self) -> Iterator[ContextSnapshot]:
        return iter(self._snapshots)

    def for_executor(self, executor_id: str) -> Trace:
        """The snapshots of one executor."""
        if executor_id not in self.executor_ids:
            raise KeyError(
                f"no executor {executor_id!r} in this trace (executors: {', '.join(self.executor_ids)})"
                + did_you_mean(executor_id, self.executor_ids)
            )
        return Trace([s for s in self._snapshots if s.executor_id == executor_id], (executor_id,))

    def last(self, executor_id: str) -> ContextSnapshot:
        """The most recent snapshot of an executor that ran."""
        snaps = self.for_executor(executor_id)
        if not snaps:
            raise LookupError(f"executor {executor_id!r} did not run in this trace")
        return snaps[-1]

    def who_has(self, fact: Fact) -> FactTable:
        """Per executor: was ``fact`` (a text, or a test on text) in its active context, written, passed on."""
        from .facts import who_has

        return who_has(self, fact)

    def to_dict(self) -> dict[str, Any]:
        """The trace as JSON-ready data: messages in full, everything else as readable text."""

        def dump(messages: Sequence[Message] | None) -> list[dict[str, Any]] | None:
            return None if messages is None else [m.model_dump(mode="json", exclude_none=True) for m in messages]

        snapshots = []
        for s in self._snapshots:
            record: dict[str, Any] = {
                "executor_id": s.executor_id,
                "kind": s.kind,
                "turn": s.turn,
                "superstep": s.superstep,
                "index": s.index,
                "status": s.status,
                "context_mode": s.context_mode,
                "context_filter": s.context_filter,
                "received": describe_value(s.received, 200),
                "dropped": dump(s.dropped),
                "given": dump(s.given),
                "wrote": dump(s.wrote),
                "state": {k: describe_state(v, 400) for k, v in s.state.items()},
                "sent": [{"message": describe_value(x.message, 200), "targets": list(x.targets)} for x in s.sent],
                "duration_ms": round(s.duration * 1000, 3),
                "error": s.error,
            }
            if s.response is not None:
                record["response"] = {
                    "messages": dump(s.response.messages),
                    "route": s.response.route,
                    "model": s.response.model,
                }
            snapshots.append(record)
        return {"executors": list(self.executor_ids), "snapshots": snapshots, "chat": dump(self.chat)}

    def to_text(self, *, width: int = 100, timings: bool = False) -> str:
        """A plain-text report: per invocation, what arrived, what was kept and dropped, what was answered."""
        lines: list[str] = []
        body = max(width - 14, 20)

        def add(label: str, text: str) -> None:
            lines.append(f"    {label:<9} {shorten(text, body)}")  # a label of ten letters keeps its space

        def listing(mark: str, messages: Sequence[Message], was: Sequence[Message] = ()) -> None:
            for i, m in enumerate(messages):
                prefix = f"{i + 1}." if mark == "#" else mark
                original = was[i].role if was else None
                lines.append(f"              {prefix} {message_line(m, body - 3, was=original)}")

        def count(n: int) -> str:
            return f"{n} message{'' if n == 1 else 's'}"

        for s in self._snapshots:
            head = f"[{s.superstep}] {s.executor_id} · {s.kind}"
            if s.context_mode:
                head += f" · context_mode={s.context_mode}"
            if s.context_filter:
                head += f" ({s.context_filter})"
            head += f" · {s.status}"
            if timings:
                head += f" · {s.duration * 1000:.2f} ms"
            lines.append(head)
            add("received", describe_value(s.received, body))
            if s.dropped:
                add("dropped", count(len(s.dropped)))
                listing("✗", s.dropped)
            if s.given is not None:
                add("given", count(len(s.given)))
                listing("#", s.given, s.cached if len(s.cached) == len(s.given) else ())
            elif s.kind == "agent" and s.kept:
                add("cached", count(len(s.kept)))
            if s.response is not None:
                add("answered", s.response.text)
            if s.wrote:
                add("wrote", count(len(s.wrote)) + " to the chat")
                listing("»", s.wrote)
            for key, value in s.state.items():
                add(key, describe_state(value, body))
            for sent in s.sent:
                add(
                    "sent",
                    f"{describe_value(sent.message, body)} → {', '.join(sent.targets) or '(no downstream executor)'}",
                )
            if s.error is not None:
                add("error", s.error)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"Trace({len(self)} snapshots, executors={list(self.executor_ids)})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, str]:
        from .display.bundle import mimebundle  # displays are loaded when something is shown
        from .display.context import trace_html

        return mimebundle(self.to_text(), lambda: trace_html(self), include, exclude)
