"""Chat clients across the bridge: an Agent Framework client in agent_nb, an agent_nb client in Agent Framework.

``FrameworkChatClient(af_client)`` is an agent_nb ``ChatClient``: a ``ChatAgent``, a route of a
``RoutingChatClient``, a cassette or an experiment can use it. It offers the agent's tools as
declarations only, so Agent Framework's function layer hands the calls back and agent_nb runs them.

``AgentNbChatClient(client)`` is an Agent Framework chat client made of any agent_nb client;
given a ``RoutingChatClient``, an Agent Framework agent gets routing that keeps each session's
route: the route lives in the Agent Framework session's ``state`` (so it is saved with it), the
whole conversation goes to whichever route is active, and the router's portability checks apply.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import agent_framework as af

from ...clients.base import Capabilities, closing_stream
from ...errors import bad_argument
from ...messages import ChatResponse, ChatResponseUpdate, Message
from ...sessions import AgentSession
from .convert import (
    Converted,
    Unsupported,
    messages_from_framework,
    messages_to_framework,
    response_from_framework,
    response_to_framework,
    update_from_framework,
    update_to_framework,
)

__all__ = ["AgentNbChatClient", "FrameworkChatClient", "options_from_framework", "options_to_framework"]

_SESSION = "agent_nb_session"
"""The option under which an Agent Framework agent's session reaches ``AgentNbChatClient``'s innermost layer."""
_RENAMED_TO_FRAMEWORK = {"parallel_tool_calls": "allow_multiple_tool_calls"}
_RENAMED_FROM_FRAMEWORK = {v: k for k, v in _RENAMED_TO_FRAMEWORK.items()}


def _schema(tool: Any) -> dict[str, Any]:
    """An agent_nb tool (a ``FunctionTool``, a schema dict, a function) as ``{"name", "description", "parameters"}``."""
    from ...tools import FunctionTool

    if isinstance(tool, FunctionTool):
        return tool.schema()
    if isinstance(tool, Mapping):
        return dict(tool.get("function", tool))
    return FunctionTool(tool).schema()


def options_to_framework(options: Mapping[str, Any]) -> dict[str, Any]:
    """agent_nb request options as Agent Framework's; tools become declarations (nothing for it to run)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "tools":
            out["tools"] = [
                af.FunctionTool(name=s["name"], description=s.get("description") or "", input_model=s["parameters"])
                for s in map(_schema, value)
            ]
        elif key == "tool_choice" and isinstance(value, Mapping):
            name = value.get("name") or value.get("function", {}).get("name")
            out["tool_choice"] = {"mode": "required", "required_function_name": name}
        else:
            out[_RENAMED_TO_FRAMEWORK.get(key, key)] = value
    return out


def options_from_framework(options: Mapping[str, Any], where: str) -> tuple[dict[str, Any], str | None]:
    """Agent Framework's request options as agent_nb's, and the instructions they carry (a system message)."""
    out: dict[str, Any] = {}
    instructions: str | None = None
    for key, value in options.items():
        if value is None:
            continue
        if key == "instructions":
            instructions = value
        elif key in ("store", "conversation_id") and value:
            raise bad_argument(
                where,
                f"options[{key!r}]",
                value,
                "a caller-kept conversation: agent_nb sends the whole conversation with every request",
                f"leave {key!r} unset (or False) for this client",
            )
        elif key == "tools":
            out["tools"] = [_declared(t, where) for t in value]
        elif key == "tool_choice" and isinstance(value, Mapping):
            name = value.get("required_function_name")
            out["tool_choice"] = {"name": name} if name else value.get("mode", "auto")
        elif key not in ("store", "conversation_id"):
            out[_RENAMED_FROM_FRAMEWORK.get(key, key)] = value
    return out, instructions


def _declared(tool: Any, where: str) -> dict[str, Any]:
    if isinstance(tool, af.FunctionTool):
        return {"name": tool.name, "description": tool.description, "parameters": tool.parameters()}
    if isinstance(tool, Mapping) and "name" in tool:
        return dict(tool)
    raise bad_argument(
        where, "a tool", tool, "a function tool: agent_nb clients call functions, not a service's hosted tools"
    )


