"""The trace's records: a ``ContextSnapshot`` per executor invocation, and ``Trace``, a run's snapshots.

An executor records a
``ContextSnapshot`` each time it handles a message: what arrived, what its context mode
kept and dropped, the exact messages its agent was given (after role reassignment),
what the agent answered, what it sent on and yielded, and how long it took.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields, make_dataclass
from typing import TYPE_CHECKING, Any, overload

from pydantic_core import to_jsonable_python

from .._lazy import telemetry
from ..agents.requests import ModelRequest
from ..errors import did_you_mean
from ..messages import AgentResponse, Message
from ..rendering import Displayable
from .text import describe_state, describe_value, trace_text
from .who_has import check_scope

if TYPE_CHECKING:
    from .who_has import Fact, FactTable

__all__ = ["ContextSnapshot", "OpenSnapshot", "Sent", "Trace", "freeze", "new_snapshot"]


@dataclass(frozen=True, slots=True)
class Sent:
    """A message an executor sent, and the executors it was delivered to."""

    message: Any
    targets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ContextSnapshot(Displayable):
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
    at: float = 0.0
    """When it started, in seconds since the epoch (0 when not known: a trace stored before it was kept)."""
    duration: float = 0.0
    error: str | None = None
    requested: tuple[str, ...] = ()
    """The ids of the requests for input it made (the run then waits for their answers)."""
    model_requests: tuple[ModelRequest, ...] = ()
    """What its model really received: each request its agent sent (each tool round too), as sent."""
    warnings: tuple[str, ...] = ()
    """What went less well than asked, said as it happened (each also a ``warning`` event of the run)."""
    inner: Trace | None = None
    """The trace of the workflow this invocation ran whole (a sub-workflow's node), or ``None``."""

    @property
    def mode(self) -> str | None:
        """The context mode as a label: ``full``, ``last_agent``, ``custom(<filter>)``; ``None`` for other executors."""
        if not self.context_mode:
            return None
        return f"custom({self.context_filter})" if self.context_filter else self.context_mode

    @property
    def status(self) -> str:
        """What the invocation came to: ``failed``, ``waiting``, ``warned``, ``answered``, ``cached`` or ``ran``.

        ``waiting``: it asked for input; ``warned``: it answered, with a warning; ``answered``: the agent ran.
        """
        if self.error is not None:
            return "failed"
        if self.requested:
            return "waiting"
        if self.warnings:
            return "warned"
        if self.given is not None:
            return "answered"
        return "cached" if self.kind == "agent" else "ran"

    def to_text(self) -> str:
        """The invocation as the trace's text report shows it."""
        return trace_text(Trace([self]))

    @property
    def model_input(self) -> ModelRequest | None:
        """The fullest request its own agent sent (the last: a tool round repeats the ones before), or ``None``."""
        if not self.model_requests:
            return None
        own = self.model_requests[0].agent  # the executor's agent sends first; a nested agent's come after
        mine = [q for q in self.model_requests if q.agent == own]
        return mine[-1]

    def context(self, scope: str = "model") -> Sequence[Message]:
        """What it had in its active context: ``"model"`` what its model received, ``"executor"`` what it gave.

        What the model received holds the agent's instructions and history too. Without a model
        request (a function executor, an agent that is not a ``ChatAgent``) both scopes read what
        the executor gave, or, for an agent that only cached its input, what it kept.
        """
        check_scope(f"executor {self.executor_id!r}: context()", scope)
        request = self.model_input if scope == "model" else None
        if request is not None:
            return request.messages
        return self.given if self.given is not None else self.kept

    @property
    def reassigned(self) -> tuple[bool, ...]:
        """Per message of ``given``: whether its role was reassigned (another agent's reply handed over as user).

        An attribute like every other field of the record (derived from ``given`` and ``cached``).
        """
        if self.given is None:
            return ()
        if len(self.cached) != len(self.given):
            return (False,) * len(self.given)
        return tuple(g is not c for g, c in zip(self.given, self.cached, strict=True))


def _writable_twin(frozen: type[Any]) -> type[Any]:
    """A dataclass with the fields (so the slots, in order) of the frozen dataclass ``frozen``, but writable.

    Its ``__init__`` writes each field with a plain attribute store, where a frozen dataclass's
    goes through ``object.__setattr__`` (about three times the cost, for 26 fields).
    """

    def same(f: Field[Any]) -> Any:
        if f.default_factory is not MISSING:
            return field(default_factory=f.default_factory)
        return field() if f.default is MISSING else field(default=f.default)

    return make_dataclass(
        f"Writable{frozen.__name__}",
        [(f.name, f.type, same(f)) for f in fields(frozen)],
        bases=frozen.__bases__,
        slots=True,
        eq=False,
        repr=False,
    )


OpenSnapshot = _writable_twin(ContextSnapshot)
"""A ``ContextSnapshot`` still being written: the runner opens one per invocation, the executor
records into it as it goes (plain attribute writes), and ``freeze`` makes it the frozen record."""


def freeze(record: Any) -> ContextSnapshot:
    """The finished record, frozen from now on: an ``OpenSnapshot`` becomes a ``ContextSnapshot``.

    The two classes have the same slots in the same order, so the class is swapped in place:
    nothing is copied, and a record costs a third of a frozen dataclass's construction.
    """
    record.__class__ = ContextSnapshot
    return record  # type: ignore[no-any-return]


def new_snapshot(values: Mapping[str, Any]) -> ContextSnapshot:
    """``ContextSnapshot(**values)``, made the runner's way (a trace read back makes many)."""
    return freeze(OpenSnapshot(**values))


class Trace(Displayable, Sequence[ContextSnapshot]):
    """The snapshots of one run, in the order invocations started.

    ``str(trace)`` is a readable report (no timings, so it is stable);
    ``trace.to_text(timings=True)`` adds them.
    """

    __slots__ = ("_snapshots", "chat", "executor_ids", "name", "restored", "restored_from")

    def __init__(
        self,
        snapshots: Sequence[ContextSnapshot],
        executor_ids: Sequence[str] = (),
        *,
        chat: Sequence[Message] = (),
        restored_from: str | None = None,
        restored: Sequence[str] = (),
        name: str | None = None,
    ) -> None:
        self._snapshots = tuple(snapshots)
        self.executor_ids: tuple[str, ...] = tuple(executor_ids) or tuple(
            dict.fromkeys(s.executor_id for s in self._snapshots)
        )
        self.chat: tuple[Message, ...] = tuple(chat)
        """The user's chat transcript, when the run had one (a harness conversation)."""
        self.restored_from = restored_from
        """The checkpoint the run resumed from, if it did."""
        self.restored: tuple[str, ...] = tuple(restored)
        """The executors put back from that checkpoint that did not run in this run (displays say "restored")."""
        self.name = name
        """The name of the workflow that ran (``None`` for a trace made by hand or stored before it was kept)."""

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

    def to_otel(self, tracer_provider: Any = None, **options: Any) -> Any:
        """Export this trace as OpenTelemetry spans, with its own timings (``agent_nb.telemetry.export_trace``)."""
        return telemetry().export_trace(self, tracer_provider, **options)

    def for_executor(self, executor_id: str) -> Trace:
        """The snapshots of one executor."""
        if executor_id not in self.executor_ids:
            raise KeyError(
                f"no executor {executor_id!r} in this trace (executors: {', '.join(self.executor_ids)})"
                + did_you_mean(executor_id, self.executor_ids)
            )
        restored = (executor_id,) if executor_id in self.restored else ()
        snaps = [s for s in self._snapshots if s.executor_id == executor_id]
        return Trace(snaps, (executor_id,), restored_from=self.restored_from, restored=restored, name=self.name)

    def last(self, executor_id: str) -> ContextSnapshot:
        """The most recent snapshot of an executor that ran."""
        snaps = self.for_executor(executor_id)
        if not snaps:
            raise LookupError(f"executor {executor_id!r} did not run in this trace")
        return snaps[-1]

    def who_has(self, fact: Fact, *, scope: str = "model") -> FactTable:
        """Per executor: was ``fact`` (a text, or a test on text) in its active context, written, passed on.

        ``scope="model"``: in what its model received (instructions and history too); ``"executor"``:
        in what the executor handed its agent.
        """
        from .who_has import who_has

        return who_has(self, fact, scope=scope)

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
                "warnings": list(s.warnings),
            }
            if s.response is not None:
                record["response"] = {
                    "messages": dump(s.response.messages),
                    "route": s.response.route,
                    "model": s.response.model,
                }
            if s.model_requests:
                record["model_requests"] = [
                    {
                        "agent": q.agent,
                        "round": q.round,
                        "messages": dump(q.messages),
                        "origins": list(q.origins),
                        "tools": list(q.tools),
                        "options": to_jsonable_python(q.options, fallback=lambda v: describe_value(v, 200)),
                        "route": q.route,
                        "model": q.model,
                        "error": q.error,
                        "repairs": list(q.repairs),
                    }
                    for q in s.model_requests
                ]
            if s.inner is not None:  # a sub-workflow's own run
                record["inner"] = s.inner.to_dict()
            snapshots.append(record)
        data = {"executors": list(self.executor_ids), "snapshots": snapshots, "chat": dump(self.chat)}
        if self.restored_from is not None:
            data |= {"restored_from": self.restored_from, "restored": list(self.restored)}
        return data

    def to_text(
        self,
        *,
        width: int = 100,
        timings: bool = False,
        max_messages: int | None = None,
        max_chars: int | None = None,
        max_bytes: int | None = None,
    ) -> str:
        """A plain-text report: per invocation, what arrived, what was kept and dropped, what was answered.

        Whole by default; the ``max_*`` options fold long lists, long texts and a long report
        (``RunResult`` uses them for its notebook text).
        """
        return trace_text(
            self, width=width, timings=timings, max_messages=max_messages, max_chars=max_chars, max_bytes=max_bytes
        )

    def __repr__(self) -> str:
        return f"Trace({len(self)} snapshots, executors={list(self.executor_ids)})"
