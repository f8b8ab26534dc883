"""Sub-agents: orchestrators that another orchestrator calls as a component.

Each has its own orchestration context, instructions, planner and components. What
differs is the parent's conversation: a **child agent always** receives it — there is
no setting to leave it out — and a **connected agent** has ``include_parent_context``.
A parent conversation that still holds a request that looks unanswered makes the
sub-agent answer it again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .components import Component
from .orchestrator import Orchestrator

__all__ = ["ChildAgent", "ConnectedAgent"]


class ChildAgent(Orchestrator):
    """An agent inside its parent: it always receives the parent's conversation.

    ``answers_directly`` (default true): in a standard harness it writes its answers to the
    chat itself and returns ``responded``; otherwise it returns its ``response`` to the parent.
    """

    kind = "child agent"
    takes_parent_context = True

    def __init__(
        self,
        id: str,
        components: Iterable[Component],
        *,
        description: str,
        answers_directly: bool = True,
        **options: Any,
    ) -> None:
        if "include_parent_context" in options:
            raise TypeError(
                f"child agent {id!r}: a child agent always receives its parent's conversation; there is no "
                "include_parent_context setting. Use ConnectedAgent(..., include_parent_context=False) to "
                "leave the parent's conversation out."
            )
        super().__init__(id, components, description=description, **options)
        self.answers_directly = answers_directly


class ConnectedAgent(Orchestrator):
    """A separate agent its parent calls: its own orchestrator, instructions, tools and knowledge.

    ``include_parent_context`` (default true; see docs/context-distribution.md#connected-agent) decides whether
    the parent's conversation enters its context; the request and inputs always do.
    """

    kind = "connected agent"

    def __init__(
        self,
        id: str,
        components: Iterable[Component],
        *,
        description: str,
        include_parent_context: bool = True,
        answers_directly: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(id, components, description=description, **options)
        self.takes_parent_context = include_parent_context
        self.answers_directly = answers_directly

    @property
    def include_parent_context(self) -> bool:
        return self.takes_parent_context
