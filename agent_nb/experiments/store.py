"""Where an experiment's cells go as they finish: one SQLite file, many experiments.

An experiment is stored under the hash of its definition (``Experiment.identity``), with its name
beside it. A cell is written once (its key is the experiment and its place); writes are grouped
into one transaction per batch, so a kill loses at most the cells of the batch under way, and
those run again on the next run. A store without a path lives in memory, for one run.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from ..disk import sqlite_problem
from ..errors import AgentNbError
from ..sqlite import connect, transaction
from .cells import Cell

__all__ = ["ExperimentStore", "StoreError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, definition TEXT NOT NULL, cells INTEGER NOT NULL, created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS experiments_by_name ON experiments (name);
CREATE TABLE IF NOT EXISTS cells (
    experiment TEXT NOT NULL, k INTEGER NOT NULL, status TEXT NOT NULL, summary TEXT NOT NULL, detail TEXT,
    PRIMARY KEY (experiment, k)
);
"""


_PAGE_SIZE = 16384
"""A cell and its trace are two to three kilobytes: 16 KiB pages hold several (a third less written than 4 KiB)."""


class StoreError(AgentNbError):
    """An experiment store that cannot be read or written (a full disk, a read-only file, another file)."""


class ExperimentStore:
    """The cells of experiments in one SQLite file (``path``), or in memory (``path=None``)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        if self.path is not None and self.path.is_dir():
            raise StoreError(
                f"cannot open the experiment store {self.path}: it is a directory; give a file: store='runs.sqlite'"
            )
        try:
            self._db = (
                connect(self.path, durable=False, page_size=_PAGE_SIZE)
                if self.path is not None
                else sqlite3.connect(":memory:", check_same_thread=False)
            )
            self._db.isolation_level = None
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(self._problem(exc, "open")) from exc

    def _problem(self, exc: Exception, doing: str) -> str:
        if self.path is None:
            return f"cannot {doing} the experiment store in memory: {exc}"
        return f"cannot {doing} the experiment store {self.path}: " + sqlite_problem(
            exc, self.path, "the experiment", "give another file: store='runs.sqlite'"
        )

    # -- experiments ----------------------------------------------------------------

    def find(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        """The experiments stored under ``name``: (id, definition), oldest first."""
        rows = self._read("SELECT id, definition FROM experiments WHERE name = ? ORDER BY created", (name,))
        return [(i, json.loads(d)) for i, d in rows]

    def add(self, experiment_id: str, name: str, definition: Mapping[str, Any], cells: int) -> None:
        with self._writing("record the experiment") as db:
            db.execute(
                "INSERT OR IGNORE INTO experiments VALUES (?, ?, ?, ?, ?)",
                (experiment_id, name, json.dumps(definition, sort_keys=True), cells, time.time()),
            )

    def forget(self, experiment_id: str) -> None:
        """Delete an experiment and its cells."""
        with self._writing("delete the experiment") as db:
            db.execute("DELETE FROM cells WHERE experiment = ?", (experiment_id,))
            db.execute("DELETE FROM experiments WHERE id = ?", (experiment_id,))

    def experiments(self) -> list[dict[str, Any]]:
        """Every stored experiment: id, name, cells planned and cells stored."""
        rows = self._read(
            "SELECT e.id, e.name, e.cells, (SELECT COUNT(*) FROM cells c WHERE c.experiment = e.id) "
            "FROM experiments e ORDER BY e.created"
        )
        return [{"id": i, "name": n, "cells": c, "stored": s} for i, n, c, s in rows]

    # -- cells ----------------------------------------------------------------------

    def statuses(self, experiment_id: str) -> dict[int, str]:
        """Place -> status of every stored cell of the experiment."""
        return dict(self._read("SELECT k, status FROM cells WHERE experiment = ?", (experiment_id,)))

    def put(self, experiment_id: str, cells: Iterable[Cell]) -> None:
        """Write finished cells in one transaction (a cell run again replaces its failed record)."""
        rows = [(experiment_id, c.k, c.status, to_json(c.summary()).decode(), c.detail) for c in cells]
        if rows:
            with self._writing("write cells to") as db:
                db.executemany("INSERT OR REPLACE INTO cells VALUES (?, ?, ?, ?, ?)", rows)

    def summaries(self, experiment_id: str) -> Iterator[dict[str, Any]]:
        """The stored cells' summaries, in order of place (read as the caller goes)."""
        cursor = self._db.execute("SELECT summary FROM cells WHERE experiment = ? ORDER BY k", (experiment_id,))
        try:
            for (summary,) in cursor:
                yield json.loads(summary)
        except sqlite3.Error as exc:
            raise StoreError(self._problem(exc, "read")) from exc
        finally:
            cursor.close()

    def detail(self, experiment_id: str, k: int) -> tuple[dict[str, Any], str | None] | None:
        rows = self._read("SELECT summary, detail FROM cells WHERE experiment = ? AND k = ?", (experiment_id, k))
        return (json.loads(rows[0][0]), rows[0][1]) if rows else None

    def close(self) -> None:
        self._db.close()

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(self._problem(exc, "read")) from exc

    @contextlib.contextmanager
    def _writing(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One transaction; a SQLite error becomes a ``StoreError`` naming the file and the fix."""
        try:
            with transaction(self._db) as db:
                yield db
        except sqlite3.Error as exc:
            raise StoreError(self._problem(exc, doing)) from exc

    def __repr__(self) -> str:
        return f"ExperimentStore({str(self.path) if self.path else ':memory:'!r})"
