"""Where checkpoints live: in memory, in a directory of JSON files, or in a SQLite file.

Every storage keeps checkpoints (a header and a small body, checksummed), messages (each
stored once, under the hash of its JSON) and the links that chain messages into
conversations (see ``checkpoint``). ``latest`` returns the
newest checkpoint or raises: it never falls back to an older one in silence.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import CheckpointError
from .checkpoint import Checkpoint, Link, StoredMessage, checkpoint_from_header, dumps

__all__ = [
    "CheckpointInfo",
    "CheckpointStorage",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "SQLiteCheckpointStorage",
    "new_checkpoint_id",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def new_checkpoint_id() -> str:
    """Ids sort by the time they were made, so the newest is found without reading any checkpoint."""
    return f"{time.time_ns():016x}-{secrets.token_hex(4)}"


def check_id(checkpoint_id: Any) -> str:
    if not isinstance(checkpoint_id, str) or not _ID.fullmatch(checkpoint_id):
        raise CheckpointError(
            f"{checkpoint_id!r} is not a checkpoint id: ids are letters, digits, '-' and '_' "
            "(so an id can never name a file outside the storage)",
            checkpoint_id=str(checkpoint_id),
        )
    return checkpoint_id


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """What ``list`` says of a checkpoint, read from its header alone."""

    id: str
    workflow: str
    superstep: int
    status: str
    timestamp: str
    previous: str | None


@runtime_checkable
class CheckpointStorage(Protocol):
    """What a workflow needs of a checkpoint store."""

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        """Store ``checkpoint`` with the links and messages it adds (the others are stored already)."""

    def load(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint, checked; a ``CheckpointError`` says what is wrong with it."""

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        """The chains that end at ``tips``, their messages, and the stored texts ``blobs`` names.

        Returns links (key -> (previous key, message hash)) and texts (hash -> JSON).
        """

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        """The checkpoints (of one workflow, by name), oldest first."""

    def latest(self, workflow: str | None = None) -> Checkpoint | None:
        """The newest checkpoint, or ``None`` when there is none; never an older one instead."""

    def delete(self, checkpoint_id: str) -> bool:
        """Remove a checkpoint (its messages stay for the others); whether it was there."""


def _seal(checkpoint: Checkpoint) -> tuple[str, str, str]:
    """The header (with the checksum) and the body of a checkpoint as JSON, and the checksum."""
    body = dumps(checkpoint.body)
    fields = dumps(checkpoint.header)
    checksum = hashlib.sha256(f"{fields}\n{body}".encode()).hexdigest()
    return f'{fields[:-1]},"checksum":"{checksum}"}}', body, checksum  # the header as dumps would write it


def _checksum(header: Mapping[str, Any], body: str) -> str:
    fields = {k: v for k, v in header.items() if k != "checksum"}
    return hashlib.sha256(f"{dumps(fields)}\n{body}".encode()).hexdigest()


def _open(header_text: str, body_text: str, where: str) -> Checkpoint:
    """Parse and check a sealed checkpoint: truncated, foreign or changed ones raise ``CheckpointError``."""
    try:
        header = json.loads(header_text)
    except ValueError as exc:
        raise CheckpointError(f"{where} is unreadable: its header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where} is not a checkpoint (its header is not a JSON object)")
    checkpoint = checkpoint_from_header(header, {}, where)  # the format is checked before anything else
    try:
        body = json.loads(body_text)
    except ValueError as exc:
        raise CheckpointError(f"{where} is truncated or damaged: its body is not JSON ({exc})") from None
    if header.get("checksum") != _checksum(header, body_text):
        raise CheckpointError(f"{where} was changed after it was written: its checksum does not match")
    return Checkpoint(**{**_fields(checkpoint), "body": body})


def _fields(c: Checkpoint) -> dict[str, Any]:
    return {f: getattr(c, f) for f in Checkpoint.__slots__}


def _info(header: Mapping[str, Any]) -> CheckpointInfo:
    return CheckpointInfo(
        header["id"], header["workflow"], header["superstep"], header["status"], header["timestamp"], header["previous"]
    )


Chains = tuple[Mapping[str, tuple["str | None", str]], Mapping[str, str]]


def _walk(
    links: Mapping[str, tuple[str | None, str]], messages: Mapping[str, str], tips: Iterable[str], blobs: Iterable[str]
) -> Chains:
    found: dict[str, tuple[str | None, str]] = {}
    texts: dict[str, str] = {b: messages[b] for b in blobs if b in messages}
    for tip in tips:
        key: str | None = tip
        while key is not None and key not in found:
            entry = links.get(key)
            if entry is None:
                break  # the decoder names what is missing
            found[key] = entry
            text = messages.get(entry[1])
            if text is not None:
                texts[entry[1]] = text
            key = entry[0]
    return found, texts


