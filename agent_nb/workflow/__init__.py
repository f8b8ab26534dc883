"""The workflow engine: executors, edges, supersteps, events, checkpoints, and the agent executor."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .agent_executor import (
    CONTEXT_MODES,
    AgentExecutor,
    AgentExecutorOptions,
    AgentExecutorRequest,
    AgentExecutorResponse,
    ContextFilter,
    ContextMode,
    TurnToken,
)
from .builder import WorkflowBuilder
from .concurrent import ConcurrentBuilder
from .edges import Edge, EdgeGroup
from .events import (
    CheckpointSaved,
    ExecutorCompleted,
    ExecutorFailed,
    ExecutorInvoked,
    IntermediateEvent,
    OutputEvent,
    RequestInfoEvent,
    SuperstepCompleted,
    SuperstepStarted,
    WorkflowCompleted,
    WorkflowEvent,
    WorkflowFailed,
    WorkflowStarted,
    WorkflowWarning,
)
from .executor import Executor, FunctionExecutor, WorkflowContext, executor, handler
from .group_chat import GroupChatBuilder, ModelManager, round_robin, said
from .handoff import HandoffBuilder
from .nested import WorkflowAgent, WorkflowExecutor
from .orchestrations import SequentialBuilder
from .requests import PendingRequest, RequestResponse
from .result import RunResult
from .stream import WorkflowRunStream
from .workflow import Workflow

if TYPE_CHECKING:
    from .checkpoints import (
        Checkpoint,
        CheckpointInfo,
        CheckpointStorage,
        FileCheckpointStorage,
        InMemoryCheckpointStorage,
        SQLiteCheckpointStorage,
    )

# Checkpoints are loaded on first use: a workflow without them does not pay for hashing and files.
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    dict.fromkeys(
        [
            "Checkpoint",
            "CheckpointInfo",
            "CheckpointStorage",
            "FileCheckpointStorage",
            "InMemoryCheckpointStorage",
            "SQLiteCheckpointStorage",
        ],
        "checkpoints",
    ),
)


__all__ = [
    "AgentExecutor",
    "AgentExecutorOptions",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "CONTEXT_MODES",
    "Checkpoint",
    "CheckpointInfo",
    "CheckpointSaved",
    "CheckpointStorage",
    "ConcurrentBuilder",
    "ContextFilter",
    "ContextMode",
    "Edge",
    "EdgeGroup",
    "Executor",
    "ExecutorCompleted",
    "ExecutorFailed",
    "ExecutorInvoked",
    "FileCheckpointStorage",
    "FunctionExecutor",
    "GroupChatBuilder",
    "HandoffBuilder",
    "InMemoryCheckpointStorage",
    "IntermediateEvent",
    "ModelManager",
    "OutputEvent",
    "PendingRequest",
    "RequestInfoEvent",
    "RequestResponse",
    "RunResult",
    "SQLiteCheckpointStorage",
    "SequentialBuilder",
    "SuperstepCompleted",
    "SuperstepStarted",
    "TurnToken",
    "Workflow",
    "WorkflowAgent",
    "WorkflowBuilder",
    "WorkflowCompleted",
    "WorkflowContext",
    "WorkflowEvent",
    "WorkflowExecutor",
    "WorkflowFailed",
    "WorkflowRunStream",
    "WorkflowStarted",
    "WorkflowWarning",
    "executor",
    "handler",
    "round_robin",
    "said",
]
