"""``HandoffBuilder``: a triage agent answers, or hands the conversation to a specialist with a tool call.

```
          ┌─[handoff_to_billing]──> billing ─┐
triage ───┼─[handoff_to_travel]───> travel  ─┼─> the output
          └─[answered itself]─────> reply   ─┘
```

The triage agent runs as a copy of yours that also has one hand-off tool per specialist (its
description says who the specialist is); calling one ends its turn. What the specialist then
receives is a setting, applied as its context filter, so the trace shows what it was given and
what it was not: ``"all"`` (the whole conversation, without the hand-off's own call and result),
``"since_handoff"`` (from the user's last message on) or a filter of your own. The filter is named
after the setting, so the trace and the graph say what was chosen: ``custom(all)``,
``custom(since_handoff)``, or ``custom(<your filter's name>)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Union

from ..agents import ChatAgent
from ..errors import ArgumentError, bad_argument
from ..messages import Message
from .agent_executor import AgentExecutor, AgentExecutorResponse
from .builder import WorkflowBuilder
from .executor import Executor, WorkflowContext, handler
from .orchestrations import Answering, agent_participants, as_agent_executors, free_id
from .workflow import Workflow

if TYPE_CHECKING:
    from ..tools import FunctionTool
    from .checkpoints import CheckpointStorage

__all__ = ["HANDOFF_PREFIX", "HandoffBuilder", "handed_to"]

HANDOFF_PREFIX = "handoff_to_"
HandoffContext = Union[Literal["all", "since_handoff"], Callable[[list[Message]], list[Message]]]  # noqa: UP007


def handed_to(response: AgentExecutorResponse) -> str | None:
    """The tool name of the hand-off an answer made (its last one), or ``None`` if it answered itself."""
    names = [
        c.name
        for m in response.agent_response.messages
        for c in m.contents
        if c.type == "function_call" and c.name.startswith(HANDOFF_PREFIX)
    ]
    return names[-1] if names else None


def without_handoff(messages: list[Message]) -> list[Message]:
    """The whole conversation, without the hand-off's own call and result."""
    calls = {
        c.call_id
        for m in messages
        for c in m.contents
        if c.type == "function_call" and c.name.startswith(HANDOFF_PREFIX)
    }
    return [m for m in messages if not _only_handoff(m, calls)]


def since_handoff(messages: list[Message]) -> list[Message]:
    """From the user's last message on (what the hand-off was about), without the hand-off's call and result."""
    kept = without_handoff(messages)
    last_user = max((i for i, m in enumerate(kept) if m.role == "user" and m.author_name is None), default=0)
    return kept[last_user:]


def _named(fn: Callable[[list[Message]], list[Message]], name: str) -> Callable[[list[Message]], list[Message]]:
    """``fn`` under the name of the setting that chose it (what the trace and the graph show)."""

    def chosen(messages: list[Message]) -> list[Message]:
        return fn(messages)

    chosen.__name__ = chosen.__qualname__ = name
    chosen.__doc__ = fn.__doc__
    return chosen


_SETTINGS = {"all": _named(without_handoff, "all"), "since_handoff": _named(since_handoff, "since_handoff")}


def _only_handoff(m: Message, calls: set[str]) -> bool:
    return bool(m.contents) and all(
        c.type in ("function_call", "function_result") and c.call_id in calls for c in m.contents
    )


class Reply(Executor):
    """The triage's own answer, when it handed nothing off: the run's output."""

    kind = "answer"

    @handler
    async def answered(self, response: AgentExecutorResponse, ctx: WorkflowContext[Any, Any]) -> None:
        await ctx.yield_output(response.agent_response)


