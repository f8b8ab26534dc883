"""Workflow events: small frozen records with a ``type`` tag (one per class), for ``match`` and for streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from ..trace import ContextSnapshot

__all__ = [
    "CheckpointSaved",
    "ExecutorCompleted",
    "ExecutorFailed",
    "ExecutorInvoked",
    "IntermediateEvent",
    "OutputEvent",
    "RequestInfoEvent",
    "SuperstepCompleted",
    "SuperstepStarted",
    "WorkflowCompleted",
    "WorkflowEvent",
    "WorkflowFailed",
    "WorkflowStarted",
    "WorkflowWarning",
]


@dataclass(frozen=True, slots=True)
class WorkflowEvent:
    """Base of every event; ``type`` names the kind."""

    type: ClassVar[str] = "event"


@dataclass(frozen=True, slots=True)
class WorkflowStarted(WorkflowEvent):
    """The run began."""

    type: ClassVar[Literal["started"]] = "started"


@dataclass(frozen=True, slots=True)
class SuperstepStarted(WorkflowEvent):
    """Messages sent in the previous superstep are being delivered."""

    superstep: int
    type: ClassVar[Literal["superstep_started"]] = "superstep_started"


@dataclass(frozen=True, slots=True)
class SuperstepCompleted(WorkflowEvent):
    """Every executor of the superstep finished."""

    superstep: int
    type: ClassVar[Literal["superstep_completed"]] = "superstep_completed"


@dataclass(frozen=True, slots=True)
class ExecutorInvoked(WorkflowEvent):
    """An executor is handling one message."""

    executor_id: str
    superstep: int
    type: ClassVar[Literal["executor_invoked"]] = "executor_invoked"


@dataclass(frozen=True, slots=True)
class ExecutorCompleted(WorkflowEvent):
    """An executor finished handling one message; ``snapshot`` is what it had in its context."""

    executor_id: str
    superstep: int
    snapshot: ContextSnapshot | None = None
    type: ClassVar[Literal["executor_completed"]] = "executor_completed"


@dataclass(frozen=True, slots=True)
class ExecutorFailed(WorkflowEvent):
    """An executor raised; the run fails with it."""

    executor_id: str
    superstep: int
    error: BaseException
    type: ClassVar[Literal["executor_failed"]] = "executor_failed"


@dataclass(frozen=True, slots=True)
class OutputEvent(WorkflowEvent):
    """An output of the run: an ``AgentResponse``, one ``AgentResponseUpdate`` when streaming, or any value."""

    executor_id: str
    data: Any
    type: ClassVar[Literal["output"]] = "output"


@dataclass(frozen=True, slots=True)
class IntermediateEvent(WorkflowEvent):
    """What an executor yielded that is not an output of the run: still streamed and seen, not returned.

    The workflow names the executors of its outputs (``output_from``): an earlier participant's answer
    in a ``SequentialBuilder`` is one of these.
    """

    executor_id: str
    data: Any
    type: ClassVar[Literal["intermediate"]] = "intermediate"


@dataclass(frozen=True, slots=True)
class WorkflowFailed(WorkflowEvent):
    """The run failed; ``error`` is what ``run`` raises."""

    error: BaseException
    type: ClassVar[Literal["failed"]] = "failed"


@dataclass(frozen=True, slots=True)
class WorkflowCompleted(WorkflowEvent):
    """The run ended: no messages are left to deliver."""

    supersteps: int
    type: ClassVar[Literal["completed"]] = "completed"


@dataclass(frozen=True, slots=True)
class RequestInfoEvent(WorkflowEvent):
    """An executor asked for input; the run ends waiting until ``run(responses={request_id: ...})``."""

    request_id: str
    executor_id: str
    data: Any
    response_type: Any
    type: ClassVar[Literal["request_info"]] = "request_info"


@dataclass(frozen=True, slots=True)
class CheckpointSaved(WorkflowEvent):
    """A checkpoint was written after ``superstep`` (0: before the first)."""

    checkpoint_id: str
    superstep: int
    status: str
    type: ClassVar[Literal["checkpoint"]] = "checkpoint"


@dataclass(frozen=True, slots=True)
class WorkflowWarning(WorkflowEvent):
    """Something the run could do, but not as well as asked: it says what and why."""

    message: str
    type: ClassVar[Literal["warning"]] = "warning"