class FrameworkChatClient:
    """An Agent Framework chat client as an agent_nb ``ChatClient``.

    Args:
        client: any Agent Framework chat client (``get_response(messages, stream=..., options=...)``).
        unsupported: what to do with answer contents agent_nb cannot hold (reasoning text, hosted
            tools' work): ``"refuse"`` (an error naming them) or ``"drop"`` (left out, counted in ``dropped``).
        capabilities: what a request to it may contain, for a router's checks.
    """

    def __init__(
        self, client: Any, *, unsupported: Unsupported = "refuse", capabilities: Capabilities | None = None
    ) -> None:
        if not callable(getattr(client, "get_response", None)):
            raise bad_argument("FrameworkChatClient", "client", client, "an Agent Framework chat client")
        if unsupported not in ("refuse", "drop"):
            raise bad_argument("FrameworkChatClient", "unsupported", unsupported, "'refuse' or 'drop'")
        self.client = client
        self.unsupported: Unsupported = unsupported
        self.capabilities = capabilities or Capabilities()
        self.model = str(getattr(client, "model", None) or getattr(client, "model_id", None) or type(client).__name__)
        self.history_mode = "service" if getattr(client, "STORES_BY_DEFAULT", False) else "caller"
        self.provider = str(getattr(client, "OTEL_PROVIDER_NAME", "agent_framework"))
        self.dropped: Counter[str] = Counter()
        """Answer contents left out so far, by Agent Framework content type (``unsupported="drop"``)."""

    def _seen(self, seen: Converted) -> None:
        self.dropped.update(seen.dropped)

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        answer = await self.client.get_response(
            messages_to_framework(messages), options=options_to_framework(options or {})
        )
        response, seen = response_from_framework(answer, unsupported=self.unsupported)
        self._seen(seen)
        return response

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        stream = self.client.get_response(
            messages_to_framework(messages), stream=True, options=options_to_framework(options or {})
        )
        async with closing_stream(aiter(stream)) as updates:
            async for update in updates:
                converted, seen = update_from_framework(update, unsupported=self.unsupported)
                self._seen(seen)
                yield converted

    def __repr__(self) -> str:
        return f"FrameworkChatClient({type(self.client).__name__}, model={self.model!r})"


class AgentNbChatClient(af.FunctionInvocationLayer[Any], af.ChatMiddlewareLayer[Any], af.BaseChatClient[Any]):
    """An agent_nb chat client (a ``RoutingChatClient`` above all) as an Agent Framework chat client.

    An Agent Framework agent built on it keeps each of its sessions on that session's route:
    ``client.set_active_route(af_session, "smart")`` moves the next turn, and the whole
    conversation (kept by the agent's history provider) goes to the new route. Its tools run in
    Agent Framework's function layer, its chat middleware applies, as with any of its clients.
    """

    OTEL_PROVIDER_NAME = "agent_nb"

    def __init__(self, client: Any, **kwargs: Any) -> None:
        if not callable(getattr(client, "get_response", None)):
            raise bad_argument("AgentNbChatClient", "client", client, "an agent_nb chat client")
        super().__init__(**kwargs)
        self.client = client
        self.model = getattr(client, "model", None)
        self._sessions: weakref.WeakKeyDictionary[af.AgentSession, AgentSession] = weakref.WeakKeyDictionary()
        self._system: Message | None = None

    def session_for(self, session: af.AgentSession) -> AgentSession:
        """The agent_nb session of an Agent Framework session: the same id, the very same ``state`` dict."""
        if not isinstance(session, af.AgentSession):
            raise bad_argument("AgentNbChatClient", "session", session, "an Agent Framework AgentSession")
        mine = self._sessions.get(session)
        if mine is None or mine.state is not session.state:
            mine = self._sessions[session] = AgentSession(session.session_id, session.state)
        return mine

    def _router(self) -> Any:
        if not hasattr(self.client, "set_active_route"):
            raise bad_argument(
                "AgentNbChatClient", "client", self.client, "a RoutingChatClient, to move a session between routes"
            )
        return self.client

    def set_active_route(self, session: af.AgentSession, name: str) -> None:
        """Send this Agent Framework session's next requests to route ``name``."""
        self._router().set_active_route(self.session_for(session), name)

    def get_active_route(self, session: af.AgentSession | None = None) -> str:
        return str(self._router().get_active_route(None if session is None else self.session_for(session)))

    def _request(self, messages: Sequence[Any], options: Mapping[str, Any], session: Any) -> tuple[Any, ...]:
        where = "AgentNbChatClient" + (f" (session {session.session_id!r})" if session is not None else "")
        request = messages_from_framework(messages)
        mine, instructions = options_from_framework(options, where)
        if instructions:
            if self._system is None or self._system.text != instructions:  # one object: a router sees a known prefix
                self._system = Message("system", instructions)
            request = [self._system, *request]
        return request, mine, None if session is None else self.session_for(session)

    def get_response(self, messages: Any, *, options: Any = None, client_kwargs: Any = None, **kwargs: Any) -> Any:
        """As any Agent Framework client's; the agent's session rides along in the options.

        The agent gives its session in ``client_kwargs``, and the chat middleware layer keeps it
        there for middleware only; the route is read from it below that layer.
        """
        session = (client_kwargs or {}).get("session")
        if isinstance(session, af.AgentSession):
            options = {**(options or {}), _SESSION: session}
        return super().get_response(messages, options=options, client_kwargs=client_kwargs, **kwargs)

    def _inner_get_response(
        self, *, messages: Sequence[Any], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Any:
        options = dict(options)
        session = options.pop(_SESSION, None) or kwargs.get("session")
        request, mine, session = self._request(messages, options, session)
        if stream:
            return self._build_response_stream(self._stream(request, mine, session))
        return self._respond(request, mine, session)

    async def _respond(self, request: list[Message], options: dict[str, Any], session: AgentSession | None) -> Any:
        return response_to_framework(await self.client.get_response(request, options, session=session))

    async def _stream(
        self, request: list[Message], options: dict[str, Any], session: AgentSession | None
    ) -> AsyncIterator[Any]:
        async with closing_stream(self.client.get_streaming_response(request, options, session=session)) as updates:
            async for update in updates:
                yield update_to_framework(update)

    def __repr__(self) -> str:
        return f"AgentNbChatClient({self.client!r})"
