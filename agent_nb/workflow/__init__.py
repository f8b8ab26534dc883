"""The workflow engine: executors, edges, supersteps, events, checkpoints, and the agent executor."""

import importlib
from typing import TYPE_CHECKING, Any

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
from .edges import Edge, EdgeGroup
from .events import (
    CheckpointSaved,
    ExecutorCompleted,
    ExecutorFailed,
    ExecutorInvoked,
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
from .orchestrations import SequentialBuilder
from .requests import PendingRequest, RequestResponse
from .result import RunResult
from .workflow import Workflow, WorkflowRunStream

if TYPE_CHECKING:
    from .checkpoint import Checkpoint
    from .checkpoint_files import FileCheckpointStorage
    from .checkpoint_storage import (
        CheckpointInfo,
        CheckpointStorage,
        InMemoryCheckpointStorage,
        SQLiteCheckpointStorage,
    )

# Checkpoints are loaded on first use: a workflow without them does not pay for hashing and files.
_LAZY = {
    "Checkpoint": "checkpoint",
    "CheckpointInfo": "checkpoint_storage",
    "CheckpointStorage": "checkpoint_storage",
    "FileCheckpointStorage": "checkpoint_files",
    "InMemoryCheckpointStorage": "checkpoint_storage",
    "SQLiteCheckpointStorage": "checkpoint_storage",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_nb.workflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


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
    "InMemoryCheckpointStorage",
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
    "WorkflowBuilder",
    "WorkflowCompleted",
    "WorkflowContext",
    "WorkflowEvent",
    "WorkflowFailed",
    "WorkflowRunStream",
    "WorkflowStarted",
    "WorkflowWarning",
    "executor",
    "handler",
]
