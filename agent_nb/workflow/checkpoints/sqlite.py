"""``SQLiteCheckpointStorage``: checkpoints, their messages and links in one SQLite file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...errors import CheckpointError
from ...sqlite import connect, transaction
from .format import Checkpoint, Link, StoredMessage
from .storage import Chains, CheckpointInfo, check_id, info_of, missing, seal, unseal

__all__ = ["SQLiteCheckpointStorage"]


class SQLiteCheckpointStorage:
    """Checkpoints and their messages in one SQLite file; each save is one transaction.

    ``fsync=True`` syncs each save to the disk (survives a power cut; costs a disk round trip),
    as ``FileCheckpointStorage`` does; by default a crash of the program loses nothing.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self._db = connect(self.path, durable=fsync)
        self._db.executescript(
            "CREATE TABLE IF NOT EXISTS checkpoints (id TEXT PRIMARY KEY, workflow TEXT NOT NULL,"
            " header TEXT NOT NULL, body TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS messages (hash TEXT PRIMARY KEY, json TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS links (key TEXT PRIMARY KEY, previous TEXT, message TEXT NOT NULL);"
        )

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        check_id(checkpoint.id)
        header, body, _ = seal(checkpoint)
        with transaction(self._db) as db:
            db.executemany("INSERT OR IGNORE INTO messages VALUES (?, ?)", messages)
            db.executemany("INSERT OR IGNORE INTO links VALUES (?, ?, ?)", links)
            db.execute(
                "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?)",
                (checkpoint.id, checkpoint.workflow, header, body),
            )

    def load(self, checkpoint_id: str) -> Checkpoint:
        row = self._db.execute(
            "SELECT header, body FROM checkpoints WHERE id = ?", (check_id(checkpoint_id),)
        ).fetchone()
        if row is None:
            raise missing(checkpoint_id, [i.id for i in self.list()])
        return unseal(row[0], row[1], f"checkpoint {checkpoint_id!r} (in {self.path})")

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        links: dict[str, tuple[str | None, str]] = {}
        messages: dict[str, str] = {}
        for blob in blobs:
            row = self._db.execute("SELECT json FROM messages WHERE hash = ?", (blob,)).fetchone()
            if row is not None:
                messages[blob] = row[0]
        for tip in tips:
            if tip in links:
                continue
            rows = self._db.execute(
                "WITH RECURSIVE chain(key) AS (SELECT ? UNION SELECT l.previous FROM links l JOIN chain c"
                " ON l.key = c.key WHERE l.previous IS NOT NULL)"
                " SELECT l.key, l.previous, l.message, m.json FROM links l LEFT JOIN messages m ON m.hash = l.message"
                " WHERE l.key IN (SELECT key FROM chain)",
                (tip,),
            )
            for key, previous, mkey, text in rows:
                links[key] = (previous, mkey)
                if text is not None:
                    messages[mkey] = text
        return links, messages

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        if workflow is None:
            rows = self._db.execute("SELECT header FROM checkpoints ORDER BY id")
        else:
            rows = self._db.execute("SELECT header FROM checkpoints WHERE workflow = ? ORDER BY id", (workflow,))
        out = []
        for (header,) in rows:
            try:
                out.append(info_of(json.loads(header)))
            except (ValueError, KeyError, TypeError):
                raise CheckpointError(f"a checkpoint header in {self.path} is damaged: {header[:80]!r}") from None
        return out

    def latest(self, workflow: str | None = None) -> Checkpoint | None:
        if workflow is None:
            row = self._db.execute("SELECT id FROM checkpoints ORDER BY id DESC LIMIT 1").fetchone()
        else:
            row = self._db.execute(
                "SELECT id FROM checkpoints WHERE workflow = ? ORDER BY id DESC LIMIT 1", (workflow,)
            ).fetchone()
        return None if row is None else self.load(row[0])

    def delete(self, checkpoint_id: str) -> bool:
        cursor = self._db.execute("DELETE FROM checkpoints WHERE id = ?", (check_id(checkpoint_id),))
        return cursor.rowcount > 0

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteCheckpointStorage({str(self.path)!r})"
