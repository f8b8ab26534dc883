"""``RunResult``: the events, outputs and trace of one workflow run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._lazy import telemetry
from ..rendering import Displayable
from ..trace import Trace
from .events import WorkflowEvent
from .requests import PendingRequest

if TYPE_CHECKING:
    from .workflow import Workflow

__all__ = ["RunResult"]


@dataclass(frozen=True, slots=True)
class RunResult(Displayable):
    """What ``await workflow.run(...)`` returns."""

    events: tuple[WorkflowEvent, ...]
    trace: Trace
    status: str
    """``"completed"``, ``"waiting"`` (requests for input are pending) or ``"failed"``."""
    workflow: Workflow | None = None
    """The workflow that ran (displays draw its graph)."""
    state: Mapping[str, Any] = field(default_factory=dict)
    """The shared state at the end of the run (read-only); pass it to the next run to go on from it."""
    pending_requests: tuple[PendingRequest, ...] = ()
    """Requests for input nobody has answered: answer with ``workflow.run(responses={id: value})``."""
    checkpoint_id: str | None = None
    """The last checkpoint this run wrote (``None`` without a checkpoint storage)."""

    def to_otel(self, tracer_provider: Any = None, **options: Any) -> Any:
        """Export this run as OpenTelemetry spans: its trace, status and checkpoints (``agent_nb.telemetry``)."""
        return telemetry().export_result(self, tracer_provider, **options)

    def get_outputs(self) -> list[Any]:
        """The outputs in the order they were yielded (``AgentResponse`` objects for agents)."""
        return [e.data for e in self.events if e.type == "output"]  # type: ignore[attr-defined]

    @property
    def text(self) -> str:
        """The text of the last output that has text (a string output is its own text), or ``""``."""
        for value in reversed(self.get_outputs()):
            text = value if isinstance(value, str) else getattr(value, "text", None)
            if isinstance(text, str) and text:
                return text
        return ""

    def __repr__(self) -> str:
        pending = f", pending_requests={len(self.pending_requests)}" if self.pending_requests else ""
        return (
            f"RunResult(status={self.status!r}, outputs={len(self.get_outputs())}, "
            f"snapshots={len(self.trace)}{pending})"
        )

    def to_text(self) -> str:
        """What the run was, then its trace's text report, folded to at most 100,000 bytes (a notebook stores it).

        Folded like the run view (``run_view``'s ``max_messages=40``, ``max_chars=400``): a list of more
        than 40 messages shows its first 10 and last 30 and counts the rest, a text of more than 400
        characters says how much of it was left out, and a longer run folds its invocations (see
        ``trace_text``). A run that needs no folding prints its whole report, as ``str(result.trace)``.
        """
        return folded(repr(self), self.trace)


def folded(first: str, trace: Trace) -> str:
    """``first``, then ``trace``'s report folded so the whole text stays under 100,000 bytes."""
    rest = min(99_000, 100_000 - len(first.encode()) - 1)
    return f"{first}\n{trace.to_text(max_messages=40, max_chars=400, max_bytes=rest)}"
