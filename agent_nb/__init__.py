"""agent_nb: build, see and test multi-agent systems in Jupyter.

```python
from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder

agents = [ChatAgent(MirrorChatClient(), name=n) for n in ("planner", "writer")]
result = await SequentialBuilder(participants=agents).build().run("Plan a weekend")
print(result.trace)
```
"""

from .agents import ChatAgent, SupportsAgentRun
from .clients import (
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
    BudgetExceeded,
    InputTypeError,
    ModelError,
    RunError,
    ScriptExhausted,
    StepFailed,
    SuperstepLimitExceeded,
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
from .nb import run_sync
from .sessions import AgentSession
from .trace import ContextSnapshot, Trace
from .workflow import (
    AgentExecutor,
    AgentExecutorOptions,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Executor,
    FunctionExecutor,
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

__version__ = "0.1.0"

__all__ = [
    "AgentExecutor",
    "AgentExecutorOptions",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "AgentNbError",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentSession",
    "BudgetExceeded",
    "ChatAgent",
    "ChatClient",
    "ChatResponse",
    "ChatResponseUpdate",
    "ContextSnapshot",
    "Conversation",
    "DataContent",
    "EchoChatClient",
    "Executor",
    "FunctionCallContent",
    "FunctionChatClient",
    "FunctionExecutor",
    "FunctionResultContent",
    "InputTypeError",
    "Message",
    "MirrorChatClient",
    "ModelError",
    "OfflineChatClient",
    "RunError",
    "RunResult",
    "ScriptExhausted",
    "ScriptedChatClient",
    "SequentialBuilder",
    "StepFailed",
    "SuperstepLimitExceeded",
    "SupportsAgentRun",
    "TextContent",
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
    "executor",
    "handler",
    "run_sync",
]
