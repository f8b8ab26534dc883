"""``AgentSession``: the state an agent keeps between runs, in a form that survives JSON."""

from __future__ import annotations

import json
import uuid
from typing import Any

from .errors import ArgumentError, bad_argument
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
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise bad_argument("AgentSession", "session_id", session_id, "give a non-empty str, or None for a new id")
        if state is not None and not isinstance(state, dict):
            raise bad_argument(
                f"AgentSession {session_id!r}", "state", state, "give a dict (JSON-ready values), or None"
            )
        self.session_id = session_id or uuid.uuid4().hex
        self.state: dict[str, Any] = {} if state is None else state

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy: ``{"session_id": ..., "state": {...}}``."""
        try:
            state = json.loads(json.dumps(self.state))
        except (TypeError, ValueError) as exc:
            raise ArgumentError(
                f"session {self.session_id!r} cannot be saved: its state is not JSON-serialisable ({exc}); "
                "keep only str, int, float, bool, None, lists and dicts in session.state",
                argument="state",
            ) from exc
        return {"session_id": self.session_id, "state": state}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSession:
        """Rebuild a session saved with ``to_dict()``."""
        if not isinstance(data, dict) or "session_id" not in data:
            raise bad_argument(
                "AgentSession.from_dict", "data", data, "give the dict that to_dict() returned, with a 'session_id'"
            )
        session_id, state = data["session_id"], data.get("state")
        if not isinstance(session_id, str) or not session_id:
            raise bad_argument(
                "AgentSession.from_dict", "session_id", session_id, "the saved id must be a non-empty str"
            )
        if state is not None and not isinstance(state, dict):
            raise bad_argument(
                f"AgentSession.from_dict {session_id!r}", "state", state, "the saved state must be a dict"
            )
        return cls(session_id, dict(state or {}))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentSession):
            return NotImplemented
        return self.session_id == other.session_id and self.state == other.state

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AgentSession({self.session_id!r}, state_keys={sorted(self.state)!r})"
