"""``FallbackChatClient``: the next client when one fails with a retryable error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ..clients.base import Capabilities, ChatClient, capabilities_of, closing_stream, refuse_service_managed
from ..errors import AllAttemptsFailed, ArgumentError, ModelError
from ..messages import ChatResponse, ChatResponseUpdate, Message
from ..sessions import AgentSession

__all__ = ["FallbackChatClient"]


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, ModelError):
        return exc.retryable
    return isinstance(exc, (ConnectionError, TimeoutError))


class FallbackChatClient:
    """Try ``primary``; on a retryable error, the next client, and so on.

    A streamed answer switches client only if the failure came before any output was
    yielded: what a user has seen is never replaced. When every client fails the error is
    ``AllAttemptsFailed``, an exception group of each attempt's error.

    Args:
        retry_on: a predicate on the error, or exception types; by default agent_nb's
            retryable model errors (rate limit, timeout, unavailable) and connection errors.
    """

    history_mode = "caller"

    def __init__(
        self,
        primary: ChatClient,
        *fallbacks: ChatClient,
        retry_on: Callable[[BaseException], bool] | tuple[type[BaseException], ...] | None = None,
    ) -> None:
        if not fallbacks:
            raise ArgumentError(
                "FallbackChatClient needs at least one fallback: FallbackChatClient(primary, backup)",
                argument="fallbacks",
            )
        self.clients: tuple[ChatClient, ...] = (primary, *fallbacks)
        for i, client in enumerate(self.clients):
            refuse_service_managed(f"fallback client {i}", client)
        if isinstance(retry_on, tuple):
            kinds = retry_on
            self.retry_on: Callable[[BaseException], bool] = lambda exc: isinstance(exc, kinds)
        else:
            self.retry_on = retry_on or _retryable

    @property
    def capabilities(self) -> Capabilities:
        """What every client accepts: a request may end up at any of them."""
        caps = [capabilities_of(c) for c in self.clients]
        windows = [c.context_window for c in caps if c.context_window is not None]
        patterns = sorted({c.call_id_pattern for c in caps if c.call_id_pattern is not None})
        return Capabilities(
            tool_calls=all(c.tool_calls for c in caps),
            images=all(c.images for c in caps),
            system_messages=all(c.system_messages for c in caps),
            context_window=min(windows) if windows else None,
            call_id_pattern="".join(f"(?=(?:{p})$)" for p in patterns) + ".*"
            if len(patterns) > 1
            else next(iter(patterns), None),
            trailing_tool_call=all(c.trailing_tool_call for c in caps),
        )

    def _give_up(self, errors: list[Exception]) -> AllAttemptsFailed:
        summary = "; ".join(f"{i}: {type(e).__name__}: {e}" for i, e in enumerate(errors))
        return AllAttemptsFailed(f"all {len(errors)} clients failed ({summary})", errors)

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        errors: list[Exception] = []
        for client in self.clients:
            try:
                return await client.get_response(messages, options, session=session)
            except Exception as exc:
                if not self.retry_on(exc):
                    raise
                errors.append(exc)
        raise self._give_up(errors)

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        errors: list[Exception] = []
        for client in self.clients:
            shown = False
            try:
                async with closing_stream(client.get_streaming_response(messages, options, session=session)) as ups:
                    async for update in ups:
                        shown = True
                        yield update
                return
            except Exception as exc:
                if shown or not self.retry_on(exc):
                    raise
                errors.append(exc)
        raise self._give_up(errors)

    def __repr__(self) -> str:
        return f"FallbackChatClient({', '.join(type(c).__name__ for c in self.clients)})"
