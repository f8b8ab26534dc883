"""``AgentSession``: the state an agent keeps between runs, in a form that survives JSON."""

from __future__ import annotations

import json
import uuid
from typing import Any

from .rendering import Displayable

__all__ = ["AgentSession"]


class AgentSession(Displayable):
    """One conversation's identity and state.

    ``state`` must stay JSON-serialisable, so a session can be saved with ``to_dict()`` and
    restored with ``from_dict()`` in another process. Pass one session to several
    executors to let them share it.
    """

    __slots__ = ("__weakref__", "session_id", "state")

    def __init__(self, session_id: str | None = None, state: dict[str, Any] | None = None) -> None:
        self.session_id = session_id or uuid.uuid4().hex
        self.state: dict[str, Any] = {} if state is None else state

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy: ``{"session_id": ..., "state": {...}}``."""
        try:
            state = json.loads(json.dumps(self.state))
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"session {self.session_id!r} cannot be saved: its state is not JSON-serialisable ({exc}); "
                "keep only str, int, float, bool, None, lists and dicts in session.state"
            ) from exc
        return {"session_id": self.session_id, "state": state}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSession:
        """Rebuild a session saved with ``to_dict()``."""
        if not isinstance(data, dict) or "session_id" not in data:
            raise ValueError("AgentSession.from_dict expects the dict that to_dict() returned, with a 'session_id'")
        return cls(str(data["session_id"]), dict(data.get("state") or {}))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentSession):
            return NotImplemented
        return self.session_id == other.session_id and self.state == other.state

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AgentSession({self.session_id!r}, state_keys={sorted(self.state)!r})"
