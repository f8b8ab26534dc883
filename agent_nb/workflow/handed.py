"""A builder's own step, at both ends: what it takes (``TakesTheInput``) and what it hands on.

A builder's step (a concurrent dispatch, a group chat's manager, a sub-workflow's node) takes the
run's input in any form. It is not an agent, yet what it hands on (``ConversationSoFar``) should
be read like another agent's answer: ``full`` keeps the whole conversation,
``last_agent`` the last speaker's words (the trailing messages of one role and author),
``custom`` what its filter keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..conversation import Conversation
from ..messages import AgentResponse, Message
from .agent_executor import AgentExecutorResponse
from .executor import Executor, WorkflowContext, handler

__all__ = ["ConversationSoFar", "TakesTheInput", "conversation_so_far"]


class TakesTheInput(Executor):
    """A builder's step that takes the run's input in any form — a text, a message, a list of messages.

    Subclasses define ``take(messages, ctx)``; a text becomes one ``user`` message.
    """

    @handler
    async def from_text(self, text: str, ctx: WorkflowContext[Any, Any]) -> None:
        await self.take([Message("user", text)], ctx)

    @handler
    async def from_message(self, message: Message, ctx: WorkflowContext[Any, Any]) -> None:
        await self.take([message], ctx)

    @handler
    async def from_messages(self, messages: list[Message], ctx: WorkflowContext[Any, Any]) -> None:
        await self.take(list(messages), ctx)

    async def take(self, messages: list[Message], ctx: WorkflowContext[Any, Any]) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class ConversationSoFar(AgentExecutorResponse):
    """The conversation a builder's step hands on; its "reply" is the last speaker's words."""

    def describe(self) -> str:
        n = len(self.full_conversation or ())
        return f"the conversation so far ({n} message{'' if n == 1 else 's'}, from {self.executor_id})"


def conversation_so_far(messages: Sequence[Message] | Conversation, by: str) -> ConversationSoFar:
    """``messages`` as handed on by ``by``: one shared conversation, nothing copied per receiver."""
    conversation = messages if messages.__class__ is Conversation else Conversation(list(messages))
    last = conversation[-1]
    start = len(conversation) - 1
    while start > 0 and (conversation[start - 1].role, conversation[start - 1].author_name) == (
        last.role,
        last.author_name,
    ):
        start -= 1
    return ConversationSoFar(by, AgentResponse(conversation[start:]), conversation)
