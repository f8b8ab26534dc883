"""Ready-made graph shapes: ``SequentialBuilder``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

from ..agents import SupportsAgentRun
from .agent_executor import AgentExecutor, ContextMode
from .builder import WorkflowBuilder
from .executor import Executor
from .workflow import Workflow

__all__ = ["SequentialBuilder"]

Participant = Union[SupportsAgentRun, Executor]  # noqa: UP007


class SequentialBuilder:
    """Participants one after another, each receiving what the one before it sent.

    With ``chain_only_agent_responses=True`` every agent executor uses ``"last_agent"``:
    each agent sees only its predecessor's reply, not the conversation so far.
    Agent executors passed in are configured in place.
    """

    def __init__(
        self,
        participants: Sequence[Participant],
        *,
        chain_only_agent_responses: bool = False,
        name: str = "sequential",
    ) -> None:
        if not participants:
            raise ValueError("SequentialBuilder needs at least one participant")
        self.participants = list(participants)
        self.chain_only_agent_responses = chain_only_agent_responses
        self.name = name

    def build(self) -> Workflow:
        mode: ContextMode = "last_agent" if self.chain_only_agent_responses else "full"
        nodes: list[Executor] = []
        for p in self.participants:
            node = p if isinstance(p, Executor) else AgentExecutor(p, context_mode=mode)
            if isinstance(node, AgentExecutor) and self.chain_only_agent_responses:
                node.context_mode = "last_agent"
            nodes.append(node)
        builder = WorkflowBuilder(start_executor=nodes[0], name=self.name)
        if len(nodes) > 1:
            builder.add_chain(nodes)
        return builder.build()