class HandoffBuilder:
    """A triage agent that answers, or hands the conversation to one of its specialists.

    ``triage``: a ``ChatAgent``; it runs as a copy that also has a ``handoff_to_<specialist>``
    tool per specialist (yours is not changed). ``specialists``: agents (each given
    ``context``; a workflow used as an agent runs nested, in a ``WorkflowExecutor`` given it too) or
    ``AgentExecutor`` / ``WorkflowExecutor`` objects (used as they are, with their own mode).
    ``context``: what a specialist receives — ``"all"`` (the conversation without the hand-off's
    call and result, the default), ``"since_handoff"`` (from the user's last message on), or a
    filter ``list[Message] -> list[Message]``. The output is the specialist's answer, or the
    triage's when it handed nothing off; the triage's turn is an ``intermediate`` event.
    """

    def __init__(
        self,
        triage: ChatAgent,
        specialists: Sequence[Any],
        *,
        context: HandoffContext = "all",
        name: str = "handoff",
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        where = f"HandoffBuilder {name!r}"
        if not isinstance(triage, ChatAgent):
            raise bad_argument(
                where, "triage", triage, "give a ChatAgent (it is given one hand-off tool per specialist)"
            )
        self.specialists = agent_participants(where, specialists)
        if context not in ("all", "since_handoff") and not callable(context):
            raise bad_argument(
                where, "context", context, "give 'all', 'since_handoff' or a filter list[Message] -> list[Message]"
            )
        self.triage, self.context, self.name, self.checkpoint_storage = triage, context, name, checkpoint_storage
        self._where = where

    def _filter(self) -> Callable[[list[Message]], list[Message]]:
        if isinstance(self.context, str):
            return _SETTINGS[self.context]
        return self.context

    def build(self) -> Workflow:
        nodes = as_agent_executors(self._where, self.specialists, context_mode="custom", context_filter=self._filter())
        if self.triage.name in {n.id for n in nodes}:
            raise ArgumentError(
                f"{self._where}: the triage agent and a specialist are both named {self.triage.name!r}; "
                "give each its own name",
                argument="specialists",
            )
        tools = {_tool_name(n.id): n for n in nodes}
        if len(tools) < len(nodes):
            raise ArgumentError(
                f"{self._where}: two specialists' names make the same hand-off tool name "
                f"({', '.join(n.id for n in nodes)}); rename one",
                argument="specialists",
            )
        triage = AgentExecutor(self._triage_with([_handoff_tool(name, n) for name, n in tools.items()]))
        reply = Reply(free_id("reply", [triage, *nodes]))
        builder = WorkflowBuilder(
            start_executor=triage,
            name=self.name,
            output_from=[*nodes, reply],
            checkpoint_storage=self.checkpoint_storage,
        )
        for tool_name, node in tools.items():
            builder.add_edge(triage, node, _handed(tool_name), label=tool_name)
        builder.add_edge(triage, reply, _answered_itself, label="answered itself")
        return builder.build()

    def _triage_with(self, handoffs: list[FunctionTool]) -> ChatAgent:
        t = self.triage
        taken = {tool.name for tool in t.tools} & {h.name for h in handoffs}
        if taken:
            raise ArgumentError(
                f"{self._where}: the triage agent already has a tool named {sorted(taken)[0]!r}; rename it",
                argument="triage",
            )
        return ChatAgent(
            t.client,
            name=t.name,
            instructions=t.instructions,
            description=t.description,
            options=t.options,
            history=t.history,
            tools=[*t.tools, *handoffs],
            max_tool_rounds=t.max_tool_rounds,
            tool_timeout=t.tool_timeout,
        )


def _tool_name(specialist: str) -> str:
    return HANDOFF_PREFIX + (re.sub(r"\W+", "_", specialist).strip("_") or "specialist")


def _handoff_tool(name: str, specialist: Answering) -> FunctionTool:
    from ..tools import FunctionTool  # tools are loaded on first use, not with agent_nb

    about = getattr(getattr(specialist, "agent", specialist), "description", None)

    def handoff() -> str:
        return f"Handed over to {specialist.id}."

    description = f"Hand the conversation over to {specialist.id}" + (f": {about}" if about else ".")
    return FunctionTool(handoff, name=name, description=description, ends_turn=True)


def _handed(tool_name: str) -> Callable[[Any], bool]:
    def condition(response: Any) -> bool:
        return isinstance(response, AgentExecutorResponse) and handed_to(response) == tool_name

    condition.__name__ = tool_name
    return condition


def _answered_itself(response: Any) -> bool:
    return isinstance(response, AgentExecutorResponse) and handed_to(response) is None
