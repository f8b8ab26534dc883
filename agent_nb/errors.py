"""The one error tree of agent_nb.

```
AgentNbError
├── UsageError                  the API was misused; the message says how to fix it
│   ├── WorkflowValidationError a graph that cannot run (raised by ``build()``)
│   ├── InputTypeError          a message no handler of the executor accepts (also a TypeError)
│   └── WorkflowBusyError       a workflow asked to run while it is already running
└── RunError                    a run failed; nothing it held was kept
    ├── StepFailed              an executor raised inside a superstep
    ├── ModelError              a chat client failed
    │   └── ScriptExhausted     a ScriptedChatClient was asked for more replies than it had
    └── BudgetExceeded          a run hit a limit
        └── SuperstepLimitExceeded
```

Bad argument values (an unknown role, an unknown context mode) stay ``ValueError``
and ``TypeError``, as in the standard library. Errors never log when created.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = [
    "AgentNbError",
    "BudgetExceeded",
    "InputTypeError",
    "ModelError",
    "RunError",
    "ScriptExhausted",
    "StepFailed",
    "SuperstepLimitExceeded",
    "UsageError",
    "WorkflowBusyError",
    "WorkflowValidationError",
]


class AgentNbError(Exception):
    """Root of every error agent_nb raises on purpose."""


class UsageError(AgentNbError):
    """The API was used in a way that cannot work; the message gives the fix."""


class WorkflowValidationError(UsageError, ValueError):
    """``WorkflowBuilder.build()`` found a graph that cannot run.

    ``executor_ids`` names the executors involved, so tools can point at them.
    """

    def __init__(self, message: str, *, executor_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.executor_ids = executor_ids


class InputTypeError(UsageError, TypeError):
    """An executor was handed a message type none of its handlers accepts."""

    def __init__(self, message: str, *, executor_id: str, accepted: tuple[str, ...]) -> None:
        super().__init__(message)
        self.executor_id = executor_id
        self.accepted = accepted


class WorkflowBusyError(UsageError):
    """A workflow was asked to run while a run of it is still in progress."""


class RunError(AgentNbError):
    """A run failed. ``result`` holds its events and trace up to the failure, if any."""

    result: Any = None


class StepFailed(RunError):
    """An executor raised during a superstep; the original error is ``__cause__``."""

    def __init__(self, message: str, *, executor_id: str, superstep: int) -> None:
        super().__init__(message)
        self.executor_id = executor_id
        self.superstep = superstep


class ModelError(RunError):
    """A chat client could not produce a response."""


class ScriptExhausted(ModelError):
    """A ``ScriptedChatClient`` received more requests than it has replies."""

    def __init__(self, message: str, *, scripted: int, used: int) -> None:
        super().__init__(message)
        self.scripted = scripted
        self.used = used


class BudgetExceeded(RunError):
    """A run reached one of its limits."""


class SuperstepLimitExceeded(BudgetExceeded):
    """A workflow kept delivering messages past ``max_supersteps`` (a cycle that does not end)."""

    def __init__(self, message: str, *, limit: int, active: tuple[str, ...]) -> None:
        super().__init__(message)
        self.limit = limit
        self.active = active


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'writer'?"`` when a known name is close to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
