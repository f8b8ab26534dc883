"""Chat history providers: the source of truth for a session's conversation.

An agent with a history provider loads the session's conversation before each turn and
saves the turn's new messages after it succeeded; nothing is saved for a turn that
failed or was cancelled. Because the history lives with the caller, any route can be
given the whole conversation.

```python
history = SQLiteHistoryProvider("chats.sqlite")
agent = ChatAgent(router, name="assistant", history=history)
```
"""

from __future__ import annotations

import gc
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import TypeAdapter

from .disk import sqlite_problem
from .errors import HistoryError
from .messages import Message
from .sessions import AgentSession
from .sqlite import connect, transaction

__all__ = ["ChatHistoryProvider", "InMemoryHistoryProvider", "SQLiteHistoryProvider"]


@cache
def _messages() -> TypeAdapter[list[Message]]:
    """The validator of a list of messages, built on first use (not at import)."""
    return TypeAdapter(list[Message])


@contextmanager
def _collector_waits() -> Iterator[None]:
    """Hold the garbage collector back for one parse of a long history.

    The parse allocates tens of thousands of objects in one pydantic call; each allocation
    counts towards a collection that walks every live object. Nothing the parse builds can
    form a cycle, so the collector may as well wait until it returns.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse(rows: Sequence[str]) -> list[Message]:
    """Stored JSON rows back to messages, in one pydantic call (much faster than one call a row)."""
    if not rows:
        return []
    with _collector_waits():
        return _messages().validate_json("[" + ",".join(rows) + "]")


def _refuse_unencodable(stored: Any, where: str) -> None:
    r"""Refuse a stored history with a lone surrogate (``json.loads`` makes one of a cut ``\ud83d`` escape).

    Such a message could never be saved as JSON or sent to a model. Dicts are validated without
    the constructors' check, so it is made here, once per parse, by encoding in C.
    """
    try:
        json.dumps(stored, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        at = next(i for i, m in enumerate(stored) if _unencodable(m))
        raise HistoryError(
            f"{where}: message {at} holds a lone surrogate, which cannot be encoded as UTF-8, so it could never "
            "be sent; it often comes from cutting a JSON escape in two. Nothing was loaded: fix that message's "
            "text (text.encode('utf-8', 'replace').decode()) in session.state, or delete it"
        ) from None
    except (TypeError, ValueError):  # not plain JSON, though the validator took it: nothing to say here
        return


def _unencodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


@contextmanager
def _snapshot(db: Any) -> Iterator[None]:
    """One read transaction: what is read inside it is one state of the file (write-ahead log)."""
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")


@runtime_checkable
class ChatHistoryProvider(Protocol):
    """Loads a session's conversation; saves the new messages of a successful turn."""

    async def load(self, session: AgentSession) -> list[Message]: ...

    async def save(self, session: AgentSession, messages: Sequence[Message]) -> None: ...


