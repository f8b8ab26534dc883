"""agent_nb: build, see and test multi-agent systems in Jupyter.

```python
from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder

agents = [ChatAgent(MirrorChatClient(), name=n) for n in ("planner", "writer")]
result = await SequentialBuilder(participants=agents).build().run("Plan a weekend")
print(result.trace)
```
"""

import typing as _typing

from ._lazy import lazy_exports as _lazy_exports
from .agents import ChatAgent, SupportsAgentRun
from .clients import (
    Capabilities,
    ChatClient,
    EchoChatClient,
    FunctionChatClient,
    MirrorChatClient,
    OfflineChatClient,
    ScriptedChatClient,
)
from .conversation import Conversation
from .errors import (
    AgentNbError,
    AllAttemptsFailed,
    ArgumentError,
    BudgetExceeded,
    CassetteError,
    CheckpointError,
    EmptyAnswer,
    HistoryError,
    InputTypeError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
    RealModelCallBlocked,
    RequestError,
    RouteIncompatibleError,
    RouteNotFoundError,
    RunError,
    ScriptExhausted,
    ServiceManagedHistoryError,
    StepFailed,
    SuperstepLimitExceeded,
    ToolRoundsExceeded,
    ToolTimeout,
    UsageError,
    WorkflowBusyError,
    WorkflowValidationError,
)
from .messages import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    TextContent,
    UriContent,
    Usage,
    UserInputRequestContent,
    UserInputResponseContent,
)
from .sessions import AgentSession
from .sync import run_sync
from .trace import ContextSnapshot, Trace
from .workflow import (
    AgentExecutor,
    AgentExecutorOptions,
    AgentExecutorRequest,
    AgentExecutorResponse,
    ConcurrentBuilder,
    Executor,
    FunctionExecutor,
    GroupChatBuilder,
    HandoffBuilder,
    PendingRequest,
    RequestResponse,
    RunResult,
    SequentialBuilder,
    TurnToken,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowEvent,
    executor,
    handler,
)

if _typing.TYPE_CHECKING:
    from .history import ChatHistoryProvider, InMemoryHistoryProvider, SQLiteHistoryProvider
    from .routing import FallbackChatClient, RoutingChatClient, check_history, repair_history
    from .tools import FunctionTool, tool
    from .workflow.checkpoints import (
        CheckpointStorage,
        FileCheckpointStorage,
        InMemoryCheckpointStorage,
        SQLiteCheckpointStorage,
    )

__version__ = "0.1.0"

# Loaded on first use, so `from agent_nb import WorkflowBuilder` does not pay for SQLite,
# routing and tool schemas (see bench/: import time is one of the measured targets). For the
# same reason asyncio itself is imported where it is used, not at the top of a module.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    {
        "ChatHistoryProvider": "history",
        "InMemoryHistoryProvider": "history",
        "SQLiteHistoryProvider": "history",
        "FallbackChatClient": "routing",
        "RoutingChatClient": "routing",
        "check_history": "routing",
        "repair_history": "routing",
        "FunctionTool": "tools",
        "tool": "tools",
        "CheckpointStorage": "workflow.checkpoints",
        "FileCheckpointStorage": "workflow.checkpoints",
        "InMemoryCheckpointStorage": "workflow.checkpoints",
        "SQLiteCheckpointStorage": "workflow.checkpoints",
    },
)


__all__ = [
    "AgentExecutor",
    "AgentExecutorOptions",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "AgentNbError",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentSession",
    "AllAttemptsFailed",
    "ArgumentError",
    "BudgetExceeded",
    "Capabilities",
    "CassetteError",
    "ChatAgent",
    "ChatClient",
    "ChatHistoryProvider",
    "ChatResponse",
    "ChatResponseUpdate",
    "CheckpointError",
    "CheckpointStorage",
    "ConcurrentBuilder",
    "ContextSnapshot",
    "Conversation",
    "DataContent",
    "EchoChatClient",
    "EmptyAnswer",
    "Executor",
    "FallbackChatClient",
    "FileCheckpointStorage",
    "FunctionCallContent",
    "FunctionChatClient",
    "FunctionExecutor",
    "FunctionResultContent",
    "FunctionTool",
    "GroupChatBuilder",
    "HandoffBuilder",
    "HistoryError",
    "InMemoryCheckpointStorage",
    "InMemoryHistoryProvider",
    "InputTypeError",
    "Message",
    "MirrorChatClient",
    "ModelBadRequest",
    "ModelError",
    "ModelRateLimited",
    "ModelTimeout",
    "ModelUnavailable",
    "OfflineChatClient",
    "PendingRequest",
    "RealModelCallBlocked",
    "RequestError",
    "RequestResponse",
    "RouteIncompatibleError",
    "RouteNotFoundError",
    "RoutingChatClient",
    "RunError",
    "RunResult",
    "SQLiteCheckpointStorage",
    "SQLiteHistoryProvider",
    "ScriptExhausted",
    "ScriptedChatClient",
    "SequentialBuilder",
    "ServiceManagedHistoryError",
    "StepFailed",
    "SuperstepLimitExceeded",
    "SupportsAgentRun",
    "TextContent",
    "ToolRoundsExceeded",
    "ToolTimeout",
    "Trace",
    "TurnToken",
    "UriContent",
    "Usage",
    "UsageError",
    "UserInputRequestContent",
    "UserInputResponseContent",
    "Workflow",
    "WorkflowBuilder",
    "WorkflowBusyError",
    "WorkflowContext",
    "WorkflowEvent",
    "WorkflowValidationError",
    "__version__",
    "check_history",
    "executor",
    "handler",
    "repair_history",
    "run_sync",
    "tool",
]