class InMemoryCheckpointStorage:
    """Checkpoints in this process only: for notebooks and tests.

    A checkpoint is kept as the object it was saved as (its body is JSON-ready and never
    changed after), so saving costs no serialising; loading gives the same object back.
    """

    def __init__(self) -> None:
        self._checkpoints: dict[str, Checkpoint] = {}
        self._links: dict[str, tuple[str | None, str]] = {}
        self._messages: dict[str, str] = {}

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        check_id(checkpoint.id)
        for mkey, text in messages:
            self._messages.setdefault(mkey, text)
        for key, previous, mkey in links:
            self._links.setdefault(key, (previous, mkey))
        self._checkpoints[checkpoint.id] = checkpoint

    def load(self, checkpoint_id: str) -> Checkpoint:
        stored = self._checkpoints.get(check_id(checkpoint_id))
        if stored is None:
            raise _missing(checkpoint_id, self._checkpoints)
        return stored

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        return _walk(self._links, self._messages, tips, blobs)

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        infos = (_info(self._checkpoints[k].header) for k in sorted(self._checkpoints))
        return [i for i in infos if _of(i, workflow)]

    def latest(self, workflow: str | None = None) -> Checkpoint | None:
        infos = self.list(workflow)
        return self.load(infos[-1].id) if infos else None

    def delete(self, checkpoint_id: str) -> bool:
        return self._checkpoints.pop(check_id(checkpoint_id), None) is not None

    def __repr__(self) -> str:
        return f"InMemoryCheckpointStorage({len(self._checkpoints)} checkpoints, {len(self._messages)} messages)"


class FileCheckpointStorage:
    """Checkpoints in ``directory``, as one append-only log of JSON lines: ``checkpoints.jsonl``.

    A checkpoint is one write at the end of the log: the messages and links it adds, then
    its own line (header with checksum, and body). Nothing is ever rewritten in place, so a
    reader never sees half of a checkpoint; a write cut off by a crash leaves an incomplete
    last line, which ``latest`` reports (it does not fall back to an older checkpoint) and
    ``repair()`` cuts off. Nothing is unpickled or evaluated on load. ``fsync=True`` also
    flushes each write to the disk (survives a power cut; costs a disk round trip).

    Why one log and not a file per checkpoint: creating and renaming a file costs far more
    than appending a line (see bench/checkpoint_bench.py), and a checkpoint is taken after
    every superstep. ``compact()`` rewrites the log without deleted checkpoints, atomically
    (a temporary file renamed into place).
    """

    LOG = "checkpoints.jsonl"

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.path = self.directory / self.LOG
        self._fd: int | None = None
        self._checkpoints: dict[str, tuple[dict[str, Any], str]] = {}
        """id -> (header, body text), in the order written."""
        self._links: dict[str, tuple[str | None, str]] = {}
        self._messages: dict[str, str] = {}
        self._read_to = 0
        self._damaged: list[int] = []
        self._torn = False

    # -- writing ------------------------------------------------------------------------

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        check_id(checkpoint.id)
        header, body, checksum = _seal(checkpoint)
        parts = [dumps(["m", *m]) for m in messages]
        parts += [dumps(["l", *link]) for link in links]
        parts.append(f'["c",{header},{body}]')  # the body as JSON, not as a string of it: nothing to escape
        self._append("\n".join(parts) + "\n")
        for mkey, text in messages:  # what this storage wrote it knows without reading it back
            self._messages.setdefault(mkey, text)
        for key, previous, mkey in links:
            self._links.setdefault(key, (previous, mkey))
        self._checkpoints[checkpoint.id] = ({**checkpoint.header, "checksum": checksum}, body)

    def delete(self, checkpoint_id: str) -> bool:
        self._read()
        if check_id(checkpoint_id) not in self._checkpoints:
            return False
        self._append(dumps(["d", checkpoint_id]) + "\n")
        del self._checkpoints[checkpoint_id]
        return True

    def _append(self, text: str) -> None:
        """One write at the end of the log, after what is already there has been read."""
        self._read()
        if self._torn:
            raise CheckpointError(
                f"{self.path} ends with an incomplete record (a write was cut off); nothing was written after it. "
                "storage.repair() cuts the incomplete record off"
            )
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        data = text.encode()
        written = os.write(self._fd, data)
        if written != len(data):  # a short write: the rest, so the line is whole
            os.write(self._fd, data[written:])
        if self.fsync:
            os.fsync(self._fd)
        self._read_to += len(data)  # one writer at a time: the log ends where this write ended

    def repair(self) -> int:
        """Cut off an incomplete last record (left by a write that was cut off); the bytes removed."""
        self._read()
        size = self.path.stat().st_size if self.path.exists() else 0
        if not self._torn:
            return 0
        os.truncate(self.path, self._read_to)
        self._torn = False
        return size - self._read_to

    def compact(self) -> None:
        """Rewrite the log with only the live checkpoints and what they refer to (atomically)."""
        self._read()
        keep_links: dict[str, tuple[str | None, str]] = {}
        keep_texts: set[str] = set()
        lines = []
        for header, body in self._checkpoints.values():
            checkpoint = _open(dumps(header), body, f"checkpoint {header.get('id')!r}")
            _, blobs = _walk(self._links, self._messages, (), checkpoint.blobs())
            links, texts = _walk(self._links, self._messages, checkpoint.references(blobs), checkpoint.blobs())
            keep_links.update(links)
            keep_texts.update(texts)
            keep_texts.update(m for _, m in links.values())
            lines.append(f'["c",{dumps(header)},{body}]')
        out = [dumps(["m", k, self._messages[k]]) for k in keep_texts if k in self._messages]
        out += [dumps(["l", k, p, m]) for k, (p, m) in keep_links.items()]
        temporary = self.path.with_name(f".{self.LOG}.{secrets.token_hex(4)}.tmp")
        temporary.write_text("".join(f"{line}\n" for line in [*out, *lines]), encoding="utf-8")
        self.close()
        os.replace(temporary, self.path)
        self._checkpoints, self._links, self._messages, self._read_to = {}, {}, {}, 0
        self._damaged, self._torn = [], False

    def close(self) -> None:
        """Close the log (the next save opens it again)."""
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------

    def _read(self) -> None:
        """Read what was appended since the last read; an incomplete last line is noted, not read."""
        if self._fd is not None and os.fstat(self._fd).st_size == self._read_to:
            return  # nothing new since this storage's own last write
        try:
            with open(self.path, "rb") as f:
                f.seek(self._read_to)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self._torn = end < len(data)
        number = 0
        for number, line in enumerate(data[:end].splitlines(), start=1):
            try:
                row = json.loads(line)
                kind = row[0]
                if kind == "m":
                    self._messages.setdefault(row[1], row[2])
                elif kind == "l":
                    self._links.setdefault(row[1], (row[2], row[3]))
                elif kind == "c":
                    self._checkpoints[row[1]["id"]] = (row[1], dumps(row[2]))  # its text, as it was written
                elif kind == "d":
                    self._checkpoints.pop(row[1], None)
                else:
                    raise ValueError(kind)
            except (ValueError, TypeError, IndexError, KeyError):
                self._damaged.append(number)
        self._read_to += end

    def load(self, checkpoint_id: str) -> Checkpoint:
        self._read()
        stored = self._checkpoints.get(check_id(checkpoint_id))
        if stored is None:
            raise _missing(checkpoint_id, self._checkpoints, self._damage())
        header, body = stored
        return _open(dumps(header), body, f"checkpoint {checkpoint_id!r} (in {self.path})")

    def _damage(self) -> str:
        if not self._damaged:
            return ""
        lines = ", ".join(map(str, self._damaged[:5]))
        return f"; {self.path} has {len(self._damaged)} unreadable lines (line {lines}): it was edited or damaged"

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        self._read()
        return _walk(self._links, self._messages, tips, blobs)

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        self._read()
        out = []
        for header, _ in self._checkpoints.values():
            try:
                info = _info(header)
            except (KeyError, TypeError):
                raise CheckpointError(f"a checkpoint header in {self.path} is damaged: {header!r:.80}") from None
            if _of(info, workflow):
                out.append(info)
        return sorted(out, key=lambda i: i.id)

    def latest(self, workflow: str | None = None) -> Checkpoint | None:
        self._read()
        if self._torn:
            raise CheckpointError(
                f"the newest record of {self.path} is incomplete: a write was cut off, so the newest checkpoint "
                "cannot be read. The ones before it are intact; storage.repair() cuts the incomplete record off"
            )
        infos = self.list(workflow)
        return self.load(infos[-1].id) if infos else None

    def __repr__(self) -> str:
        return f"FileCheckpointStorage({str(self.directory)!r})"


