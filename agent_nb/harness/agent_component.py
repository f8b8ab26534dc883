"""``AgentComponent``: any agent as a harness's connected agent.

A ``ConnectedAgent`` is an orchestrator of components, planned by the harness's rules. An
``AgentComponent`` puts an agent made elsewhere in the same place: a ``ChatAgent``, a workflow
used as an agent (``workflow.as_agent()``), an Agent Framework agent (``FrameworkAgent``). Called,
it runs the agent on the parent's conversation and the request (only the request with
``include_parent_context=False``), and answers as a connected agent does: in a standard harness it
writes its answer to the chat (``answers_directly``, the default) or returns it; in a centralised
one it proposes it and the orchestrator decides. Its snapshot holds what the agent was given, the
requests its model got, and a sub-workflow's own trace.
"""

from __future__ import annotations

from typing import Any

from ..agents.requests import recording
from ..errors import bad_argument
from ..messages import Message
from .calls import ComponentCall, ComponentResult
from .components import Component
from .orchestrator import RETURNED
from .state import Desk

__all__ = ["AgentComponent"]


class AgentComponent(Component):
    """Any agent (``name``, ``run``) as a connected agent of a harness.

    Args:
        agent: the agent; its name is the component's id unless ``id`` is given.
        description: what the orchestrator plans by; by default the agent's own description.
        include_parent_context: whether the parent's conversation comes before the request.
        answers_directly: in a standard harness, whether it writes its answer to the chat itself.
    """

    kind = "connected agent"

    def __init__(
        self,
        agent: Any,
        *,
        id: str | None = None,
        description: str | None = None,
        include_parent_context: bool = True,
        answers_directly: bool = True,
    ) -> None:
        if not callable(getattr(agent, "run", None)):
            raise bad_argument("AgentComponent", "agent", agent, "an agent (with run), such as workflow.as_agent()")
        name = id if id is not None else getattr(agent, "name", None)
        description = description if description is not None else getattr(agent, "description", None)
        if not description:
            raise bad_argument(
                f"AgentComponent {name!r}",
                "description",
                description,
                "a description: the orchestrator plans by it (the agent has none of its own)",
            )
        super().__init__(str(name), description=description, outputs=RETURNED)
        self.agent = agent
        self.takes_parent_context = include_parent_context
        self.answers_directly = answers_directly

    @property
    def include_parent_context(self) -> bool:
        return self.takes_parent_context

    def _given(self, call: ComponentCall) -> list[Message]:
        if not self.takes_parent_context:
            return [call.request]
        conversation = list(call.conversation)
        if all(m.message_id != call.request.message_id for m in conversation):
            conversation.append(call.request)
        return conversation

    async def answer(self, call: ComponentCall, desk: Desk) -> ComponentResult:
        given = self._given(call)
        with recording() as sent:
            response = await self.agent.run(given)
        ran = getattr(self.agent, "last_result", None)  # a workflow used as an agent: its own run
        text = response.text
        line = Message("assistant", [text], author_name=self.id, message_id=desk.new_id("m")) if text else None
        responded = line is not None and not desk.centralized and self.answers_directly
        if responded:
            desk.write(line)  # type: ignore[arg-type]
        desk.record(
            given=tuple(given),
            response=response,
            model_requests=tuple(sent),
            inner=getattr(ran, "trace", None),
        )
        outputs = {"response": text, "responded": responded}
        proposed = (line,) if line is not None and desk.centralized else ()
        wrote = (line.message_id or "",) if responded and line is not None else ()
        return self.result(call, outputs=outputs, proposed=proposed, wrote=wrote)

    def __repr__(self) -> str:
        return f"AgentComponent({self.id!r}, {self.agent!r})"
