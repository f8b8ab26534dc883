"""What a harness shows: one turn's run view beside the user's chat, and harnesses side by side.

These are the objects; the display layer draws them (``agent_nb.display.harness``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError
from ..rendering import Displayable
from ..trace.text import message_line

if TYPE_CHECKING:
    from .harness import Harness

__all__ = ["Comparison", "HarnessView"]


class HarnessView(Displayable):
    """The run view of one harness turn, with the user's chat as its first column.

    ``options`` go to the run view (``theme``, ``max_messages``, ...).
    """

    def __init__(self, harness: Harness, *, turn: int | None = None, **options: Any) -> None:
        turns = harness.turns
        if not turns:
            raise ValueError(f"{harness!r} has no turns yet: send() something first")
        index = len(turns) - 1 if turn is None else turn
        if not -len(turns) <= index < len(turns):
            raise IndexError(f"turn {turn} does not exist: there are {len(turns)} turns (0 to {len(turns) - 1})")
        self.harness = harness
        self.index = index % len(turns)
        self.options = options

    def html(self) -> str:
        """The view as an HTML fragment."""
        return self._repr_html_()

    def to_text(self) -> str:
        turn = self.harness.turns[self.index]
        return f"{turn.to_text()}\n{turn.result.trace.to_text()}"

    def __repr__(self) -> str:
        return f"HarnessView({self.harness!r}, turn={self.index + 1})"


class Comparison(Displayable):
    """Harnesses side by side: each one's chat, and the gaps found in it."""

    def __init__(self, *harnesses: Harness) -> None:
        if not harnesses:
            raise ArgumentError("compare() needs at least one harness", argument="harnesses")
        self.harnesses = harnesses

    def to_text(self) -> str:
        blocks = []
        for h in self.harnesses:
            lines = [f"{h.workflow.name} · {type(h).__name__}"]
            lines += ["  " + message_line(m, 96) for m in h.transcript]
            gaps = h.gaps()
            lines.append(f"  gaps: {', '.join(gaps.kinds()) or 'none'}")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    def html(self) -> str:
        """The comparison as an HTML fragment."""
        return self._repr_html_()
