"""``FileCheckpointStorage``: checkpoints in a directory, as one append-only log of JSON lines."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...disk import os_fix, os_problem, os_reason
from ...errors import CheckpointError, bad_argument
from .format import Checkpoint, Link, StoredMessage, checkpoint_from_header, dumps, header_problem, too_deep
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
    seal,
    walk_chains,
)

__all__ = ["FileCheckpointStorage"]

_CHECKSUM = b',"checksum":"'
_ID_IN = re.compile(rb'"id":"([A-Za-z0-9][A-Za-z0-9_-]{0,99})"')
_DELETED = re.compile(rb'^\[[^,]{0,6},"([A-Za-z0-9][A-Za-z0-9_-]{0,99})"\]$')


@dataclass(frozen=True, slots=True)
class _Damage:
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


def _lines(damage: Sequence[_Damage]) -> str:
    """``line 7, checkpoint '…'`` or ``lines 7 (checkpoint '…'), 9 and 3 more``."""
    if len(damage) == 1:
        d = damage[0]
        return f"line {d.line}" + (f", checkpoint {d.checkpoint_id!r}" if d.checkpoint_id else "")
    shown = [f"{d.line}" + (f" (checkpoint {d.checkpoint_id!r})" if d.checkpoint_id else "") for d in damage[:5]]
    more = f" and {len(damage) - 5} more" if len(damage) > 5 else ""
    return "lines " + ", ".join(shown) + more


class FileCheckpointStorage:
    """Checkpoints in ``directory``, as one append-only log of JSON lines: ``checkpoints.jsonl``.

    A checkpoint is one write at the end of the log: the messages and links it adds, then
    its own line (header with checksum, and body). Nothing is ever rewritten in place, so a
    reader never sees half of a checkpoint. A write that fails (a full disk) is taken back, so
    the log ends as before; one cut off by a crash leaves an incomplete last line. Every
    checkpoint line is checked against its checksum as it is read: ``latest``, ``load`` and
    ``list`` give exactly what was written, or raise ``CheckpointError`` naming the line, and
    never fall back to an older checkpoint. ``repair()`` cuts off an incomplete last line and
    sets damaged lines aside (in ``checkpoints.jsonl.damaged``). Nothing is unpickled or
    evaluated on load. ``fsync=True`` also flushes each write to the disk (survives a power cut;
    costs a disk round trip).

    Why one log and not a file per checkpoint: creating and renaming a file costs far more
    than appending a line (see bench/checkpoint_bench.py), and a checkpoint is taken after
    every superstep. ``compact()`` rewrites the log without deleted checkpoints, atomically
    (a temporary file renamed into place). One process writes a log at a time.
    """

    LOG = "checkpoints.jsonl"
    DAMAGED = "checkpoints.jsonl.damaged"

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self._fd: int | None = None
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise bad_argument(
                "FileCheckpointStorage", "directory", str(directory), "it names a file; give a directory"
            ) from None
        except OSError as exc:
            raise CheckpointError(
                f"cannot create the checkpoint directory {self.directory}: {os_problem(exc, self.directory)}"
            ) from exc
        self.fsync = fsync
        self.path = self.directory / self.LOG
        self._reset()

    def _reset(self) -> None:
        self._checkpoints: dict[str, tuple[dict[str, Any], str, int]] = {}
        """id -> (header, body text, line), in the order written."""
        self._links: dict[str, tuple[str | None, str]] = {}
        self._messages: dict[str, str] = {}
        self._read_to = 0
        self._lines = 0
        self._damaged: list[_Damage] = []
        self._torn = False
        self._tail_id: str | None = None
        self._answers: dict[tuple[str, str], dict[str, str]] = {}
        """(waiting checkpoint, request id) -> the record of its answer (``claim_answer``)."""

    # -- writing ------------------------------------------------------------------------

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        check_id(checkpoint.id)
        header, body, checksum = seal(checkpoint)
        parts = [dumps(["m", *m]) for m in messages]
        parts += [dumps(["l", *link]) for link in links]
        parts.append(f'["c",{header},{body}]')  # the body as JSON, not as a string of it: nothing to escape
        self._append("\n".join(parts) + "\n", len(parts), checkpoint.id)
        for mkey, text in messages:  # what this storage wrote it knows without reading it back
            self._messages.setdefault(mkey, text)
        for key, previous, mkey in links:
            self._links.setdefault(key, (previous, mkey))
        self._checkpoints[checkpoint.id] = ({**checkpoint.header, "checksum": checksum}, body, self._lines)

    def claim_answer(self, waiting: str, request_id: str, record: Mapping[str, str]) -> Mapping[str, str] | None:
        """Under a lock on the log, so two processes sharing the directory cannot both answer one request."""
        with self._locked():
            self._read()
            earlier = self._answers.get((waiting, request_id))
            if earlier is not None:
                return earlier
            line = dumps(["a", waiting, request_id, dict(record)]) + "\n"
            self._append(line, 1, waiting, "an answer to a request of")
            self._answers[(waiting, request_id)] = dict(record)
        return None

    def release_answer(self, waiting: str, request_id: str) -> None:
        with self._locked():
            self._read()
            if self._answers.pop((waiting, request_id), None) is not None:
                self._append(dumps(["r", waiting, request_id]) + "\n", 1, waiting, "the release of a request of")

    def answer_to(self, waiting: str, request_id: str) -> Mapping[str, str] | None:
        self._read()
        return self._answers.get((waiting, request_id))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the log (where the system has ``flock``), for a read-then-write."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: one process at a time, as for checkpoints
            yield
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise CheckpointError(f"cannot open {self.path}: {os_problem(exc, self.directory)}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing it releases the lock

    def delete(self, checkpoint_id: str) -> bool:
        self._read()
        if check_id(checkpoint_id) not in self._checkpoints:
            return False
        self._append(dumps(["d", checkpoint_id]) + "\n", 1, checkpoint_id, "the deletion of")
        del self._checkpoints[checkpoint_id]
        return True

    def _append(self, text: str, lines: int, checkpoint_id: str, what: str = "") -> None:
        """One write at the end of the log, after what is already there has been read; taken back if it fails."""
        self._read()
        if self._torn:
            raise CheckpointError(
                f"{self.path} ends with an incomplete record (a write was cut off); nothing was written after it. "
                "storage.repair() cuts the incomplete record off",
                checkpoint_id=checkpoint_id,
            )
        data = text.encode()
        start = self._read_to  # one writer at a time: the log ends here
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            view = memoryview(data)
            while view:  # a short write (a disk filling up): the rest, so the record is whole
                view = view[os.write(self._fd, view) :]
            if self.fsync:
                os.fsync(self._fd)
        except OSError as exc:
            kept = (
                "nothing of it was kept"
                if self._take_back(start)
                else "its incomplete record is left at the end: storage.repair() cuts it off"
            )
            fix = os_fix(exc, self.directory)
            raise CheckpointError(
                f"cannot write {what + ' ' if what else ''}checkpoint {checkpoint_id!r} to {self.path} ({kept}): "
                f"{os_reason(exc)}. {fix[:1].upper()}{fix[1:]}",
                checkpoint_id=checkpoint_id,
            ) from exc
        self._read_to += len(data)
        self._lines += lines

    def _take_back(self, start: int) -> bool:
        """Cut the log back to ``start`` after a failed write; whether it ends as it did before."""
        fd = self._fd
        if fd is None:
            return True
        try:
            if os.fstat(fd).st_size > start:
                os.ftruncate(fd, start)  # frees what the write took, so it works on a full disk too
            return True
        except OSError:
            return False

    def repair(self) -> int:
        """Cut off an incomplete last record and set damaged records aside; the bytes removed from the log.

        The damaged lines go to ``checkpoints.jsonl.damaged`` in the same directory (appended), so
        nothing that could be read by hand is lost; every intact record stays as it was.
        """
        self._read()
        if not self._torn and not self._damaged:
            return 0
        try:
            size = self.path.stat().st_size
            if not self._damaged:
                os.truncate(self.path, self._read_to)
                self._torn, self._tail_id = False, None
                return size - self._read_to
            with open(self.path, "rb") as f:
                data = f.read(self._read_to)
            keep, gone, at = [], [], 0
            for d in self._damaged:
                keep.append(data[at : d.start])
                gone.append(data[d.start : d.end])
                at = d.end
            keep.append(data[at:])
            with open(self.directory / self.DAMAGED, "ab") as f:
                f.write(b"".join(gone))
            self._replace(b"".join(keep))
        except OSError as exc:
            raise CheckpointError(f"cannot repair {self.path}: {os_problem(exc, self.directory)}") from exc
        self._read()
        return size - self._read_to

    def compact(self) -> None:
        """Rewrite the log with only the live checkpoints and what they refer to (atomically)."""
        self._read()
        if self._damaged or self._torn:
            raise CheckpointError(
                f"{self.path} has damaged records ({self._problems()}); compact() would drop them: "
                "storage.repair() first, then compact()"
            )
        keep_links: dict[str, tuple[str | None, str]] = {}
        keep_texts: set[str] = set()
        lines = []
        for cid, (header, body, _) in list(self._checkpoints.items()):
            checkpoint = self.load(cid)
            try:
                _, blobs = walk_chains(self._links, self._messages, (), checkpoint.blobs())
                refs = checkpoint.references(blobs)
            except RecursionError:
                raise CheckpointError(f"checkpoint {cid!r} in {self.path} {too_deep()}", checkpoint_id=cid) from None
            links, texts = walk_chains(self._links, self._messages, refs, checkpoint.blobs())
            keep_links.update(links)
            keep_texts.update(texts)
            keep_texts.update(m for _, m in links.values())
            lines.append(f'["c",{dumps(header)},{body}]')
        out = [dumps(["m", k, self._messages[k]]) for k in keep_texts if k in self._messages]
        out += [dumps(["l", k, p, m]) for k, (p, m) in keep_links.items()]
        out += [dumps(["a", w, r, record]) for (w, r), record in self._answers.items()]  # answered stays answered
        try:
            self._replace("".join(f"{line}\n" for line in [*out, *lines]).encode())
        except OSError as exc:
            raise CheckpointError(f"cannot compact {self.path}: {os_problem(exc, self.directory)}") from exc

    def _replace(self, data: bytes) -> None:
        """Put ``data`` in place of the log, atomically (a temporary file renamed over it); read it again after."""
        temporary = self.path.with_name(f".{self.LOG}.{secrets.token_hex(4)}.tmp")
        try:
            with open(temporary, "wb") as f:
                f.write(data)
                if self.fsync:
                    os.fsync(f.fileno())
            self.close()
            os.replace(temporary, self.path)
        finally:
            temporary.unlink(missing_ok=True)
        self._reset()

    def close(self) -> None:
        """Close the log (the next save opens it again)."""
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> FileCheckpointStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {os_problem(exc, self.directory)}") from exc
        end = data.rfind(b"\n") + 1
        self._torn = end < len(data)
        self._tail_id = _id_in(data[end:]) if self._torn else None
        start = self._read_to
        for line in data[:end].split(b"\n")[:-1]:
            self._lines += 1
            problem = self._checkpoint(line) if line.startswith(b'["c",') else self._record(line)
            if problem is not None:
                self._damaged.append(_Damage(self._lines, start, start + len(line) + 1, _id_in(line), problem))
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

    def __repr__(self) -> str:
        return f"FileCheckpointStorage({str(self.directory)!r})"
