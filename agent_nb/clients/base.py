"""The ``ChatClient`` protocol, what a client declares about itself, and the offline base.

Besides its two methods, every agent_nb client declares ``history_mode`` (who keeps the
conversation: ``"caller"`` sends it with every request, ``"service"`` keeps it on the
server behind an id) and ``capabilities`` (what a request to it may contain). Routing
reads both, through ``history_mode_of`` and ``capabilities_of``, which give other
clients the defaults: caller-managed, everything supported.
"""

from __future__ import annotations

import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

from ..errors import ServiceManagedHistoryError
from ..messages import ChatResponse, ChatResponseUpdate, Message, Usage, estimate_tokens

if TYPE_CHECKING:
    from ..sessions import AgentSession

__all__ = [
    "Capabilities",
    "ChatClient",
    "HistoryMode",
    "OfflineChatClient",
    "capabilities_of",
    "closing_stream",
    "history_mode_of",
    "provider_of",
    "refuse_service_managed",
]

T = TypeVar("T")

_WORDS = re.compile(r"\s*\S+|\s+")

HistoryMode = Literal["caller", "service"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a request to a client may contain; checked before a routed request is sent."""

    tool_calls: bool = True
    """Function calls and their results (tool messages)."""
    images: bool = True
    system_messages: bool = True
    context_window: int | None = None
    """Tokens the model reads at most (estimated); ``None`` for no limit known."""
    call_id_pattern: str | None = None
    """A regular expression every tool-call id must match, for providers that insist on a format."""
    trailing_tool_call: bool = False
    """Whether a request may end with a tool call that has no result yet."""


@runtime_checkable
class ChatClient(Protocol):
    """Anything that turns a list of messages into a model's answer.

    ``get_response`` returns the whole answer; ``get_streaming_response`` yields it in
    increments. ``options`` carries per-request settings (model, temperature, tools, ...);
    ``session`` is the conversation the request belongs to (a routing client reads its route).
    """

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse: ...

    def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]: ...


@contextlib.asynccontextmanager
async def closing_stream(stream: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """A client's stream that is closed however the ``async with`` around it is left.

    A stream left early (an error, a cancellation, a ``break``) is closed at once, not whenever
    the garbage collector gets to it, so its connection is released and nothing is said on stderr.
    """
    try:
        yield stream
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


def history_mode_of(client: object) -> HistoryMode:
    """The client's declared history mode; ``"caller"`` when it declares none."""
    mode = getattr(client, "history_mode", "caller")
    if mode not in ("caller", "service"):
        raise ValueError(f"{type(client).__name__}.history_mode must be 'caller' or 'service', not {mode!r}")
    return "service" if mode == "service" else "caller"


def provider_of(client: object, route: str | None = None) -> str | None:
    """Who serves ``client``'s requests, as it says (``provider``); for a router, the given route's client's."""
    routes = getattr(client, "routes", None)
    if route is not None and isinstance(routes, Mapping) and route in routes:
        client = routes[route]
    provider = getattr(client, "provider", None)
    return provider if isinstance(provider, str) else None


def refuse_service_managed(what: str, client: object) -> None:
    """Refuse ``client`` as a route (``what`` names it): its conversation lives on the service."""
    if history_mode_of(client) == "service":
        raise ServiceManagedHistoryError(
            f"{what} ({type(client).__name__}) keeps its conversation on the service, behind an id that "
            "no other route can use, so switching away from it would lose the history. Use it with "
            "caller-managed history instead (for OpenAIResponsesClient: store=False), or import the "
            "conversation first (agent_nb.clients.openai.import_conversation) and route from there."
        )


def capabilities_of(client: object) -> Capabilities:
    """The client's declared capabilities; everything supported when it declares none."""
    caps = getattr(client, "capabilities", None)
    return caps if isinstance(caps, Capabilities) else Capabilities()


class OfflineChatClient(ABC):
    """Base of the offline clients: subclasses implement ``reply``; streaming is word by word.

    Usage is estimated from the text (about four characters a token) so that token
    displays work offline. ``stream_delay`` (seconds between words) makes streaming
    visible in a notebook; it is 0 by default. ``capabilities`` and ``history_mode`` can be
    set to stand in for a real provider when teaching routing offline.
    """

    model: str = "offline"
    provider: str = "agent_nb.offline"

    def __init__(
        self,
        *,
        stream_delay: float = 0.0,
        capabilities: Capabilities | None = None,
        history_mode: HistoryMode = "caller",
    ) -> None:
        self.stream_delay = stream_delay
        self.capabilities = capabilities or Capabilities()
        self.history_mode = history_mode

    @abstractmethod
    async def reply(self, messages: list[Message], options: Mapping[str, Any]) -> Message | ChatResponse:
        """The answer to one request; a subclass's only duty."""

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        request = list(messages)
        answer = await self.reply(request, options or {})
        if isinstance(answer, ChatResponse):
            return answer
        usage = Usage(input_tokens=estimate_tokens(request), output_tokens=estimate_tokens([answer]))
        return ChatResponse([answer], model=self.model, usage=usage, finish_reason="stop")

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        import asyncio  # on use: importing agent_nb does not import asyncio

        response = await self.get_response(messages, options, session=session)
        last = len(response.messages) - 1
        previous: tuple[str, str | None, str | None] | None = None
        for i, message in enumerate(response.messages):
            message_id = message.message_id
            if previous == (message.role, message.author_name, message_id):
                message_id = f"{response.response_id or 'message'}-{i}"  # else the stream would join the two
            previous = (message.role, message.author_name, message_id)
            pieces: list[list[Any]] = [[p] for p in _WORDS.findall(message.text)]
            others = [c for c in message.contents if c.type != "text"]
            if others or not pieces:
                pieces.append(others)
            for j, contents in enumerate(pieces):
                final = i == last and j == len(pieces) - 1
                yield ChatResponseUpdate(
                    contents,
                    role=message.role,
                    author_name=message.author_name,
                    message_id=message_id,
                    model=response.model,
                    usage=response.usage if final else None,
                    finish_reason=response.finish_reason if final else None,
                )
                if not final:
                    await asyncio.sleep(self.stream_delay)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
