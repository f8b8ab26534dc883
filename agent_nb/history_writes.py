"""The history writes of one workflow run, held until the run completes.

An agent saves its turn as soon as the turn succeeds; inside a workflow run that turn is
only one part of the run. So while a run goes, the turns its agents save are held here
instead of written: an agent that loads the same session later in the run (a loop, a
shared session) sees them, and they reach their history providers only when the run
completes. A run that fails or is cancelled writes nothing, whatever store holds the
history. A run inside a run (a sub-workflow) hands its writes to the outer one.

```python
with holding() as writes:          # what the workflow runner does around a run
    ...                            # agents call hold() instead of provider.save()
await writes.commit()              # the run completed: write everything, provider by provider
```
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from .messages import Message
from .sessions import AgentSession

__all__ = ["HistoryWrites", "current", "holding"]

_CURRENT: ContextVar[HistoryWrites | None] = ContextVar("agent_nb.history_writes", default=None)


class HistoryWrites:
    """Turns saved during a run, per history provider and session, in the order they were saved."""

    __slots__ = ("_held", "closed", "parent")

    def __init__(self, parent: HistoryWrites | None = None) -> None:
        self.parent = parent
        self._held: dict[tuple[int, str], tuple[Any, AgentSession, list[Message]]] = {}
        self.closed = False
        """Set once the run is over: a task it started and that outlives it writes directly."""

    def hold(self, provider: Any, session: AgentSession, messages: Sequence[Message]) -> None:
        """What ``provider.save(session, messages)`` would write, kept for the end of the run."""
        if not messages:
            return
        key = (id(provider), session.session_id)
        entry = self._held.get(key)
        if entry is None:
            self._held[key] = (provider, session, list(messages))
        else:
            entry[2].extend(messages)

    def held(self, provider: Any, session: AgentSession) -> list[Message]:
        """The messages held for ``session`` in ``provider`` (by this run and the runs around it)."""
        outer = self.parent.held(provider, session) if self.parent is not None else []
        entry = self._held.get((id(provider), session.session_id))
        return [*outer, *entry[2]] if entry is not None else outer

    def entries(self) -> list[tuple[Any, AgentSession, list[Message]]]:
        """Every (provider, session, messages) held, in the order first saved."""
        return list(self._held.values())

    def __bool__(self) -> bool:
        return bool(self._held)

    async def commit(self) -> None:
        """Write what is held: to the run around this one, or to the providers.

        A provider with ``save_many`` (``SQLiteHistoryProvider``) writes all of the run's sessions
        in one transaction; others get one ``save`` per session, in the order first saved.
        """
        held, self._held = self._held, {}
        self.closed = True
        if self.parent is not None:
            for provider, session, messages in held.values():
                self.parent.hold(provider, session, messages)
            return
        by_provider: dict[int, tuple[Any, list[tuple[AgentSession, list[Message]]]]] = {}
        for provider, session, messages in held.values():
            by_provider.setdefault(id(provider), (provider, []))[1].append((session, messages))
        done: list[str] = []
        for provider, writes in by_provider.values():
            try:
                save_many = getattr(provider, "save_many", None)
                if save_many is not None:
                    await save_many(writes)
                else:
                    for session, messages in writes:
                        await provider.save(session, messages)
                        done.append(f"session {session.session_id!r} in {provider!r}")
            except BaseException as exc:
                if hasattr(exc, "add_note"):
                    wrote = ", ".join(done) or "nothing"
                    exc.add_note(f"the run completed but its history could not all be written; written: {wrote}")
                raise
            if save_many is not None:
                done.extend(f"session {s.session_id!r} in {provider!r}" for s, _ in writes)


def current() -> HistoryWrites | None:
    """The writes of the run this code is part of, or ``None`` outside a workflow run (or once it is over)."""
    writes = _CURRENT.get()
    while writes is not None and writes.closed:
        writes = writes.parent
    return writes


@contextlib.contextmanager
def holding() -> Iterator[HistoryWrites]:
    """Hold every history write made inside the ``with`` (and the tasks it starts) until ``commit()``."""
    writes = HistoryWrites(_CURRENT.get())
    token = _CURRENT.set(writes)
    try:
        yield writes
    finally:
        writes.closed = True  # committed or dropped: nothing is held here any more
        _CURRENT.reset(token)
