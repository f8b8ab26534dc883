"""Ready-made graph shapes: ``SequentialBuilder``."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Literal, Union

from ..agents import SupportsAgentRun
from ..errors import ArgumentError, bad_argument
from ..messages import Message
from .agent_executor import AgentExecutor
from .builder import WorkflowBuilder
from .context_modes import ContextFilter, ContextMode
from .executor import Executor, WorkflowContext
from .handed import TakesTheInput
from .nested import WorkflowExecutor, node_for
from .workflow import Workflow

__all__ = ["ANSWERING", "Answering", "SequentialBuilder", "agent_participants", "as_agent_executors", "free_id"]

Participant = Union[SupportsAgentRun, Executor]  # noqa: UP007
Answering = Union[AgentExecutor, WorkflowExecutor]  # noqa: UP007
"""A node that answers as an agent does: an agent's, or a sub-workflow's (``workflow.as_agent()``)."""
ANSWERING = (AgentExecutor, WorkflowExecutor)
OutputFrom = Union[Literal["last", "all"], Sequence[Union[str, Participant]]]  # noqa: UP007


class InputToConversation(TakesTheInput):
    """The chain's first step when its first participant takes a conversation: the input as messages."""

    kind = "input"

    async def take(self, messages: list[Message], ctx: WorkflowContext[Any, Any]) -> None:
        await ctx.send_message(messages)


class SequentialBuilder:
    """Participants one after another, each receiving what the one before it sent.

    The run's output is the last participant's answer (``output_from="last"``); the answers
    before it are ``intermediate`` events, and stay in the trace. ``output_from="all"`` makes
    every participant's answer an output; a list of participants (or their ids) picks some.

    With ``chain_only_agent_responses=True`` each agent sees only its predecessor's reply, not
    the conversation so far: the agents given are wrapped in ``last_agent`` executors. An
    ``AgentExecutor`` given is used as it is (never changed); one whose mode is not
    ``last_agent`` is refused then, since the two settings disagree. A workflow used as an agent
    (``workflow.as_agent()``) runs nested, as a ``WorkflowExecutor`` in the same mode.

    A custom first participant that takes ``list[Message]`` gets the run's input as messages
    (a string becomes one user message), through a first step of kind ``input``.
    """

    def __init__(
        self,
        participants: Sequence[Participant],
        *,
        chain_only_agent_responses: bool = False,
        output_from: OutputFrom = "last",
        name: str = "sequential",
    ) -> None:
        if not participants:
            raise ValueError("SequentialBuilder needs at least one participant")
        if isinstance(output_from, str) and output_from not in ("last", "all"):
            raise ArgumentError(
                f"SequentialBuilder {name!r}: output_from={output_from!r}: give 'last' (the last participant's "
                "answer, the default), 'all', or a list of participants or their ids",
                argument="output_from",
            )
        self.participants = list(participants)
        self.chain_only_agent_responses = chain_only_agent_responses
        self.output_from = output_from
        self.name = name

    def build(self) -> Workflow:
        mode: ContextMode = "last_agent" if self.chain_only_agent_responses else "full"
        nodes: list[Executor] = []
        for p in self.participants:
            node = p if isinstance(p, Executor) else node_for(p, context_mode=mode)
            if self.chain_only_agent_responses and isinstance(node, ANSWERING) and node.context_mode != mode:
                raise ArgumentError(
                    f"SequentialBuilder {self.name!r}: executor {node.id!r} uses context_mode="
                    f"{node.context_mode!r}, and chain_only_agent_responses=True asks for 'last_agent': pass its "
                    "agent instead (it is then wrapped in last_agent), set its mode yourself, or leave "
                    "chain_only_agent_responses off; an executor you made is never changed",
                    argument="participants",
                )
            nodes.append(node)
        outputs = self._outputs(nodes)
        first = nodes[0]
        if not isinstance(first, AgentExecutor) and _takes_a_conversation(first):
            nodes.insert(0, InputToConversation(free_id("input", nodes)))
        builder = WorkflowBuilder(start_executor=nodes[0], name=self.name, output_from=outputs)
        if len(nodes) > 1:
            builder.add_chain(nodes)
        return builder.build()

    def _outputs(self, nodes: list[Executor]) -> list[Executor] | None:
        if self.output_from == "all":
            return None
        if self.output_from == "last":
            return [nodes[-1]]
        by_agent = {id(p): n for p, n in zip(self.participants, nodes, strict=True)}
        picked = []
        for item in self.output_from:
            node = next((n for n in nodes if n.id == item), None) if isinstance(item, str) else by_agent.get(id(item))
            if node is None:
                ids = ", ".join(n.id for n in nodes)
                raise ArgumentError(
                    f"SequentialBuilder {self.name!r}: output_from names {item!r:.60}, which is not a participant "
                    f"(participants: {ids})",
                    argument="output_from",
                )
            picked.append(node)
        return picked


def _takes_a_conversation(node: Executor) -> bool:
    """Whether a custom executor takes ``list[Message]`` but not the plain text a run usually starts with."""
    return node.can_handle([Message("user", "?")]) and not node.can_handle("?")


def free_id(wanted: str, nodes: Sequence[Executor]) -> str:
    """``wanted``, or ``wanted2``, ``wanted3``… if a participant has that id already."""
    taken = {n.id for n in nodes}
    if wanted not in taken:
        return wanted
    return next(f"{wanted}{i}" for i in itertools.count(2) if f"{wanted}{i}" not in taken)


def agent_participants(where: str, participants: Any) -> list[SupportsAgentRun | Answering]:
    """A builder's participants, each an agent or a node that answers (``AgentExecutor``, ``WorkflowExecutor``)."""
    if isinstance(participants, (str, bytes)) or not isinstance(participants, Sequence) or not participants:
        raise bad_argument(where, "participants", participants, "give a non-empty list of agents or AgentExecutors")
    for p in participants:
        if isinstance(p, Executor) and not isinstance(p, ANSWERING):
            raise bad_argument(
                where,
                "a participant",
                p,
                "give an agent, an AgentExecutor or a WorkflowExecutor (one that answers)",
            )
    return list(participants)


def as_agent_executors(
    where: str,
    participants: Sequence[SupportsAgentRun | Answering],
    *,
    context_mode: ContextMode | None = None,
    context_filter: ContextFilter | None = None,
) -> list[Answering]:
    """Agents wrapped in nodes of the mode given, nodes as they are; two with one id are refused.

    ``node_for`` wraps them: a workflow used as an agent runs nested, in a ``WorkflowExecutor``.
    """
    nodes = [
        p if isinstance(p, ANSWERING) else node_for(p, context_mode=context_mode, context_filter=context_filter)
        for p in participants
    ]
    ids = [n.id for n in nodes]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ArgumentError(
            f"{where}: two participants have the id {twice[0]!r}; give each agent its own name",
            argument="participants",
        )
    return nodes
