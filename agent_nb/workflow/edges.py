"""Edges of a workflow graph: direct (optionally conditional), fan-out and fan-in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Edge", "EdgeGroup"]

Condition = Callable[[Any], bool]
Selection = Callable[[Any, list[str]], Sequence[str]]


@dataclass(frozen=True, slots=True)
class Edge:
    """One source → target connection, as displays draw it."""

    source: str
    target: str
    kind: Literal["direct", "fan_out", "fan_in"] = "direct"
    condition: Condition | None = None
    label: str | None = None
    """How a conditional edge is labelled: the condition's name unless given."""
    group: int = 0
    """Edges added by one call share a group."""


@dataclass(frozen=True, slots=True)
class EdgeGroup:
    """What one ``add_*`` call created; the runner routes by groups."""

    kind: Literal["direct", "fan_out", "fan_in"]
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    condition: Condition | None = None
    selection: Selection | None = None
    label: str | None = None
    index: int = 0

    def edges(self) -> tuple[Edge, ...]:
        return tuple(
            Edge(s, t, self.kind, self.condition, self.label, self.index) for s in self.sources for t in self.targets
        )
