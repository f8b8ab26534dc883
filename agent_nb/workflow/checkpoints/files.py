"""``FileCheckpointStorage``: checkpoints in a directory, as one append-only log of JSON lines, written.

Every write is made under an exclusive lock on the log (``flock``, where the system has it), once
the log has been read to its end: processes (and storages) sharing the directory append one after
another, each at the true end of the log, and a write that fails is cut back to where it began,
never past what another appended. Reading the log, and saying what is damaged in it, is ``log``'s.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ...disk import os_problem, write_all, write_whole
from ...errors import CheckpointError, bad_argument
from .format import Checkpoint, Link, StoredMessage, dumps, too_deep
from .log import BINARY, LogReader, fcntl, read_at
from .storage import check_id, seal, walk_chains

__all__ = ["FileCheckpointStorage"]


class FileCheckpointStorage(LogReader):
    """Checkpoints in ``directory``, as one append-only log of JSON lines: ``checkpoints.jsonl``.

    A checkpoint is one write at the end of the log: the messages and links it adds, then
    its own line (header with checksum, and body). Nothing is ever rewritten in place, so a
    reader never sees half of a checkpoint. A write that fails (a full disk) is taken back, so
    the log ends as before; one cut off by a crash leaves an incomplete last line. Every
    checkpoint line is checked against its checksum as it is read: ``latest``, ``load`` and
    ``list`` give exactly what was written, or raise ``CheckpointError`` naming the line, and
    never fall back to an older checkpoint. ``repair()`` cuts off an incomplete last record and
    sets damaged records aside (in ``checkpoints.jsonl.damaged``). Nothing is unpickled or
    evaluated on load. ``fsync=True`` also flushes each write to the disk (survives a power cut;
    costs a disk round trip).

    Several processes may share the directory: each write takes an exclusive lock on the log and
    reads what the others appended before it writes (a request one of them answered is refused to
    the others). Where the system has no ``flock`` (Windows), one process writes a log at a time.

    Why one log and not a file per checkpoint: creating and renaming a file costs far more
    than appending a line (see bench/checkpoint_bench.py), and a checkpoint is taken after
    every superstep. ``compact()`` rewrites the log without deleted checkpoints, atomically
    (a temporary file renamed into place).
    """

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self._fd: int | None = None
        """The log, open to append and to lock: one descriptor per storage (a second would wait for its lock)."""
        self._pid = os.getpid()
        """The process that opened ``_fd`` (a child made by ``fork`` opens its own)."""
        self._depth = 0
        """How many ``_locked`` blocks of this storage are open (the lock is taken by the first)."""
        path = Path(directory)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise bad_argument(
                "FileCheckpointStorage", "directory", str(directory), "it names a file; give a directory"
            ) from None
        except OSError as exc:
            raise CheckpointError(f"cannot create the checkpoint directory {path}: {os_problem(exc, path)}") from exc
        self.fsync = fsync
        super().__init__(path)

    # -- writing ------------------------------------------------------------------------

    def save(self, checkpoint: Checkpoint, links: Sequence[Link], messages: Sequence[StoredMessage]) -> None:
        check_id(checkpoint.id)
        header, body, checksum = seal(checkpoint)
        parts = [dumps(["m", *m]) for m in messages]
        parts += [dumps(["l", *link]) for link in links]
        parts.append(f'["c",{header},{body}]')  # the body as JSON, not as a string of it: nothing to escape
        with self._locked(checkpoint.id) as fd:
            line = self._append(fd, "\n".join(parts) + "\n", len(parts), checkpoint.id)
            if line is None:
                return  # the log was read again after the write, and this checkpoint with it
            for mkey, text in messages:  # what this storage wrote it knows without reading it back
                self._messages.setdefault(mkey, text)
            for key, previous, mkey in links:
                self._links.setdefault(key, (previous, mkey))
            self._checkpoints[checkpoint.id] = ({**checkpoint.header, "checksum": checksum}, body, line)

    def claim_answer(self, waiting: str, request_id: str, record: Mapping[str, str]) -> Mapping[str, str] | None:
        """Under the lock on the log, so two processes sharing the directory cannot both answer one request."""
        what = "an answer to a request of"
        with self._locked(waiting, what) as fd:
            self._read()
            earlier = self._answers.get((waiting, request_id))
            if earlier is not None:
                return earlier
            self._append(fd, dumps(["a", waiting, request_id, dict(record)]) + "\n", 1, waiting, what)
            self._answers.setdefault((waiting, request_id), dict(record))
        return None

    def release_answer(self, waiting: str, request_id: str) -> None:
        self._read()
        if (waiting, request_id) not in self._answers:
            return
        what = "the release of a request of"
        with self._locked(waiting, what) as fd:
            self._read()
            if (waiting, request_id) in self._answers:
                self._append(fd, dumps(["r", waiting, request_id]) + "\n", 1, waiting, what)
                self._answers.pop((waiting, request_id), None)

    def delete(self, checkpoint_id: str) -> bool:
        self._read()
        if check_id(checkpoint_id) not in self._checkpoints:
            return False
        what = "the deletion of"
        with self._locked(checkpoint_id, what) as fd:
            self._read()
            if checkpoint_id not in self._checkpoints:
                return False  # deleted by another meanwhile
            self._append(fd, dumps(["d", checkpoint_id]) + "\n", 1, checkpoint_id, what)
            self._checkpoints.pop(checkpoint_id, None)
        return True

    @contextlib.contextmanager
    def _locked(self, checkpoint_id: str | None = None, what: str = "") -> Iterator[int]:
        """The log's descriptor, under an exclusive lock on the log; re-entrant within this storage.

        Other storages (in this process or another) wait for it, and so do their reads. An
        ``OSError`` opening or locking the log becomes the ``CheckpointError`` of a write of
        ``what`` checkpoint ``checkpoint_id``; without ``checkpoint_id`` it is raised as it is.
        """
        with self._mutex:
            fd = self._fd
            if fd is None or not self._depth:
                try:
                    fd = self._lock()
                except OSError as exc:
                    if checkpoint_id is None:
                        raise
                    raise self._cannot_write(exc, checkpoint_id, what, "nothing of it was kept") from exc
            self._depth += 1
            try:
                yield fd
            finally:
                self._depth -= 1
                if not self._depth and self._fd is not None and fcntl is not None:
                    with contextlib.suppress(OSError):
                        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _lock(self) -> int:
        """Open the log (once) and lock it; if another storage put a new log in its place meanwhile, that one."""
        while True:
            if self._fd is not None and self._pid != os.getpid():
                self.close()  # made by fork: the descriptor (and any lock on it) is shared with the parent
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | BINARY, 0o644)
                self._pid = os.getpid()
            if fcntl is None:  # pragma: no cover - Windows
                return self._fd
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            with contextlib.suppress(FileNotFoundError):
                if os.path.samestat(os.fstat(self._fd), os.stat(self.path)):
                    return self._fd
            self.close()  # replaced (compact, repair) or removed since it was opened: closing also unlocks

    def _held(self) -> int | None:
        return self._fd if self._depth else None

    def _append(self, fd: int, text: str, lines: int, checkpoint_id: str, what: str = "") -> int | None:
        """One write at the end of the log (``fd``, locked by the caller), once read to it; taken back if it fails.

        The number of its last line; or ``None`` when the log was not as long as expected after it
        (something appended without taking the lock), and was read again, this write with it.
        """
        self._read()  # to the end: while the lock is held, nobody else appends
        if self._torn:
            raise CheckpointError(
                f"{self.path} ends with an incomplete record (a write was cut off); nothing was written after it. "
                "storage.repair() cuts the incomplete record off",
                checkpoint_id=checkpoint_id,
            )
        data = text.encode()
        start = self._read_to
        try:
            write_all(fd, data)  # the whole record, or the error
            if self.fsync:
                os.fsync(fd)
        except OSError as exc:
            kept = (
                "nothing of it was kept"
                if self._take_back(fd, start)
                else "its incomplete record is left at the end: storage.repair() cuts it off"
            )
            raise self._cannot_write(exc, checkpoint_id, what, kept) from exc
        except BaseException:  # interrupted inside the write: the log ends as it did before
            self._take_back(fd, start)
            raise
        try:
            size = os.fstat(fd).st_size
        except OSError:
            size = -1
        if size != start + len(data):
            self._read()
            return None
        self._read_to = size
        self._lines += lines
        return self._lines

    def _take_back(self, fd: int, start: int) -> bool:
        """Cut the log back to ``start`` after a failed write; whether it ends as it did before."""
        try:
            if os.fstat(fd).st_size > start:
                os.ftruncate(fd, start)  # frees what the write took, so it works on a full disk too
            return True
        except OSError:
            return False

    def _cannot_write(self, exc: OSError, checkpoint_id: str, what: str, kept: str) -> CheckpointError:
        return CheckpointError(
            f"cannot write {what + ' ' if what else ''}checkpoint {checkpoint_id!r} to {self.path} ({kept}): "
            f"{os_problem(exc, self.directory)}",
            checkpoint_id=checkpoint_id,
        )

    def repair(self) -> int:
        """Cut off an incomplete last record and set damaged records aside; the bytes removed from the log.

        The damaged lines go to ``checkpoints.jsonl.damaged`` in the same directory (appended), so
        nothing that could be read by hand is lost; every intact record stays as it was.
        """
        self._read()
        if not self._torn and not self._damaged:
            return 0
        try:
            with self._locked() as fd:
                self._read()
                size = os.fstat(fd).st_size
                if not self._damaged:
                    os.ftruncate(fd, self._read_to)
                    self._torn, self._tail_id = False, None
                    return size - self._read_to
                data = read_at(fd, 0, self._read_to)
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
        try:
            with self._locked():
                self._read()
                if self._damaged or self._torn:
                    raise CheckpointError(
                        f"{self.path} has damaged records ({self._problems()}); compact() would drop them: "
                        "storage.repair() first, then compact()"
                    )
                self._replace(self._compacted())
        except OSError as exc:
            raise CheckpointError(f"cannot compact {self.path}: {os_problem(exc, self.directory)}") from exc

    def _compacted(self) -> bytes:
        """The log with only the live checkpoints, the messages and links they refer to, and the answers."""
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
        return "".join(f"{line}\n" for line in [*out, *lines]).encode()

    def _replace(self, data: bytes) -> None:
        """Put ``data`` in place of the log (under the lock), then read it again from its start.

        Closing the old log's descriptor releases the lock: a storage waiting for it finds the new
        log at the path and locks that one instead.
        """
        if fcntl is None:  # pragma: no cover - Windows replaces no file that is open (and has no lock to keep)
            self.close()
        write_whole(self.path, data, fsync=self.fsync)
        self.close()
        self._reset()

    def close(self) -> None:
        """Close the log (the next write opens it again)."""
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> FileCheckpointStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileCheckpointStorage({str(self.directory)!r})"
