"""Agents: what a workflow executor wraps.

``SupportsAgentRun`` is the structural protocol every agent meets. ``ChatAgent`` is the
agent agent_nb ships: instructions, a chat client, optionally a history provider and
function tools. With a history provider one turn is exactly:

1. the provider loads the session's conversation;
2. the agent puts it before this turn's input (after its instructions);
3. the client — a ``RoutingChatClient`` picks the session's route — gets the whole request;
4. tool calls are run and answered, round after round, up to ``max_tool_rounds`` (a forced
   ``tool_choice`` holds for the first round only, so the model can then answer);
5. the provider saves the turn's new messages, only once the turn succeeded.

A call of a tool that ``requires_approval`` is not run in step 4: the turn ends with a
``UserInputRequestContent`` per such call (its ``request_id`` is the call's id). The next
turn's input carries ``UserInputResponseContent(request_id=..., approved=...)``: approved
calls run, rejected ones are answered "rejected", and the model goes on from there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..clients.base import ChatClient
from ..errors import bad_argument
from ..messages import AgentResponse, AgentResponseUpdate, Message, to_messages
from ..sessions import AgentSession
from .turn import Turn

if TYPE_CHECKING:  # imported when an agent has a history or tools, not with agent_nb
    from ..history import ChatHistoryProvider
    from ..tools import FunctionTool

__all__ = ["ChatAgent", "SupportsAgentRun"]

AgentInput = str | Message | Iterable[str | Message] | None


@runtime_checkable
class SupportsAgentRun(Protocol):
    """What a workflow needs of an agent.

    ``run`` returns an awaitable ``AgentResponse``; with ``stream=True`` an async iterable
    of ``AgentResponseUpdate`` (an ``async def run`` that returns the iterable is accepted too).
    An agent that takes per-executor run arguments accepts the keywords ``client_kwargs``
    and ``function_invocation_kwargs``; they are passed only when a run sets them.
    """

    @property
    def name(self) -> str | None: ...

    def create_session(self) -> AgentSession: ...

    def run(self, messages: Any = None, *, session: AgentSession | None = None, stream: bool = False) -> Any: ...


class ChatAgent:
    """An agent made of instructions and a chat client, with optional history and tools.

    It sends its instructions (as a system message), the session's stored conversation
    and the messages it is given, and answers with messages whose ``author_name`` is its
    ``name``.

    ```python
    agent = ChatAgent(MirrorChatClient(), name="planner", instructions="Plan the trip.")
    response = await agent.run("Plan a weekend in Lisbon")
    ```

    Args:
        client: any ``ChatClient``; a ``RoutingChatClient`` to move between models.
        name: identifies the agent's messages (and its executor in a workflow).
        instructions: sent first in every request; never stored in the history.
        options: default request options (model, temperature, ...); ``client_kwargs`` win.
        history: where the session's conversation lives (``InMemoryHistoryProvider``,
            ``SQLiteHistoryProvider``); used by runs given a ``session=``. Without one, each
            run sees only what it is given.
        tools: functions (or ``FunctionTool``) the model may call.
        max_tool_rounds: how many rounds of tool calls one turn may take.
        tool_timeout: seconds a tool call may take, for tools without a ``timeout`` of their
            own; a call that takes longer ends the turn with ``ToolTimeout``. ``None``: no limit.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        name: str,
        instructions: str | None = None,
        description: str | None = None,
        options: Mapping[str, Any] | None = None,
        history: ChatHistoryProvider | None = None,
        tools: Iterable[Callable[..., Any] | FunctionTool] = (),
        max_tool_rounds: int = 8,
        tool_timeout: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise bad_argument("ChatAgent", "name", name, "give a non-empty str: it names the agent's messages")
        where = f"ChatAgent {name!r}"
        if not hasattr(client, "get_response"):
            raise bad_argument(where, "client", client, "give a chat client (one with get_response)")
        for argument, value in (("instructions", instructions), ("description", description)):
            if value is not None and not isinstance(value, str):
                raise bad_argument(where, argument, value, "give a str, or None")
        if options is not None and not isinstance(options, Mapping):
            raise bad_argument(where, "options", options, "give a dict of request options, such as {'temperature': 0}")
        if history is not None and not (hasattr(history, "load") and hasattr(history, "save")):
            raise bad_argument(where, "history", history, "give a history provider (async load() and save())")
        if isinstance(max_tool_rounds, bool) or not isinstance(max_tool_rounds, int) or max_tool_rounds < 1:
            raise bad_argument(where, "max_tool_rounds", max_tool_rounds, "give an int of at least 1")
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise bad_argument(where, "tools", tools, "give a list of functions or FunctionTools")
        from ..tools import check_timeout

        self.tool_timeout = check_timeout(where, "tool_timeout", tool_timeout)
        self.client = client
        self.name = name
        self.instructions = instructions
        self.description = description
        self.options: dict[str, Any] = dict(options or {})
        self.history = history
        self.tools: list[FunctionTool] = []
        if tools:
            from ..tools import as_tools

            self.tools = as_tools(tools)
        self.max_tool_rounds = max_tool_rounds
        self._tools_by_name: dict[str, FunctionTool] = {t.name: t for t in self.tools}
        self._system: Message | None = None

    def _system_message(self) -> list[Message]:
        """The instructions as a system message, the same object every turn (checks then see a known prefix)."""
        if not self.instructions:
            return []
        if self._system is None or self._system.text != self.instructions:
            self._system = Message("system", self.instructions)
        return [self._system]

    def create_session(self) -> AgentSession:
        return AgentSession()

    def run(
        self,
        messages: AgentInput = None,
        *,
        session: AgentSession | None = None,
        stream: bool = False,
        client_kwargs: Mapping[str, Any] | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
    ) -> Awaitable[AgentResponse] | AsyncIterator[AgentResponseUpdate]:
        """Answer ``messages``; with ``stream=True``, yield the answer as it is produced.

        ``client_kwargs`` are merged over ``options`` and reach the chat client;
        ``function_invocation_kwargs`` reach the ``**kwargs`` of the agent's tools.
        """
        turn = Turn(self, to_messages(messages), session, client_kwargs, function_invocation_kwargs)
        return turn.stream() if stream else turn.respond()

    def __repr__(self) -> str:
        extras = "".join(
            f", {k}={v!r}" for k, v in (("history", self.history), ("tools", [t.name for t in self.tools])) if v
        )
        return f"ChatAgent(name={self.name!r}, client={self.client!r}{extras})"
