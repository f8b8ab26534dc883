"""The workflow engine: executors, edges, supersteps, events, and the agent executor."""

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
    ExecutorCompleted,
    ExecutorFailed,
    ExecutorInvoked,
    OutputEvent,
    SuperstepCompleted,
    SuperstepStarted,
    WorkflowCompleted,
    WorkflowEvent,
    WorkflowFailed,
    WorkflowStarted,
)
from .executor import Executor, FunctionExecutor, WorkflowContext, executor, handler
from .orchestrations import SequentialBuilder
from .result import RunResult
from .workflow import Workflow, WorkflowRunStream

__all__ = [
    "CONTEXT_MODES",
    "AgentExecutor",
    "AgentExecutorOptions",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "ContextFilter",
    "ContextMode",
    "Edge",
    "EdgeGroup",
    "Executor",
    "ExecutorCompleted",
    "ExecutorFailed",
    "ExecutorInvoked",
    "FunctionExecutor",
    "OutputEvent",
    "RunResult",
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
    "executor",
    "handler",
]
