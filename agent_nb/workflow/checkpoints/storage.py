"""Where checkpoints live: the protocol every storage follows, and the in-memory storage.

Every storage keeps checkpoints (a header and a small body, checksummed), messages (each
stored once, under the hash of its JSON) and the links that chain messages into
conversations (see ``format``). ``latest`` returns the newest checkpoint or raises: it never
falls back to an older one in silence. The others: ``sqlite`` (one file) and ``files`` (a directory).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ...errors import CheckpointError
from .format import Checkpoint, Link, StoredMessage, checkpoint_from_header, dumps, header_problem, too_deep

__all__ = [
    "CHANGED",
    "AnswerLedger",
    "Chains",
    "CheckpointInfo",
    "CheckpointStorage",
    "InMemoryCheckpointStorage",
    "belongs_to",
    "check_id",
    "info_of",
    "is_id",
    "missing",
    "new_checkpoint_id",
    "parse_body",
    "seal",
    "unseal",
    "walk_chains",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def new_checkpoint_id() -> str:
    """Ids sort by the time they were made, so the newest is found without reading any checkpoint."""
    return f"{time.time_ns():016x}-{secrets.token_hex(4)}"


def check_id(checkpoint_id: Any) -> str:
    """``checkpoint_id``, once it is known to be an id (so it can never name a file outside the storage)."""
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


class AnswerLedger(Protocol):
    """What a storage keeps of requests already answered, so that none is answered twice.

    An answer is keyed by the checkpoint the request waited in and its request id. The
    shipped storages all keep one (the file and SQLite ones for every process that shares
    them); a storage of your own without it still works, and answers are then checked only
    within one workflow object.
    """

    def claim_answer(self, waiting: str, request_id: str, record: Mapping[str, str]) -> Mapping[str, str] | None:
        """Record that ``request_id``, waiting in checkpoint ``waiting``, is answered now.

        When it was answered before, nothing is recorded and that earlier answer's record returned.
        """

    def release_answer(self, waiting: str, request_id: str) -> None:
        """Forget a claim whose run failed: the request may be answered again."""

    def answer_to(self, waiting: str, request_id: str) -> Mapping[str, str] | None:
        """The record of the answer given to ``request_id`` in ``waiting``, or ``None``."""


def seal(checkpoint: Checkpoint) -> tuple[str, str, str]:
    """The header (with the checksum) and the body of a checkpoint as JSON, and the checksum."""
    body = dumps(checkpoint.body)
    fields = dumps(checkpoint.header)
    checksum = hashlib.sha256(f"{fields}\n{body}".encode()).hexdigest()
    return f'{fields[:-1]},"checksum":"{checksum}"}}', body, checksum  # the header as dumps would write it


def _checksum(header: Mapping[str, Any], body: str) -> str:
    fields = {k: v for k, v in header.items() if k != "checksum"}
    return hashlib.sha256(f"{dumps(fields)}\n{body}".encode()).hexdigest()


CHANGED = "was changed after it was written: its checksum does not match"


def unseal(
    header_text: str, body_text: str, where: str, *, remedy: str = "", checkpoint_id: str | None = None
) -> Checkpoint:
    """Parse and check a sealed checkpoint: truncated, foreign, changed or too deep ones raise ``CheckpointError``.

    ``where`` starts each message (it names the checkpoint and its file), ``remedy`` ends it.
    """

    def bad(problem: str) -> CheckpointError:
        return CheckpointError(f"{where} {problem}" + (f"; {remedy}" if remedy else ""), checkpoint_id=checkpoint_id)

    try:
        header = json.loads(header_text)
    except RecursionError:
        raise bad(f"is unreadable: its header {too_deep()}") from None
    except ValueError as exc:
        raise bad(f"is unreadable: its header is not JSON ({exc})") from None
    problem = header_problem(header)
    if problem is not None:  # the format is checked before anything else
        raise bad(problem)
    body = parse_body(body_text, bad)
    if header.get("checksum") != _checksum(header, body_text):
        raise bad(CHANGED)
    return checkpoint_from_header(header, body, where)


def parse_body(body_text: str, bad: Callable[[str], CheckpointError]) -> Any:
    """A checkpoint's body from its JSON text; ``bad(problem)`` makes the error for one that cannot be read."""
    try:
        return json.loads(body_text)
    except RecursionError:
        raise bad(too_deep()) from None
    except ValueError as exc:
        raise bad(f"is truncated or damaged: its body is not JSON ({exc})") from None


def is_id(value: Any) -> bool:
    """Whether ``value`` is a checkpoint id (as ``check_id`` accepts)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def info_of(header: Mapping[str, Any]) -> CheckpointInfo:
    """What ``list`` says of a checkpoint, from its parsed header."""
    return CheckpointInfo(
        header["id"], header["workflow"], header["superstep"], header["status"], header["timestamp"], header["previous"]
    )


Chains = tuple[Mapping[str, tuple["str | None", str]], Mapping[str, str]]


def walk_chains(
    links: Mapping[str, tuple[str | None, str]], messages: Mapping[str, str], tips: Iterable[str], blobs: Iterable[str]
) -> Chains:
    """``read_chains`` over links and messages held in dicts (the in-memory and file storages)."""
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
        self._answers: dict[tuple[str, str], dict[str, str]] = {}

    def claim_answer(self, waiting: str, request_id: str, record: Mapping[str, str]) -> Mapping[str, str] | None:
        earlier = self._answers.setdefault((waiting, request_id), dict(record))
        return None if earlier == record else earlier

    def release_answer(self, waiting: str, request_id: str) -> None:
        self._answers.pop((waiting, request_id), None)

    def answer_to(self, waiting: str, request_id: str) -> Mapping[str, str] | None:
        return self._answers.get((waiting, request_id))

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
            raise missing(checkpoint_id, self._checkpoints)
        return stored

    def read_chains(self, tips: Iterable[str], blobs: Iterable[str] = ()) -> Chains:
        return walk_chains(self._links, self._messages, tips, blobs)

    def list(self, workflow: str | None = None) -> list[CheckpointInfo]:
        infos = (info_of(self._checkpoints[k].header) for k in sorted(self._checkpoints))
        return [i for i in infos if belongs_to(i, workflow)]

    def latest(self, workflow: str | None = None) -> Checkpoint | None:
        infos = self.list(workflow)
        return self.load(infos[-1].id) if infos else None

    def delete(self, checkpoint_id: str) -> bool:
        return self._checkpoints.pop(check_id(checkpoint_id), None) is not None

    def __repr__(self) -> str:
        return f"InMemoryCheckpointStorage({len(self._checkpoints)} checkpoints, {len(self._messages)} messages)"


def belongs_to(info: CheckpointInfo, workflow: str | None) -> bool:
    """Whether a listed checkpoint is of ``workflow`` (any, for ``None``)."""
    return workflow is None or info.workflow == workflow


def missing(checkpoint_id: str, known: Iterable[str], damage: str = "", place: object = None) -> CheckpointError:
    """The error for an id the storage does not hold, naming the newest ones it does (and its file, ``place``)."""
    ids = sorted(known)
    listed = ", ".join(ids[-5:]) if ids else "none"
    where = f", {place}" if place is not None else ""
    return CheckpointError(
        f"there is no checkpoint {checkpoint_id!r} in this storage{where} (newest: {listed}){damage}; "
        "storage.list() shows them all",
        checkpoint_id=checkpoint_id,
    )
