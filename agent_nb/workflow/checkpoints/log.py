"""The log of ``FileCheckpointStorage`` as read: its records, what they hold, and its damage in words.

``checkpoints.jsonl`` holds one record a line: ``["m", hash, json]`` a message, ``["l", key,
previous, hash]`` a link, ``["c", header, body]`` a checkpoint, ``["d", id]`` its deletion,
``["a", waiting, request, record]`` an answer and ``["r", waiting, request]`` its release.
``LogReader`` reads what was appended since its last read, under a shared lock (so a write under
way is waited for, never read half-made); a log replaced since (``compact()``, ``repair()``, in any
process) is read again from its start. Every checkpoint line is checked against its checksum as it
is read; a line that is not a sound record is noted (``Damage``), and so is an incomplete last one,
which is not read. ``load``, ``list`` and ``latest`` give exactly what was written, or raise
``CheckpointError`` naming the line and the remedy. ``files`` holds the storage that writes the log.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...disk import os_problem
from ...errors import CheckpointError
from .format import Checkpoint, checkpoint_from_header, dumps, header_problem, too_deep
from .storage import (
    CHANGED,
    Chains,
    CheckpointInfo,
    _checksum,
    belongs_to,
    check_id,
    info_of,
    is_id,
    missing,
    parse_body,
    walk_chains,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, so one process writes a log at a time
    fcntl = None  # type: ignore[assignment]

__all__ = ["BINARY", "Damage", "LogReader", "fcntl", "read_at"]

BINARY = getattr(os, "O_BINARY", 0)
"""Bytes as they are, where the system would otherwise translate line breaks (Windows)."""
_CHECKSUM = b',"checksum":"'
_ID_IN = re.compile(rb'"id":"([A-Za-z0-9][A-Za-z0-9_-]{0,99})"')
_DELETED = re.compile(rb'^\[[^,]{0,6},"([A-Za-z0-9][A-Za-z0-9_-]{0,99})"\]$')


@dataclass(frozen=True, slots=True)
class Damage:
    """A complete line of the log that is not a sound record: where it is, whose it seems to be, what is wrong."""

    line: int
    start: int
    end: int
    """Byte offsets of the line in the log, its line break included."""
    checkpoint_id: str | None
    """The checkpoint id the line names, as far as it can be read."""
    problem: str

    def __str__(self) -> str:
        return f"line {self.line}" + (f" (checkpoint {self.checkpoint_id!r})" if self.checkpoint_id else "")


def _id_in(line: bytes) -> str | None:
    found = _ID_IN.search(line) or _DELETED.match(line)
    return found.group(1).decode() if found else None


def _lines(damage: Sequence[Damage]) -> str:
    """``line 7, checkpoint '…'`` or ``lines 7 (checkpoint '…'), 9 and 3 more``."""
    if len(damage) == 1:
        d = damage[0]
        return f"line {d.line}" + (f", checkpoint {d.checkpoint_id!r}" if d.checkpoint_id else "")
    shown = [f"{d.line}" + (f" (checkpoint {d.checkpoint_id!r})" if d.checkpoint_id else "") for d in damage[:5]]
    more = f" and {len(damage) - 5} more" if len(damage) > 5 else ""
    return "lines " + ", ".join(shown) + more


def read_at(fd: int, start: int, size: int) -> bytes:
    """``size`` bytes of the file ``fd`` from ``start`` (fewer where it ends first)."""
    os.lseek(fd, start, os.SEEK_SET)
    parts = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


class LogReader:
    """The checkpoints, messages, links and answers of ``directory/checkpoints.jsonl``, as read so far."""

    LOG = "checkpoints.jsonl"
    DAMAGED = "checkpoints.jsonl.damaged"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / self.LOG
        self._mutex = threading.RLock()
        """One thread at a time reads or writes this storage's view of the log."""
        self._reset()

    def _reset(self) -> None:
        self._checkpoints: dict[str, tuple[dict[str, Any], str, int]] = {}
        """id -> (header, body text, line), in the order written."""
        self._links: dict[str, tuple[str | None, str]] = {}
        self._messages: dict[str, str] = {}
        self._answers: dict[tuple[str, str], dict[str, str]] = {}
        """(waiting checkpoint, request id) -> the record of its answer (``claim_answer``)."""
        self._file: tuple[int, int] | None = None
        """The device and inode of the file read so far: another one at the path was put in its place."""
        self._read_to = 0
        self._lines = 0
        self._damaged: list[Damage] = []
        self._torn = False
        self._tail_id: str | None = None

    def _held(self) -> int | None:
        """The descriptor of the log when this storage holds the lock on it (the writer's), else ``None``."""
        return None

    def _read(self) -> None:
        """Read what was appended since the last read; an incomplete last line is noted, not read."""
        with self._mutex:
            held = self._held()
            try:
                if held is not None:  # under this storage's own lock: nobody else appends
                    self._take(held)
                    return
                now = os.stat(self.path)
                if self._file == (now.st_dev, now.st_ino) and now.st_size == self._read_to:
                    self._torn, self._tail_id = False, None  # a torn tail seen before was cut off since
                    return  # nothing new since the last read
                fd = os.open(self.path, os.O_RDONLY | BINARY)
                try:
                    if fcntl is not None:
                        fcntl.flock(fd, fcntl.LOCK_SH)  # a write under way ends first
                    self._take(fd)
                finally:
                    os.close(fd)  # and with it the lock
            except FileNotFoundError:
                return
            except OSError as exc:
                raise CheckpointError(f"cannot read {self.path}: {os_problem(exc, self.directory)}") from exc

    def _take(self, fd: int) -> None:
        """Read the log open at ``fd`` from where the last read ended (from its start, if it is another file)."""
        now = os.fstat(fd)
        if self._file != (now.st_dev, now.st_ino) or now.st_size < self._read_to:
            if self._file is not None:  # replaced (compact, repair) or cut back since: read it again, whole
                self._reset()
            self._file = (now.st_dev, now.st_ino)
        elif now.st_size == self._read_to:
            self._torn, self._tail_id = False, None
            return  # nothing new
        data = read_at(fd, self._read_to, now.st_size - self._read_to)
        end = data.rfind(b"\n") + 1
        self._torn = end < len(data)
        self._tail_id = _id_in(data[end:]) if self._torn else None
        start = self._read_to
        for line in data[:end].split(b"\n")[:-1]:
            self._lines += 1
            problem = self._checkpoint(line) if line.startswith(b'["c",') else self._record(line)
            if problem is not None:
                self._damaged.append(Damage(self._lines, start, start + len(line) + 1, _id_in(line), problem))
            start += len(line) + 1
        self._read_to += end

    def _checkpoint(self, line: bytes) -> str | None:
        """A checkpoint line as this storage writes it, checked without parsing its body; else the general way."""
        k = line.find(_CHECKSUM)
        end = k + 79  # the checksum's 64 digits, its closing quote and the header's closing brace
        if k > 5 and line[end - 2 : end + 1] == b'"},' and line.endswith(b"]"):
            digest = hashlib.sha256(line[5:k])
            digest.update(b"}\n")
            digest.update(line[end + 1 : -1])
            if digest.hexdigest().encode() == line[k + 13 : k + 77]:
                try:
                    header = json.loads(line[5:end])
                except ValueError:
                    header = None
                if header_problem(header) is None and is_id(header["id"]):
                    self._checkpoints[header["id"]] = (header, line[end + 1 : -1].decode(), self._lines)
                    return None
        return self._record(line)

    def _record(self, line: bytes) -> str | None:
        """Take one line of the log; what is wrong with it, if anything."""
        try:
            row = json.loads(line)
        except RecursionError:
            return too_deep()
        except ValueError as exc:
            return f"is not JSON ({exc})"
        if not isinstance(row, list) or not row:
            return "is not a record of this log"
        kind, n = row[0], len(row)
        texts = [type(x) is str for x in row[1:]]
        if kind == "m" and n == 3 and all(texts):
            self._messages.setdefault(row[1], row[2])
        elif kind == "l" and n == 4 and texts[0] and texts[2] and (texts[1] or row[2] is None):
            self._links.setdefault(row[1], (row[2], row[3]))
        elif kind == "d" and n == 2 and type(row[1]) is str:
            self._checkpoints.pop(row[1], None)
        elif kind == "a" and n == 4 and texts[0] and texts[1] and isinstance(row[3], dict):
            self._answers.setdefault((row[1], row[2]), {str(k): str(v) for k, v in row[3].items()})
        elif kind == "r" and n == 3 and texts[0] and texts[1]:
            self._answers.pop((row[1], row[2]), None)
        elif kind == "c" and n == 3:
            return self._general_checkpoint(row[1], row[2])
        else:
            return f"is not a record of this log (a {str(kind)[:10]!r} record with {n} fields)"
        return None

    def _general_checkpoint(self, header: Any, body: Any) -> str | None:
        problem = header_problem(header)
        if problem is not None:
            return problem
        try:
            body_text = dumps(body)
        except RecursionError:
            return too_deep()
        except ValueError as exc:
            return f"holds a value JSON does not allow ({exc})"
        if header.get("checksum") != _checksum(header, body_text):
            return CHANGED
        if not is_id(header["id"]):
            return f"has an id that is not a checkpoint id ({header['id']!r:.40})"
        self._checkpoints[header["id"]] = (header, body_text, self._lines)
        return None

    def answer_to(self, waiting: str, request_id: str) -> Mapping[str, str] | None:
        self._read()
        return self._answers.get((waiting, request_id))

    def load(self, checkpoint_id: str) -> Checkpoint:
        self._read()
        stored = self._checkpoints.get(check_id(checkpoint_id))
        if stored is None:
            raise self._not_there(checkpoint_id)
        header, body, line = stored
        later = [d for d in self._damaged if d.line > line and d.checkpoint_id == checkpoint_id]
        if later:  # a damaged record about it, written after it: a deletion, say
            raise CheckpointError(
                f"checkpoint {checkpoint_id!r} ({self.path}, line {line}) is followed by a damaged record that "
                f"names it ({later[-1]}, which {later[-1].problem}); it may have been deleted. "
                "storage.repair() sets the damaged record aside",
                checkpoint_id=checkpoint_id,
            )
        where = f"checkpoint {checkpoint_id!r} ({self.path}, line {line})"

        def bad(problem: str) -> CheckpointError:
            return CheckpointError(f"{where} {problem}", checkpoint_id=checkpoint_id)

        return checkpoint_from_header(header, parse_body(body, bad), where)

    def _not_there(self, checkpoint_id: str) -> CheckpointError:
        """The error for an id without an intact checkpoint: damaged, cut off, or not in the log at all."""
        named = [d for d in self._damaged if d.checkpoint_id == checkpoint_id]
        if named:
            return CheckpointError(
                f"checkpoint {checkpoint_id!r} ({self.path}, line {named[-1].line}) {named[-1].problem}. "
                f"storage.repair() sets the damaged record aside (in {self.DAMAGED}); the other checkpoints are "
                "not affected",
                checkpoint_id=checkpoint_id,
            )
        if self._torn and self._tail_id == checkpoint_id:
            return CheckpointError(
                f"checkpoint {checkpoint_id!r} is the incomplete last record of {self.path} (line {self._lines + 1}): "
                "a write was cut off, so it cannot be read. storage.repair() cuts it off",
                checkpoint_id=checkpoint_id,
            )
        damage = ""
        if self._damaged or self._torn:
            damage = (
                f"; the log has unreadable lines ({self._problems()}), one of which may be it: "
                "storage.repair() sets them aside"
            )
        return missing(checkpoint_id, self._checkpoints, damage, self.path)

    def _problems(self) -> str:
        """The damaged and incomplete lines, in words."""
        said = _lines(self._damaged) if self._damaged else ""
        if self._torn:
            said += (", and " if said else "") + f"an incomplete last record at line {self._lines + 1}"
        return said

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        self._read()
        return walk_chains(self._links, self._messages, tips, blobs)

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        self._read()
        if self._damaged or self._torn:
            raise CheckpointError(
                f"{self.path} has damaged records ({self._problems()}), so a list would leave out what they held. "
                "storage.repair() sets them aside; storage.load(id) still gives any intact checkpoint",
                checkpoint_id=next((d.checkpoint_id for d in self._damaged if d.checkpoint_id), self._tail_id),
            )
        out = [info_of(header) for header, _, _ in self._checkpoints.values()]
        return sorted((i for i in out if belongs_to(i, workflow)), key=lambda i: i.id)

    def latest(self, workflow: str | None = None) -> Checkpoint | None:
        self._read()
        if self._torn:
            named = f", checkpoint {self._tail_id!r}" if self._tail_id else ""
            raise CheckpointError(
                f"the newest record of {self.path} (line {self._lines + 1}{named}) is incomplete: a write was cut "
                "off, so the newest checkpoint cannot be read. The ones before it are intact; storage.repair() "
                "cuts the incomplete record off",
                checkpoint_id=self._tail_id,
            )
        newest: str | None = None
        for cid, (header, _, _) in self._checkpoints.items():
            if (workflow is None or header["workflow"] == workflow) and (newest is None or cid > newest):
                newest = cid
        line = 0 if newest is None else self._checkpoints[newest][2]
        after = [d for d in self._damaged if d.line > line]
        if after:  # it may be a newer checkpoint (or the deletion of this one): never answer with an older one
            d = after[-1]
            named = f"checkpoint {d.checkpoint_id!r}" if d.checkpoint_id else "its checkpoint id cannot be read"
            more = f"; {len(after) - 1} more damaged after the newest intact checkpoint" if len(after) > 1 else ""
            older = (
                f"storage.load({newest!r}) gives the newest intact one on purpose"
                if newest is not None
                else "no intact checkpoint is older"
            )
            raise CheckpointError(
                f"the newest record of {self.path} (line {d.line}, {named}) is damaged: it {d.problem}{more}. "
                f"latest() does not fall back to an older one: storage.repair() sets the damaged record aside, "
                f"or {older}",
                checkpoint_id=d.checkpoint_id,
            )
        return None if newest is None else self.load(newest)