class SQLiteCheckpointStorage:
    """Checkpoints and their messages in one SQLite file; each save is one transaction."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import sqlite3

        self.path = Path(path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(
            "CREATE TABLE IF NOT EXISTS checkpoints (id TEXT PRIMARY KEY, workflow TEXT NOT NULL,"
            " header TEXT NOT NULL, body TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS messages (hash TEXT PRIMARY KEY, json TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS links (key TEXT PRIMARY KEY, previous TEXT, message TEXT NOT NULL);"
        )

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        check_id(checkpoint.id)
        header, body, _ = _seal(checkpoint)
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR IGNORE INTO messages VALUES (?, ?)", messages)
            db.executemany("INSERT OR IGNORE INTO links VALUES (?, ?, ?)", links)
            db.execute(
                "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?)",
                (checkpoint.id, checkpoint.workflow, header, body),
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def load(self, checkpoint_id: str) -> Checkpoint:
        row = self._db.execute(
            "SELECT header, body FROM checkpoints WHERE id = ?", (check_id(checkpoint_id),)
        ).fetchone()
        if row is None:
            raise _missing(checkpoint_id, [i.id for i in self.list()])
        return _open(row[0], row[1], f"checkpoint {checkpoint_id!r} (in {self.path})")

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
                out.append(_info(json.loads(header)))
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


def _of(info: CheckpointInfo, workflow: str | None) -> bool:
    return workflow is None or info.workflow == workflow


def _missing(checkpoint_id: str, known: Iterable[str], damage: str = "") -> CheckpointError:
    ids = sorted(known)
    listed = ", ".join(ids[-5:]) if ids else "none"
    return CheckpointError(
        f"there is no checkpoint {checkpoint_id!r} in this storage (newest: {listed}){damage}; "
        "storage.list() shows them all",
        checkpoint_id=checkpoint_id,
    )
