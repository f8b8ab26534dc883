"""Checkpoints: what a workflow holds between supersteps, as JSON that refers to each message once.

Messages are immutable and shared, so a checkpoint never copies them per executor.
Each message's JSON is stored once, under the hash of that JSON. A conversation is a
hash chain of *links* (a message's hash and the key of the link before it), so a whole
conversation is one key: the key of its last link. Eight executors holding one
conversation cost eight keys; a checkpoint writes only the messages and links that are
new since the last one. Keys are content hashes, so anything changed on disk is detected
on load.

``encoder`` turns a workflow's values into this JSON, ``decoder`` turns it back, the
storages (``storage``, ``sqlite``, ``files``) keep it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import CheckpointError

if TYPE_CHECKING:
    from ..workflow import Workflow

__all__ = [
    "FORMAT",
    "Checkpoint",
    "CheckpointError",
    "Link",
    "StoredMessage",
    "graph_parts",
    "graph_signature",
    "header_problem",
    "too_deep",
]

FORMAT = 1
"""The checkpoint format this version of agent_nb writes and reads."""

Link = tuple[str, "str | None", str]
"""One position of a conversation: ``(key, key of the link before it, message hash)``."""
StoredMessage = tuple[str, str]
"""``(message hash, message JSON)``."""


def message_hash(message_json: str) -> str:
    return hashlib.sha256(message_json.encode()).hexdigest()[:32]


def link_key(previous: str | None, message: str) -> str:
    return hashlib.sha256(f"{previous or ''}\n{message}".encode()).hexdigest()[:32]


def type_name_of(cls: type) -> str:
    """How a checkpoint names a class: ``module:Qualname`` (looked up, never imported, on load)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def graph_parts(workflow: Workflow) -> list[str]:
    """What a checkpoint depends on, in words: the start, each executor (id, kind, class), each edge group."""
    parts = [f"start {workflow.start_executor_id}"]
    parts += sorted(f"executor {eid} ({ex.kind}, {type(ex).__qualname__})" for eid, ex in workflow.executors.items())
    for g in workflow.groups:
        when = " when a condition holds" if g.condition is not None else ""
        parts.append(f"{g.kind} edge {', '.join(g.sources)} -> {', '.join(g.targets)}{when}")
    return parts


def graph_signature(parts: list[str]) -> str:
    """A hash of ``graph_parts``: a checkpoint resumes only in a workflow with the same one."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One checkpoint, as stored: a small JSON document that refers to stored messages and texts.

    ``status`` is ``"running"`` (taken between supersteps), ``"waiting"`` (the run ended
    with requests to answer) or ``"completed"``.
    """

    id: str
    workflow: str
    signature: str
    superstep: int
    timestamp: str
    status: str
    previous: str | None
    body: Mapping[str, Any]
    """Executors, sessions, messages in flight, shared state, pending requests (encoded)."""
    format: int = FORMAT

    @property
    def header(self) -> dict[str, Any]:
        """Everything but the body: what ``list`` shows without decoding a checkpoint."""
        return {
            "format": self.format,
            "id": self.id,
            "workflow": self.workflow,
            "signature": self.signature,
            "superstep": self.superstep,
            "timestamp": self.timestamp,
            "status": self.status,
            "previous": self.previous,
        }

    def tips(self) -> set[str]:
        """The link keys the body refers to (each stands for a whole chain of messages)."""
        found: set[str] = set()
        _collect(self.body, found, ("$conv", "$msgs", "$msg"))
        return found

    def blobs(self) -> set[str]:
        """The hashes of the stored JSON texts (executor and session states) the body refers to."""
        found: set[str] = set()
        _collect(self.body, found, ("$blob",))
        return found

    def references(self, texts: Mapping[str, str]) -> set[str]:
        """The link keys the checkpoint needs: in its body, and in the stored texts it refers to."""
        found = self.tips()
        for key in self.blobs():
            text = texts.get(key)
            if text is not None:
                with contextlib.suppress(ValueError):  # the decoder names a damaged text
                    _collect(json.loads(text), found, ("$conv", "$msgs", "$msg"))
        return found

    def __repr__(self) -> str:
        return (
            f"Checkpoint({self.id!r}, workflow={self.workflow!r}, superstep={self.superstep}, status={self.status!r})"
        )


def too_deep(done: str = "read") -> str:
    """Why a value cannot be read (or stored): it is nested deeper than the stack allows (forged, damaged, or odd)."""
    limit = sys.getrecursionlimit()
    fix = "; store it flatter" if done == "stored" else ""
    return f"is nested too deeply to be {done} (more levels than Python's recursion limit, {limit}, allows){fix}"


def header_problem(header: Any) -> str | None:
    """What is wrong with a stored header (a format this version does not read, a missing field), or ``None``."""
    if not isinstance(header, Mapping):
        return "is not a checkpoint (its header is not a JSON object)"
    version = header.get("format")
    if version != FORMAT:
        return (
            f"has format {version!r}; this agent_nb reads format {FORMAT}. "
            "It was written by another version: resume it with that version, or start the run again"
        )
    try:
        _from_header(header, {})
    except (KeyError, TypeError, ValueError) as exc:
        return f"is incomplete: its header lacks or garbles {exc}"
    return None


def checkpoint_from_header(header: Mapping[str, Any], body: Mapping[str, Any], where: str) -> Checkpoint:
    """Rebuild a checkpoint from its stored parts; anything missing or foreign is a ``CheckpointError``."""
    problem = header_problem(header)
    if problem is not None:
        raise CheckpointError(f"{where} {problem}")
    return _from_header(header, body)


def _from_header(header: Mapping[str, Any], body: Mapping[str, Any]) -> Checkpoint:
    return Checkpoint(
        id=str(header["id"]),
        workflow=str(header["workflow"]),
        signature=str(header["signature"]),
        superstep=int(header["superstep"]),
        timestamp=str(header["timestamp"]),
        status=str(header["status"]),
        previous=None if header["previous"] is None else str(header["previous"]),
        body=body,
    )


def _collect(value: Any, found: set[str], tags: tuple[str, ...]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in tags and isinstance(v, str):
                found.add(v)
            else:
                _collect(v, found, tags)
    elif isinstance(value, list):
        for v in value:
            _collect(v, found, tags)


_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps(value: Any) -> str:
    """Compact JSON with NaN refused, as every stored document is written (one encoder, made once)."""
    return _JSON.encode(value)
