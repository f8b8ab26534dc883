"""What a harness keeps in the workflow's shared state, and ``Desk``, a part's access to it for one invocation.

Everything a harness keeps between turns (the user's chat, the turn, message ids, what the
conversation waits on, each part's own state) lives in the workflow's shared state under the
keys below, as immutable values. A harness passes the state into each turn's run and
keeps what comes back only when the turn succeeds, so a failed turn changes nothing.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message
from ..workflow import WorkflowContext

__all__ = ["CHAT", "IDS", "MODE", "SANDBOX", "SETTINGS", "TURN", "WAITING", "Desk"]

CHAT = "harness.chat"
"""The user's chat transcript: every message the user saw or wrote, in order."""
MODE = "harness.mode"
TURN = "harness.turn"
IDS = "harness.ids"
WAITING = "harness.waiting"
"""The question or card the conversation waits on, or ``None``."""
SANDBOX = "harness.sandbox"
SETTINGS = "harness.settings"


class Desk:
    """What a part may use while it handles one message."""

    __slots__ = ("ctx", "owner", "wrote")

    def __init__(self, ctx: WorkflowContext[Any, Any], owner: str) -> None:
        self.ctx = ctx
        self.owner = owner
        self.wrote: list[Message] = []

    @property
    def centralized(self) -> bool:
        return bool(self.ctx.get_state(MODE) == "centralized")

    @property
    def turn(self) -> int:
        return int(self.ctx.get_state(TURN, 0))

    def setting(self, name: str, default: Any = None) -> Any:
        return self.ctx.get_state(SETTINGS, {}).get(name, default)

    def new_id(self, kind: str) -> str:
        """A message or call id that is the same on every run: ``t2.m5`` is the fifth of turn 2."""
        n = self.ctx.get_state(IDS, 0) + 1
        self.ctx.set_state(IDS, n)
        return f"t{self.turn}.{kind}{n}"

    def write(self, message: Message) -> None:
        """Put ``message`` in the user's chat. Whether a part may write is the part's rule, not the desk's."""
        self.ctx.set_state(CHAT, (*self.ctx.get_state(CHAT, ()), message))
        self.wrote.append(message)

    def load(self, default: Any = None) -> Any:
        return self.ctx.get_state(self.owner, default)

    def save(self, value: Any) -> None:
        self.ctx.set_state(self.owner, value)

    def record(self, **fields: Any) -> None:
        """Record the invocation's active context for the trace (with its turn and what it wrote)."""
        self.ctx.record_context(turn=self.turn, wrote=tuple(self.wrote), **fields)
