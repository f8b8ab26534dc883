"""The one error tree of agent_nb.

```
AgentNbError
├── UsageError                  the API was misused; the message says how to fix it
│   ├── ArgumentError           a bad argument: names it, the value given and what is accepted
│   │                           (also a TypeError and a ValueError)
│   ├── WorkflowValidationError a graph that cannot run (raised by ``build()``)
│   ├── InputTypeError          a message no handler of the executor accepts (also a TypeError)
│   ├── WorkflowBusyError       a workflow asked to run while it is already running
│   ├── RouteNotFoundError      a route name the router does not have (also a KeyError)
│   ├── ServiceManagedHistoryError  a route whose history lives on the service
│   ├── RouteIncompatibleError  a history the chosen route would reject
│   ├── RequestError            a response to a pending request: unknown id or wrong type
│   ├── CassetteError           a replayed request the cassette does not hold
│   └── RealModelCallBlocked    a real model called where calls are refused (tests)
├── CheckpointError             a checkpoint that cannot be written, read or resumed
├── HistoryError                a history store that cannot be read or written (a full disk, a read-only file)
└── RunError                    a run failed; nothing it held was kept
    ├── StepFailed              an executor raised inside a superstep
    ├── ModelError              a chat client failed (``retryable`` says whether another try may work)
    │   ├── ModelRateLimited, ModelTimeout, ModelUnavailable   retryable
    │   ├── ModelBadRequest     the server refused the request; its message is kept
    │   ├── ScriptExhausted     a ScriptedChatClient was asked for more replies than it had
    │   ├── EmptyAnswer         the model answered nothing: no text, no tool call
    │   └── AllAttemptsFailed   every client of a fallback failed (also an ExceptionGroup)
    └── BudgetExceeded          a run hit a limit
        ├── SuperstepLimitExceeded
        ├── ToolRoundsExceeded
        └── ToolTimeout         a tool did not finish within its timeout
```

A bad argument is an ``ArgumentError``, raised where the argument is given (at
construction, not at the first run); it is also a ``TypeError`` and a ``ValueError``, so
code that catches those, as for the standard library, keeps working. Errors never log
when created.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping
from typing import Any

if sys.version_info < (3, 11):  # pragma: no cover - Python 3.10
    from exceptiongroup import ExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "AgentNbError",
    "AllAttemptsFailed",
    "ArgumentError",
    "BudgetExceeded",
    "CassetteError",
    "CheckpointError",
    "EmptyAnswer",
    "HistoryError",
    "InputTypeError",
    "ModelBadRequest",
    "ModelError",
    "ModelRateLimited",
    "ModelTimeout",
    "ModelUnavailable",
    "RealModelCallBlocked",
    "RequestError",
    "RouteIncompatibleError",
    "RouteNotFoundError",
    "RunError",
    "ScriptExhausted",
    "ServiceManagedHistoryError",
    "StepFailed",
    "SuperstepLimitExceeded",
    "ToolRoundsExceeded",
    "ToolTimeout",
    "UsageError",
    "WorkflowBusyError",
    "WorkflowValidationError",
    "bad_argument",
    "did_you_mean",
]


class AgentNbError(Exception):
    """Root of every error agent_nb raises on purpose."""


class UsageError(AgentNbError):
    """The API was used in a way that cannot work; the message gives the fix."""


class ArgumentError(UsageError, TypeError, ValueError):
    """An argument agent_nb cannot take; ``bad_argument`` writes the message."""

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


def bad_argument(where: str, argument: str, value: Any, accepted: str, fix: str = "") -> ArgumentError:
    """``ChatAgent 'planner': max_tool_rounds='3' (a str) is not accepted; give an int >= 0``.

    ``where`` names what received it (the executor, route, session, or the class), ``accepted``
    says what would be, ``fix`` what to do when that is not obvious. The value is shown short.
    """
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:79] + "…"
    message = f"{where}: {argument}={shown} ({type(value).__name__}) is not accepted; {accepted}"
    return ArgumentError(message + (f"; {fix}" if fix else ""), argument=argument)


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


class CheckpointError(AgentNbError):
    """A checkpoint cannot be written, read or resumed; the message names it and says why.

    Nothing is changed when it is raised: no executor, session or storage is touched.
    """

    def __init__(self, message: str, *, checkpoint_id: str | None = None) -> None:
        super().__init__(message)
        self.checkpoint_id = checkpoint_id


class HistoryError(AgentNbError):
    """A history provider could not read or write its store; the message names it, says why and what to do.

    Nothing is half written: a turn (or a run's turns) is written whole or not at all.
    """


class CassetteError(UsageError):
    """A replayed request that the cassette does not hold: missing, used up, or different from the recording."""


class RealModelCallBlocked(UsageError):
    """A real model was called where calls are refused (a test, a notebook under test)."""


class RequestError(UsageError):
    """A response does not fit a pending request: an unknown id, a value of the wrong type, one answered already.

    ``answered`` holds the record of the earlier answer (``at``, ``by``) when there was one.
    """

    def __init__(self, message: str, *, answered: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.answered = answered


class RouteNotFoundError(UsageError, KeyError):
    """A route name the routing client does not have; ``routes`` lists those it has."""

    def __init__(self, message: str, *, route: str, routes: tuple[str, ...]) -> None:
        super().__init__(message)
        self.route = route
        self.routes = routes

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class ServiceManagedHistoryError(UsageError):
    """A client whose conversation lives on the service was registered as a route."""


class RouteIncompatibleError(UsageError):
    """The conversation holds something the chosen route would reject; ``problems`` says what and where."""

    def __init__(self, message: str, *, route: str, problems: tuple[Any, ...]) -> None:
        super().__init__(message)
        self.route = route
        self.problems = problems


class ModelError(RunError):
    """A chat client could not produce a response."""

    retryable = False
    """Whether trying again (or another client) may succeed."""


class ModelRateLimited(ModelError):
    """The server asked to slow down (HTTP 429)."""

    retryable = True


class ModelTimeout(ModelError):
    """The server did not answer in time."""

    retryable = True


class ModelUnavailable(ModelError):
    """The server could not be reached, or failed on its side (HTTP 5xx)."""

    retryable = True


class ModelBadRequest(ModelError):
    """The server refused the request (HTTP 4xx); the message carries the server's words."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ScriptExhausted(ModelError):
    """A ``ScriptedChatClient`` received more requests than it has replies."""

    def __init__(self, message: str, *, scripted: int, used: int) -> None:
        super().__init__(message)
        self.scripted = scripted
        self.used = used


class EmptyAnswer(ModelError):
    """The model's answer had nothing in it: no text and no tool call."""


class BudgetExceeded(RunError):
    """A run reached one of its limits."""


class ToolRoundsExceeded(BudgetExceeded):
    """A model kept calling tools for more rounds than its agent allows."""


class ToolTimeout(BudgetExceeded):
    """A tool did not finish within its ``timeout`` (or its agent's ``tool_timeout``); the turn ended there."""

    def __init__(self, message: str, *, tool: str, timeout: float) -> None:
        super().__init__(message)
        self.tool = tool
        self.timeout = timeout


class SuperstepLimitExceeded(BudgetExceeded):
    """A workflow kept delivering messages past ``max_supersteps`` (a cycle that does not end)."""

    def __init__(self, message: str, *, limit: int, active: tuple[str, ...]) -> None:
        super().__init__(message)
        self.limit = limit
        self.active = active


class AllAttemptsFailed(ExceptionGroup, ModelError):  # type: ignore[misc]
    """Every client of a ``FallbackChatClient`` failed; ``exceptions`` holds each attempt's error, in order."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'writer'?"`` when a known name is close to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
