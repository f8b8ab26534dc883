"""``FileCheckpointStorage``: checkpoints in a directory, as one append-only log of JSON lines."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ...errors import CheckpointError
from .format import Checkpoint, Link, StoredMessage, dumps
from .storage import Chains, CheckpointInfo, belongs_to, check_id, info_of, missing, seal, unseal, walk_chains

__all__ = ["FileCheckpointStorage"]


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
        header, body, checksum = seal(checkpoint)
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
            checkpoint = unseal(dumps(header), body, f"checkpoint {header.get('id')!r}")
            _, blobs = walk_chains(self._links, self._messages, (), checkpoint.blobs())
            links, texts = walk_chains(self._links, self._messages, checkpoint.references(blobs), checkpoint.blobs())
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
            raise missing(checkpoint_id, self._checkpoints, self._damage())
        header, body = stored
        return unseal(dumps(header), body, f"checkpoint {checkpoint_id!r} (in {self.path})")

    def _damage(self) -> str:
        if not self._damaged:
            return ""
        lines = ", ".join(map(str, self._damaged[:5]))
        return f"; {self.path} has {len(self._damaged)} unreadable lines (line {lines}): it was edited or damaged"

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        self._read()
        return walk_chains(self._links, self._messages, tips, blobs)

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        self._read()
        out = []
        for header, _ in self._checkpoints.values():
            try:
                info = info_of(header)
            except (KeyError, TypeError):
                raise CheckpointError(f"a checkpoint header in {self.path} is damaged: {header!r:.80}") from None
            if belongs_to(info, workflow):
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
