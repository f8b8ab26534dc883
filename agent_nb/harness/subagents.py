"""Sub-agents: orchestrators that another orchestrator calls as a component.

Each has its own orchestration context, instructions, planner and components, and returns
``response``, ``responded`` and the ``outputs`` it declares (values its components
returned during the call); with ``returns_plan=True`` its plan and reasoning too. What
differs is the parent's conversation: a **child agent always** receives it — there is
no setting to leave it out — and a **connected agent** has ``include_parent_context``.
A parent conversation that still holds a request that looks unanswered makes the
sub-agent answer it again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ArgumentError, bad_argument, did_you_mean
from .components import Component
from .orchestrator import Orchestrator

__all__ = ["ChildAgent", "ConnectedAgent"]

_OPTIONS = ("planner", "instructions", "inputs", "outputs", "returns_plan", "max_steps")
"""What a sub-agent passes on to its orchestrator."""


def _check_options(kind: str, id: str, options: dict[str, Any]) -> None:
    for name, value in options.items():
        if name not in _OPTIONS:
            raise bad_argument(
                f"{kind} {id!r}",
                name,
                value,
                f"a {kind} takes {', '.join(_OPTIONS)}, description and answers_directly"
                + did_you_mean(name, _OPTIONS),
            )


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
            raise ArgumentError(
                f"child agent {id!r}: a child agent always receives its parent's conversation; there is no "
                "include_parent_context setting. Use ConnectedAgent(..., include_parent_context=False) to "
                "leave the parent's conversation out.",
                argument="include_parent_context",
            )
        _check_options("child agent", id, options)
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
        _check_options("connected agent", id, options)
        super().__init__(id, components, description=description, **options)
        self.takes_parent_context = include_parent_context
        self.answers_directly = answers_directly

    @property
    def include_parent_context(self) -> bool:
        return self.takes_parent_context