class _Parsed:
    """The parsed messages of the last few sessions, so a turn does not re-read a whole history.

    Loads also return the same message objects turn after turn, which lets a router see at
    once that this turn's request extends the last one.
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._entries: dict[str, tuple[Any, list[Message]]] = {}

    def get(self, session_id: str) -> tuple[Any, list[Message]] | None:
        entry = self._entries.pop(session_id, None)
        if entry is not None:
            self._entries[session_id] = entry  # most recently used last
        return entry

    def put(self, session_id: str, key: Any, messages: list[Message]) -> None:
        self._entries.pop(session_id, None)
        self._entries[session_id] = (key, messages)
        while len(self._entries) > self.size:
            del self._entries[next(iter(self._entries))]

    def drop(self, session_id: str) -> None:
        self._entries.pop(session_id, None)


class InMemoryHistoryProvider:
    """History kept in the session's own state, so it travels with ``AgentSession.to_dict()``.

    Messages are stored as JSON-ready dicts under ``session.state[key]``; each save replaces
    the list rather than appending to it, so a state snapshot taken before a run stays valid.
    Replace the list (do not edit its dicts in place) to change a stored history.
    """

    def __init__(self, key: str = "history") -> None:
        self.key = key
        self._parsed = _Parsed()

    async def load(self, session: AgentSession) -> list[Message]:
        stored = session.state.get(self.key)
        if not stored:
            return []
        cached = self._parsed.get(session.session_id)
        if cached is not None and cached[0] == stored:  # the same dicts compare at once
            return list(cached[1])
        where = f"the history of session {session.session_id!r} under state[{self.key!r}]"
        try:
            with _collector_waits():
                messages = _messages().validate_python(stored)
        except ValueError as exc:
            raise HistoryError(
                f"{where} is not a list of messages ({exc.__class__.__name__}); it was probably written by "
                "something else. Nothing was loaded: replace session.state[...] with a valid history, or delete it"
            ) from exc
        _refuse_unencodable(stored, where)
        self._parsed.put(session.session_id, list(stored), messages)
        return list(messages)

    async def save(self, session: AgentSession, messages: Sequence[Message]) -> None:
        if not messages:
            return
        old = await self.load(session)
        stored = [*session.state.get(self.key, ()), *(m.model_dump(mode="json") for m in messages)]
        session.state[self.key] = stored
        self._parsed.put(session.session_id, list(stored), [*old, *messages])

    def __repr__(self) -> str:
        return f"InMemoryHistoryProvider(key={self.key!r})"


class SQLiteHistoryProvider:
    """Durable history in one SQLite file: many sessions, each isolated, one transaction per write.

    The file is opened durable (``agent_nb.sqlite``: write-ahead log, every commit synced), so a
    committed turn survives a crash or a power cut, and a new provider on the same path (or
    another process) sees every saved turn. Sessions are append-only: a load reads only the
    rows added since this provider last read the session, after checking that the last row
    it knows is still there (each save marks its rows), so a session deleted or rewritten by
    another provider or process is read again whole, never joined to what was read before.
    Calls are short and run on the event loop's thread; one provider may be shared by many agents.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._parsed = _Parsed()
        with self._store("open the history file"):
            db = connect(self.path, durable=True)
            try:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS agent_nb_messages ("
                    " session_id TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL, written TEXT,"
                    " PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
                )
                columns = [row[1] for row in db.execute("PRAGMA table_info(agent_nb_messages)")]
                if "written" not in columns:  # a file from before rows were marked
                    db.execute("ALTER TABLE agent_nb_messages ADD COLUMN written TEXT")
            except BaseException:
                db.close()
                raise
        self._db = db

    @contextmanager
    def _store(self, what: str) -> Iterator[None]:
        """The lock, and SQLite's errors as ``HistoryError``: its own words, the file, and what to do."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                otherwise = f"check that {self.path} is an SQLite file this process may read and write"
                raise HistoryError(
                    f"SQLiteHistoryProvider({str(self.path)!r}) could not {what}: "
                    f"{sqlite_problem(exc, self.path, 'the provider', otherwise)}; nothing was half written"
                ) from exc

    async def load(self, session: AgentSession) -> list[Message]:
        sid = session.session_id
        cached = self._parsed.get(sid)
        mark, known = cached if cached is not None else (None, [])
        with self._store(f"read session {sid!r}"), _snapshot(self._db):
            count, last = self._db.execute(
                "SELECT COUNT(*), (SELECT written FROM agent_nb_messages WHERE session_id = ?1 AND seq = ?2)"
                " FROM agent_nb_messages WHERE session_id = ?1",
                (sid, len(known) - 1),
            ).fetchone()
            if count < len(known) or (known and last != mark):  # deleted or rewritten elsewhere: read it again
                known = []
            rows = []
            if count > len(known):
                rows = self._db.execute(
                    "SELECT message, written FROM agent_nb_messages WHERE session_id = ? AND seq >= ? ORDER BY seq",
                    (sid, len(known)),
                ).fetchall()
        if rows:
            try:
                known = [*known, *_parse([r[0] for r in rows])]
            except ValueError as exc:
                raise HistoryError(
                    f"{self.path}: the stored history of session {sid!r} cannot be read as messages "
                    f"({exc.__class__.__name__}); was the file written by another program?"
                ) from exc
            mark = rows[-1][1]
        self._parsed.put(sid, mark, known)
        return list(known)

    async def save(self, session: AgentSession, messages: Sequence[Message]) -> None:
        await self.save_many([(session, messages)])

    async def save_many(self, writes: Sequence[tuple[AgentSession, Sequence[Message]]]) -> None:
        """Several sessions' new messages in one transaction: all of them are written, or none."""
        writes = [(s, list(ms)) for s, ms in writes if ms]
        if not writes:
            return
        mark = secrets.token_hex(8)
        ends = []
        with self._store(f"write {len(writes)} session(s)"), transaction(self._db) as db:
            for session, messages in writes:
                last, written = db.execute(
                    "SELECT seq, written FROM agent_nb_messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
                    (session.session_id,),
                ).fetchone() or (-1, None)
                db.executemany(
                    "INSERT INTO agent_nb_messages (session_id, seq, message, written) VALUES (?, ?, ?, ?)",
                    [(session.session_id, last + 1 + i, m.model_dump_json(), mark) for i, m in enumerate(messages)],
                )
                ends.append((last, written))
        for (session, messages), (last, written) in zip(writes, ends, strict=True):
            cached = self._parsed.get(session.session_id)
            # the cache was current (as long, and ending on the very row this write followed): extend it
            if cached is not None and len(cached[1]) == last + 1 and cached[0] == written:
                self._parsed.put(session.session_id, mark, [*cached[1], *messages])

    def sessions(self) -> list[str]:
        """The ids of the sessions with stored history."""
        with self._store("list its sessions"):
            return [r[0] for r in self._db.execute("SELECT DISTINCT session_id FROM agent_nb_messages ORDER BY 1")]

    def delete(self, session: AgentSession | str) -> int:
        """Forget one session's history; returns how many messages were removed."""
        session_id = session if isinstance(session, str) else session.session_id
        self._parsed.drop(session_id)
        with self._store(f"delete session {session_id!r}"):
            cursor = self._db.execute("DELETE FROM agent_nb_messages WHERE session_id = ?", (session_id,))
            return cursor.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SQLiteHistoryProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteHistoryProvider({str(self.path)!r})"
