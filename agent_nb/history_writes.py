"""The history writes of one workflow run, held until the run completes.

An agent saves its turn as soon as the turn succeeds; inside a workflow run that turn is
only one part of the run. So while a run goes, the turns its agents save are held here
instead of written: an agent that loads the same session later in the run (a loop, a
shared session) sees them, and they reach their history providers only when the run
completes. A run that fails or is cancelled writes nothing, whatever store holds the
history. A run inside a run (a sub-workflow) hands its writes to the outer one.

Like the shared state, a turn saved in superstep *n* is seen by the other executors from
superstep *n + 1* on (the executor that saved it sees it at once): two agents of one
superstep that share a session each see the conversation as it was when the superstep
began, whichever finishes first, streamed or not. The turns of a superstep are kept in the
order its executors started, so the stored conversation does not depend on timing either.

```python
with holding() as writes:          # what the workflow runner does around a run
    token = writes.writer(step, rank)  # each executor's work in a superstep, in its own task
    ...                            # agents call hold() instead of provider.save()
    reset_writer(token)
await writes.commit()              # the run completed: write everything, provider by provider
```
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar, Token
from typing import Any

from .messages import Message
from .sessions import AgentSession

__all__ = ["HistoryWrites", "current", "holding", "reset_writer"]

_CURRENT: ContextVar[HistoryWrites | None] = ContextVar("agent_nb.history_writes", default=None)
_WRITER: ContextVar[_Writer | None] = ContextVar("agent_nb.history_writer", default=None)

_BEFORE = (-1, 0)
"""Where turns held outside any superstep go (before the run, or restored from a checkpoint): seen by all."""


class _Writer:
    """One executor's work in one superstep of one run: ``(step, rank)`` orders and scopes its turns."""

    __slots__ = ("place", "writes")

    def __init__(self, writes: HistoryWrites, place: tuple[int, int]) -> None:
        self.writes, self.place = writes, place


class HistoryWrites:
    """Turns saved during a run, per history provider and session, each with the place it was saved at."""

    __slots__ = ("_held", "_outer", "closed", "parent", "written")

    def __init__(self, parent: HistoryWrites | None = None) -> None:
        self.parent = parent
        outer = _WRITER.get()
        self._outer = outer.place if parent is not None and outer is not None and outer.writes is parent else None
        """The place of the outer run's executor this run works for: what it holds goes there."""
        self._held: dict[tuple[int, str], tuple[Any, AgentSession, list[tuple[tuple[int, int], list[Message]]]]] = {}
        self.closed = False
        """Set once the run is over: a task it started and that outlives it writes directly."""
        self.written: list[str] = []
        """What ``commit`` wrote before it failed (empty when it wrote all, or nothing)."""

    def writer(self, step: int, rank: int) -> Token[_Writer | None]:
        """Mark what is saved from now on (in this task) as the work of the ``rank``-th executor of superstep ``step``.

        The runner passes the token back to ``_WRITER.reset`` when that work is done (a plain
        call pair, not a context manager: it runs once per executor per superstep).
        """
        return _WRITER.set(_Writer(self, (step, rank)))

    def _place(self) -> tuple[int, int] | None:
        writer = _WRITER.get()
        return writer.place if writer is not None and writer.writes is self else None

    def hold(
        self, provider: Any, session: AgentSession, messages: Sequence[Message], place: tuple[int, int] | None = None
    ) -> None:
        """What ``provider.save(session, messages)`` would write, kept for the end of the run."""
        if not messages:
            return
        place = place or self._place() or _BEFORE
        key = (id(provider), session.session_id)
        entry = self._held.get(key)
        if entry is None:
            self._held[key] = (provider, session, [(place, list(messages))])
        else:
            entry[2].append((place, list(messages)))
            entry[2].sort(key=lambda chunk: chunk[0])  # stable: one executor's turns stay in their order

    def held(self, provider: Any, session: AgentSession, reader: tuple[int, int] | None = None) -> list[Message]:
        """The messages held for ``session`` in ``provider`` that the reader may see (by this run and those around it).

        The reader (by default, the executor now running) sees the turns of earlier supersteps
        and its own; outside a superstep, everything.
        """
        outer = self.parent.held(provider, session, self._outer) if self.parent is not None else []
        entry = self._held.get((id(provider), session.session_id))
        if entry is None:
            return outer
        reader = reader or self._place()
        seen = [ms for place, ms in entry[2] if reader is None or place[0] < reader[0] or place == reader]
        return [*outer, *(m for ms in seen for m in ms)]

    def entries(self) -> list[tuple[Any, AgentSession, list[Message]]]:
        """Every (provider, session, messages) held, in the order first saved; each session's turns in place order."""
        return [
            (provider, session, [m for _, ms in chunks for m in ms])
            for provider, session, chunks in self._held.values()
        ]

    @property
    def empty(self) -> bool:
        """Whether nothing is held (most runs: agents that keep no history); ``commit`` then only closes."""
        return not self._held

    async def commit(self) -> None:
        """Write what is held: to the run around this one, or to the providers.

        A provider with ``save_many`` (``SQLiteHistoryProvider``) writes all of the run's sessions
        in one transaction; others get one ``save`` per session, in the order first saved.
        """
        held = self.entries()
        self._held = {}
        self.closed = True
        if self.parent is not None:
            for provider, session, messages in held:
                self.parent.hold(provider, session, messages, self._outer)
            return
        by_provider: dict[int, tuple[Any, list[tuple[AgentSession, list[Message]]]]] = {}
        for provider, session, messages in held:
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
                self.written = done
                if hasattr(exc, "add_note"):
                    wrote = ", ".join(done) or "nothing"
                    exc.add_note(f"the run completed but its history could not all be written; written: {wrote}")
                raise
            if save_many is not None:
                done.extend(f"session {s.session_id!r} in {provider!r}" for s, _ in writes)


def reset_writer(token: Token[_Writer | None]) -> None:
    """End what ``HistoryWrites.writer`` began."""
    _WRITER.reset(token)


def current() -> HistoryWrites | None:
    """The writes of the run this code is part of, or ``None`` outside a workflow run (or once it is over)."""
    writes = _CURRENT.get()
    while writes is not None and writes.closed:
        writes = writes.parent
    return writes


class holding:  # lower case: used as a function, ``with holding() as writes:`` (a class: once per run)
    """Hold every history write made inside the ``with`` (and the tasks it starts) until ``commit()``."""

    __slots__ = ("_token", "_writes")

    def __enter__(self) -> HistoryWrites:
        self._writes = writes = HistoryWrites(_CURRENT.get())
        self._token = _CURRENT.set(writes)
        return writes

    def __exit__(self, *exc: object) -> None:
        self._writes.closed = True  # committed or dropped: nothing is held here any more
        _CURRENT.reset(self._token)
