"""An Agent Framework chat client of scripted replies, made as Agent Framework asks custom clients to be made."""

from __future__ import annotations

from typing import Any

import agent_framework as maf


class ScriptedFrameworkClient(maf.FunctionInvocationLayer, maf.ChatMiddlewareLayer, maf.BaseChatClient):
    """Answers each request with the next of ``replies`` (Agent Framework messages); keeps what it got."""

    def __init__(self, replies: list[maf.Message], *, usage: dict[str, int] | None = None) -> None:
        super().__init__()
        self.replies = list(replies)
        self.usage = usage
        self.got: list[tuple[list[maf.Message], dict[str, Any]]] = []

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kwargs: Any) -> Any:
        self.got.append((list(messages), dict(options)))
        reply = self.replies.pop(0)
        if stream:

            async def updates() -> Any:
                for content in reply.contents:
                    yield maf.ChatResponseUpdate(contents=[content], role="assistant", model="scripted-af")
                if self.usage:
                    yield maf.ChatResponseUpdate(contents=[maf.Content.from_usage(self.usage)], role="assistant")

            return self._build_response_stream(updates())

        async def respond() -> maf.ChatResponse:
            return maf.ChatResponse(
                messages=[reply], model="scripted-af", usage_details=self.usage, finish_reason="stop"
            )

        return respond()
