"""The SQLite files agent_nb keeps (histories, checkpoints): one way to open them, one way to write.

Every file is write-ahead logged, so readers never block the writer and a reader never sees
half a transaction. How often a commit reaches the disk is the caller's choice:
``durable=True`` (``synchronous=FULL``) syncs every commit, so a committed transaction
survives a power cut; ``durable=False`` (``NORMAL``) syncs when the log is checkpointed, so
a crash of the program loses nothing and a power cut may lose the newest commits, never
corrupt the file. Histories are durable (a saved turn is one the user was answered on, and
it is written once per turn); checkpoint storages follow their ``fsync=`` setting, like
the file storage, because a checkpoint is taken after every superstep.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

__all__ = ["connect", "transaction"]


def connect(path: Path, *, durable: bool, page_size: int | None = None) -> sqlite3.Connection:
    """A connection to ``path`` that leaves transactions to ``transaction`` (autocommit otherwise).

    ``page_size`` applies to a new file only (SQLite fixes it when the file is made): rows of a
    few kilobytes fill a large page several at a time, where a 4 KiB page would hold one and
    waste the rest.
    """
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        if page_size is not None:
            db.execute(f"PRAGMA page_size={int(page_size)}")  # before WAL: the log fixes the size
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
    except BaseException:
        db.close()  # not left open until the collector finds it (it would hold the file, and its disk)
        raise
    return db


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taken at once (``BEGIN IMMEDIATE``): committed whole, or rolled back.

    When the failure already ended the transaction (SQLite rolls back by itself on some
    errors, a full disk among them), the original error is raised, not a failed rollback.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # a failed COMMIT (a full disk) leaves it open: never stay inside it
            db.execute("ROLLBACK")
        raise
