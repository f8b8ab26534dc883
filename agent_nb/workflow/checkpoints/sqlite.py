"""``SQLiteCheckpointStorage``: checkpoints, their messages and links in one SQLite file."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...disk import sqlite_problem
from ...errors import CheckpointError
from ...sqlite import connect, transaction
from .format import Checkpoint, Link, StoredMessage, header_problem, too_deep
from .storage import (
    CHANGED,
    Chains,
    CheckpointInfo,
    _checksum,
    check_id,
    info_of,
    is_id,
    missing,
    seal,
    unseal,
)

__all__ = ["SQLiteCheckpointStorage"]


def _all(db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """The rows of a query, its cursor closed even when a row cannot be read (an open one would pin a snapshot)."""
    cursor = db.execute(sql, params)
    try:
        return cursor.fetchall()
    finally:
        cursor.close()


def _text(value: Any) -> str:
    """A text read with ``CAST(… AS BLOB)``: bytes that are not UTF-8 become U+FFFD (and fail the checksum)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class SQLiteCheckpointStorage:
    """Checkpoints and their messages in one SQLite file; each save is one transaction.

    ``fsync=True`` syncs each save to the disk (survives a power cut; costs a disk round trip),
    as ``FileCheckpointStorage`` does; by default a crash of the program loses nothing. A save
    that fails (a full disk) leaves the file as it was. A row changed by another program is
    refused by ``latest``, ``load`` and ``list`` with a ``CheckpointError`` naming it; ``latest``
    never falls back to an older checkpoint. Use it in a ``with`` block, or call ``close()``.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        try:
            self._db = connect(self.path, durable=fsync)
            self._db.executescript(
                "CREATE TABLE IF NOT EXISTS checkpoints (id TEXT PRIMARY KEY, workflow TEXT NOT NULL,"
                " header TEXT NOT NULL, body TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS messages (hash TEXT PRIMARY KEY, json TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS links (key TEXT PRIMARY KEY, previous TEXT, message TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS answers (waiting TEXT NOT NULL, request TEXT NOT NULL,"
                " record TEXT NOT NULL, PRIMARY KEY (waiting, request));"
            )
        except sqlite3.Error as exc:
            self.close()
            raise CheckpointError(f"cannot open the checkpoint database {self.path}: {self._why(exc)}") from exc

    def _why(self, exc: sqlite3.Error) -> str:
        """SQLite's own words, then what to do: ``database or disk is full. Free some space …``."""
        otherwise = "is it an SQLite file? Give the storage another path, or repair the file"
        return sqlite_problem(exc, self.path, "the storage", otherwise)

    def _open(self) -> sqlite3.Connection:
        """The connection; a closed storage raises ``CheckpointError``."""
        if self._db is None:
            raise CheckpointError(f"SQLiteCheckpointStorage({str(self.path)!r}) is closed: open a new one")
        return self._db

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        db = self._open()
        try:
            yield db
        except sqlite3.Error as exc:
            raise CheckpointError(f"cannot read the checkpoint database {self.path}: {self._why(exc)}") from exc

    @contextlib.contextmanager
    def _writing(self, what: str, checkpoint_id: str) -> Iterator[sqlite3.Connection]:
        """One transaction (``agent_nb.sqlite.transaction``): written whole, or nothing of it is kept."""
        db = self._open()
        try:
            with transaction(db):
                yield db
        except sqlite3.Error as exc:
            raise CheckpointError(
                f"cannot write {what} to {self.path} (nothing of it was kept): {self._why(exc)}",
                checkpoint_id=checkpoint_id,
            ) from exc

    def claim_answer(self, waiting: str, request_id: str, record: Mapping[str, str]) -> Mapping[str, str] | None:
        """One transaction: another process that claims the same request at the same time gets this one's record."""
        text = json.dumps(dict(record), sort_keys=True)
        with self._writing(f"the answer to request {request_id!r} of checkpoint {waiting!r}", waiting) as db:
            db.execute("INSERT OR IGNORE INTO answers VALUES (?, ?, ?)", (waiting, request_id, text))
            (stored,) = db.execute(
                "SELECT record FROM answers WHERE waiting = ? AND request = ?", (waiting, request_id)
            ).fetchone()
        return None if stored == text else _answer(stored)

    def release_answer(self, waiting: str, request_id: str) -> None:
        with self._writing(f"the release of request {request_id!r} of checkpoint {waiting!r}", waiting) as db:
            db.execute("DELETE FROM answers WHERE waiting = ? AND request = ?", (waiting, request_id))

    def answer_to(self, waiting: str, request_id: str) -> Mapping[str, str] | None:
        with self._reading() as db:
            row = db.execute(
                "SELECT record FROM answers WHERE waiting = ? AND request = ?", (waiting, request_id)
            ).fetchone()
        return None if row is None else _answer(row[0])

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        check_id(checkpoint.id)
        header, body, _ = seal(checkpoint)
        with self._writing(f"checkpoint {checkpoint.id!r}", checkpoint.id) as db:
            db.executemany("INSERT OR IGNORE INTO messages VALUES (?, ?)", messages)
            db.executemany("INSERT OR IGNORE INTO links VALUES (?, ?, ?)", links)
            db.execute(
                "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?)",
                (checkpoint.id, checkpoint.workflow, header, body),
            )

    def _remedy(self, checkpoint_id: str) -> str:
        return f"storage.delete({checkpoint_id!r}) removes it; the other checkpoints are not affected"

    def load(self, checkpoint_id: str) -> Checkpoint:
        check_id(checkpoint_id)
        with self._reading() as db:
            rows = _all(
                db,
                "SELECT workflow, CAST(header AS BLOB), CAST(body AS BLOB) FROM checkpoints WHERE id = ?",
                (checkpoint_id,),
            )
            if not rows:
                newest = [r[0] for r in _all(db, "SELECT id FROM checkpoints ORDER BY id DESC LIMIT 5")]
                raise missing(checkpoint_id, newest, place=self.path)
        row = rows[0]
        where = f"checkpoint {checkpoint_id!r} (in {self.path})"
        remedy = self._remedy(checkpoint_id)
        checkpoint = unseal(_text(row[1]), _text(row[2]), where, remedy=remedy, checkpoint_id=checkpoint_id)
        if checkpoint.id != checkpoint_id or checkpoint.workflow != row[0]:
            raise CheckpointError(
                f"{where} is damaged: its row names {checkpoint_id!r} of {row[0]!r} but its header "
                f"{checkpoint.id!r} of {checkpoint.workflow!r}; {remedy}",
                checkpoint_id=checkpoint_id,
            )
        return checkpoint

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        links: dict[str, tuple[str | None, str]] = {}
        messages: dict[str, str] = {}
        with self._reading() as db:
            for blob in blobs:
                for (text,) in _all(db, "SELECT json FROM messages WHERE hash = ?", (blob,)):
                    messages[blob] = text
            for tip in tips:
                if tip in links:
                    continue
                rows = _all(
                    db,
                    "WITH RECURSIVE chain(key) AS (SELECT ? UNION SELECT l.previous FROM links l JOIN chain c"
                    " ON l.key = c.key WHERE l.previous IS NOT NULL)"
                    " SELECT l.key, l.previous, l.message, m.json FROM links l LEFT JOIN messages m"
                    " ON m.hash = l.message WHERE l.key IN (SELECT key FROM chain)",
                    (tip,),
                )
                for key, previous, mkey, text in rows:
                    links[key] = (previous, mkey)
                    if text is not None:
                        messages[mkey] = text
        return links, messages

    def _header(self, checkpoint_id: str, workflow: str, header_text: str) -> tuple[Any, str | None]:
        """A row's header, and what is wrong with it read alone (its checksum needs the body too)."""
        try:
            header = json.loads(header_text)
        except RecursionError:
            return None, f"is unreadable: its header {too_deep()}"
        except ValueError as exc:
            return None, f"is unreadable: its header is not JSON ({exc})"
        problem = header_problem(header)
        if problem is None and not is_id(checkpoint_id):
            problem = f"is damaged: its id is not a checkpoint id ({checkpoint_id!r:.40})"
        elif problem is None and (header["id"] != checkpoint_id or header["workflow"] != workflow):
            problem = (
                f"is damaged: its row names {checkpoint_id!r} of {workflow!r} but its header "
                f"{header['id']!r} of {header['workflow']!r}"
            )
        return header, problem

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        """Every checkpoint (of ``workflow``), oldest first, each checked whole; a damaged one raises, naming it."""
        with self._reading() as db:
            rows = _all(
                db, "SELECT id, workflow, CAST(header AS BLOB), CAST(body AS BLOB) FROM checkpoints ORDER BY id"
            )
        out, damaged = [], []
        for cid, wf, header_bytes, body_bytes in rows:
            header, problem = self._header(cid, wf, _text(header_bytes))
            if problem is None and header.get("checksum") != _checksum(header, _text(body_bytes)):
                problem = CHANGED
            if problem is not None:
                damaged.append((cid, problem))
            elif workflow is None or header["workflow"] == workflow:
                out.append(info_of(header))
        if damaged:
            cid, problem = damaged[0]
            more = f" ({len(damaged) - 1} more damaged: {', '.join(repr(c) for c, _ in damaged[1:6])})"
            raise CheckpointError(
                f"checkpoint {cid!r} in {self.path} {problem}{more if len(damaged) > 1 else ''}, so a list would "
                f"leave it out. storage.delete({cid!r}) removes it; storage.load(id) still gives the intact ones",
                checkpoint_id=cid,
            )
        return out

    def latest(self, workflow: str | None = None) -> Checkpoint | None:
        with self._reading() as db:
            if workflow is None:
                found = _all(db, "SELECT rowid, id FROM checkpoints ORDER BY id DESC LIMIT 1")
            else:
                found = _all(
                    db, "SELECT rowid, id FROM checkpoints WHERE workflow = ? ORDER BY id DESC LIMIT 1", (workflow,)
                )
            row = found[0] if found else None
            # it, and the rows written after it (newer checkpoints whose id or workflow was damaged?): look at them
            later = _all(
                db,
                "SELECT id, workflow, CAST(header AS BLOB) FROM checkpoints WHERE rowid >= ? ORDER BY rowid",
                (0 if row is None else row[0],),
            )
        for cid, wf, header_bytes in later:
            _, problem = self._header(cid, wf, _text(header_bytes))
            if problem is not None:
                older = (
                    f"storage.load({row[1]!r}) gives the newest intact one on purpose"
                    if row is not None
                    else "no intact checkpoint is older"
                )
                raise CheckpointError(
                    f"the newest checkpoint in {self.path} may be {cid!r}, which {problem}. latest() does not fall "
                    f"back to an older one: storage.delete({cid!r}) removes it, or {older}",
                    checkpoint_id=cid,
                )
        return None if row is None else self.load(row[1])

    def delete(self, checkpoint_id: str) -> bool:
        check_id(checkpoint_id)
        with self._writing(f"the deletion of checkpoint {checkpoint_id!r}", checkpoint_id) as db:
            cursor = db.execute("DELETE FROM checkpoints WHERE id = ?", (checkpoint_id,))
            cursor.close()
        return cursor.rowcount > 0

    def close(self) -> None:
        """Close the file (a closed storage raises ``CheckpointError`` when used)."""
        db, self._db = self._db, None
        if db is not None:
            db.close()

    def __enter__(self) -> SQLiteCheckpointStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteCheckpointStorage({str(self.path)!r})"


def _answer(text: str) -> dict[str, str]:
    """A stored answer record; one that is not JSON is shown as it is."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {"at": "?", "by": text[:80]}
