"""Taking a workflow's checkpoints during a run, and putting a checkpoint back into a workflow."""

from __future__ import annotations

import contextlib
import json
import typing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, get_origin

from ...conversation import Conversation
from ...errors import CheckpointError
from ...history_writes import current as current_writes
from ...sessions import AgentSession
from .._types import flatten
from ..requests import PendingRequest
from .decoder import Decoder, known_types
from .encoder import Encoder
from .format import Checkpoint, dumps, graph_parts, graph_signature, too_deep
from .storage import CheckpointStorage, new_checkpoint_id

if TYPE_CHECKING:
    from ..runner import _Run
    from ..workflow import Workflow

__all__ = ["Checkpointer", "Restored"]

_BUILTINS = {t.__name__: t for t in (str, int, float, bool, bytes, list, tuple, dict, set, type(None))}


class Checkpointer:
    """One workflow's checkpoints in one storage: it remembers which messages the storage already has."""

    def __init__(self, workflow: Workflow, storage: CheckpointStorage) -> None:
        if not isinstance(storage, CheckpointStorage):
            raise TypeError(
                f"workflow {workflow.name!r}: checkpoint_storage must be a checkpoint storage "
                f"(InMemoryCheckpointStorage, FileCheckpointStorage, SQLiteCheckpointStorage), got {storage!r}"
            )
        self.workflow = workflow
        self.storage = storage
        self.encoder = Encoder()
        self.last_id: str | None = None
        self._graph = graph_parts(workflow)
        self._signature = graph_signature(self._graph)
        self._graph_blob: dict[str, str] | None = None  # stored once, on the first checkpoint
        self._memo: dict[str, tuple[dict[str, Any], dict[str, str], dict[str, AgentSession]]] = {}
        """executor id -> (its state at the last checkpoint, where that is stored, the sessions it holds)."""
        self.unkept: dict[tuple[int, str], str] = {}
        """(provider, session id) -> why: held history the last checkpoint could not keep (no executor owns it)."""

    def take(self, run: _Run, status: str) -> Checkpoint:
        """Encode everything the workflow holds now and save it; a value that cannot be stored raises.

        Only executors that ran since the last checkpoint (``run.touched``; ``None``: all) are looked
        at, and only those whose state changed are encoded again; so are their sessions' states.
        """
        enc = self.encoder
        workflow = self.workflow
        touched = run.touched
        if self._graph_blob is None:
            self._graph_blob = enc.blob(dumps(self._graph))
        executors: dict[str, Any] = {}
        sessions: dict[str, AgentSession] = {}
        recheck: set[str] = set()
        previous = None  # the memo of the executor before: executors that never ran have the same state
        for eid, ex in workflow.executors.items():
            memo = self._memo.get(eid)
            if memo is None or touched is None or eid in touched:
                try:
                    state = ex.checkpoint_state()
                    if memo is not None and _same(memo[0], state):
                        recheck.update(memo[2])
                    elif memo is None and previous is not None and not previous[2] and _same(previous[0], state):
                        memo = self._memo[eid] = previous
                    else:
                        enc.sessions, enc.where = {}, f"checkpoint of workflow {workflow.name!r}: executor {eid!r}"
                        stored = enc.blob(dumps(enc.value(state, "its state")))
                        memo = self._memo[eid] = (state, stored, enc.sessions)
                        recheck.update(enc.sessions)
                except RecursionError:  # comparing it, or its JSON (Encoder.value names the part of it otherwise)
                    raise CheckpointError(
                        f"checkpoint of workflow {workflow.name!r}: executor {eid!r}: its state {too_deep('stored')}"
                    ) from None
            executors[eid] = memo[1]
            sessions.update(memo[2])
            previous = memo
        enc.sessions, enc.where = {}, f"checkpoint of workflow {workflow.name!r}"
        body = {
            "graph": self._graph_blob,
            "executors": executors,
            "in_flight": [[t, enc.value(m, f"a message in flight to {t!r}")] for t, m in run._next],
            "fan_in": [
                [index, {s: enc.value(ms, f"a message from {s!r} waiting at a fan-in") for s, ms in buffer.items()}]
                for index, buffer in run._fan_in.items()
            ],
            "state": enc.value(run.state, "the shared state"),
            "pending": [
                {
                    "request_id": p.request_id,
                    "executor_id": p.executor_id,
                    "data": enc.value(p.data, f"the data of request {p.request_id!r}"),
                    "response_type": type_to_json(p.response_type, p.request_id),
                }
                for p in run.pending.values()
            ],
            "request_seq": run.request_seq,
        }
        if held := self._held(enc):
            body["held"] = held
        sessions.update(enc.sessions)
        recheck.update(enc.sessions)
        body["sessions"] = {sid: enc.session_state(s, recheck=sid in recheck) for sid, s in sessions.items()}
        checkpoint = Checkpoint(
            id=new_checkpoint_id(),
            workflow=workflow.name,
            signature=self._signature,
            superstep=run.superstep,
            timestamp=datetime.now(timezone.utc).isoformat(timespec="microseconds"),
            status=status,
            previous=self.last_id,
            body=body,
        )
        links, messages = enc.take_new()
        try:
            self.storage.save(checkpoint, links, messages)
        except BaseException:
            enc.forget_written()  # the storage may hold none of them: write every one again next time
            self._memo.clear()
            self._graph_blob = None
            raise
        self.last_id = checkpoint.id
        return checkpoint

    def _held(self, enc: Encoder) -> list[list[Any]]:
        """The history this run has not written yet (it is written when the run completes).

        Each entry names the executor whose agent keeps that history, so a resumed run, in
        this process or another, writes it to the same place: nothing the run did before the
        checkpoint is lost, and nothing is written twice.
        """
        writes = current_writes()
        if writes is None:
            return []
        owners = {
            id(getattr(getattr(ex, "agent", None), "history", None)): eid for eid, ex in self.workflow.executors.items()
        }
        held: list[list[Any]] = []
        self.unkept = {}
        for provider, session, messages in writes.entries():
            eid = owners.get(id(provider))
            if eid is not None:
                held.append([eid, session.session_id, enc.value(messages, f"the history {eid!r} has not written yet")])
            else:
                self.unkept[(id(provider), session.session_id)] = (
                    f"the checkpoints do not keep what this run holds of session {session.session_id!r} in "
                    f"{type(provider).__name__}: no executor's agent keeps its history there (an agent run inside "
                    "a handler?). This run writes it when it completes; a run resumed from a checkpoint will not. "
                    "Wrap that agent in an AgentExecutor to have it kept"
                )
        return held

    def _stored_graph(self, checkpoint: Checkpoint) -> list[str]:
        """The graph a checkpoint was taken in, in words (for the error that says what changed)."""
        ref = checkpoint.body.get("graph")
        key = ref.get("$blob") if isinstance(ref, dict) else None
        if not isinstance(key, str):
            return []
        _, texts = self.storage.read_chains((), (key,))
        with contextlib.suppress(KeyError, ValueError):
            parts = json.loads(texts[key])
            return [str(p) for p in parts] if isinstance(parts, list) else []
        return []

    def restore(self, checkpoint_id: str) -> Restored:
        """Load and decode a checkpoint for this workflow; nothing of the workflow is touched yet."""
        try:
            checkpoint = self.storage.load(checkpoint_id)
        except CheckpointError as exc:
            exc.checkpoint_id = exc.checkpoint_id or checkpoint_id
            raise
        workflow = self.workflow
        where = f"checkpoint {checkpoint_id!r}"
        if checkpoint.signature != self._signature:
            raise CheckpointError(
                f"{where} was taken in a workflow whose graph differs from {workflow.name!r}: "
                f"{_graph_change(self._stored_graph(checkpoint), graph_parts(workflow))}. "
                "Resume it in the workflow that wrote it, or start a new run",
                checkpoint_id=checkpoint_id,
            )
        body = checkpoint.body
        try:
            _, texts = self.storage.read_chains((), checkpoint.blobs())
            links, messages = self.storage.read_chains(checkpoint.references(texts), ())
            messages = {**messages, **texts}
            types = known_types(workflow)
            pending_types = [type_from_json(p["response_type"], where, types) for p in body["pending"]]
            dec = Decoder(links, messages, types, body["sessions"], where)
            executors = {eid: dec.value(state) for eid, state in body["executors"].items()}
            in_flight = [(t, dec.value(m)) for t, m in body["in_flight"]]
            fan_in = {int(i): {s: dec.value(ms) for s, ms in buf.items()} for i, buf in body["fan_in"]}
            state = dec.value(body["state"])
            pending = {
                p["request_id"]: PendingRequest(p["request_id"], p["executor_id"], dec.value(p["data"]), t)
                for p, t in zip(body["pending"], pending_types, strict=True)
            }
            seq = int(body["request_seq"])
            held = [(str(eid), str(sid), list(dec.value(ms))) for eid, sid, ms in body.get("held", ())]
            _check_fits(workflow, where, executors, in_flight, fan_in, pending)
            for eid, _, _ in held:
                if getattr(getattr(workflow.executors.get(eid), "agent", None), "history", None) is None:
                    raise CheckpointError(
                        f"{where} holds history that executor {eid!r} had not written yet, but this workflow has no "
                        "such executor with a history provider; resume it in the workflow that wrote it"
                    )
        except CheckpointError as exc:
            exc.checkpoint_id = checkpoint_id
            raise
        except RecursionError:
            raise CheckpointError(f"{where} {too_deep()}", checkpoint_id=checkpoint_id) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise CheckpointError(
                f"{where} is incomplete or damaged ({type(exc).__name__}: {exc}); it cannot be restored",
                checkpoint_id=checkpoint_id,
            ) from None
        self.encoder.seed(dec)  # facts about the storage: the resumed run will not write these again
        return Restored(checkpoint, executors, in_flight, fan_in, state, pending, seq, held)


def _check_fits(
    workflow: Workflow,
    where: str,
    executors: dict[str, Any],
    in_flight: list[tuple[str, Any]],
    fan_in: dict[int, dict[str, Any]],
    pending: dict[str, PendingRequest],
) -> None:
    """Every executor, target, request and fan-in the checkpoint names is one of this workflow's, and all are there."""
    known = workflow.executors
    unknown = sorted(set(executors) - set(known))
    if unknown:
        raise CheckpointError(f"{where} holds executors this workflow lacks: {unknown}")
    lacking = sorted(set(known) - set(executors))
    if lacking:
        raise CheckpointError(
            f"{where} lacks executors of this workflow: {lacking}; it was edited, or written by another workflow"
        )
    about = [f"a message in flight to {t!r}" for t, _ in in_flight if t not in known]
    about += [f"request {p.request_id!r} of {p.executor_id!r}" for p in pending.values() if p.executor_id not in known]
    if about:
        raise CheckpointError(
            f"{where} holds {about[0]}, which is not an executor of this workflow ({workflow.name!r}); "
            "resume it in the workflow that wrote it"
        )
    groups = {g.index: g for g in workflow.fan_in_groups}
    for index, buffer in fan_in.items():
        group = groups.get(index)
        if group is None:
            raise CheckpointError(
                f"{where} holds messages waiting at fan-in {index}, which this workflow does not have"
            )
        strangers = sorted(set(buffer) - set(group.sources))
        if strangers:
            raise CheckpointError(
                f"{where} holds messages waiting at the fan-in into {group.targets[0]!r} from {strangers}, "
                f"which are not among its sources {list(group.sources)}"
            )


@dataclass(frozen=True, slots=True)
class Restored:
    """A decoded checkpoint, ready to be put into the workflow."""

    checkpoint: Checkpoint
    executors: dict[str, Any]
    in_flight: list[tuple[str, Any]]
    fan_in: dict[int, dict[str, list[Any]]]
    state: dict[str, Any]
    pending: dict[str, PendingRequest]
    request_seq: int
    held: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    """History the checkpointed run had not written yet: (executor id, session id, messages)."""

    @property
    def finished(self) -> bool:
        return not self.in_flight and not self.pending and not self.fan_in


def _same(before: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether an executor's state is unchanged: conversations and sessions by identity, the rest by value.

    A session's own state is compared apart (``Encoder.session_state``).
    """
    if before.keys() != now.keys():
        return False
    for key, value in now.items():
        old = before[key]
        if old is value:
            continue
        if type(value) in (Conversation, AgentSession) or old != value:
            return False
    return True


def _graph_change(before: list[str], now: list[str]) -> str:
    gone = [p for p in before if p not in now]
    new = [p for p in now if p not in before]
    parts = []
    if gone:
        parts.append("it had " + "; ".join(gone))
    if new:
        parts.append("it now has " + "; ".join(new))
    return ", ".join(parts) or "its signature differs"


def type_to_json(spec: Any, request_id: str) -> Any:
    if spec is Any or spec is object:
        return "Any"
    origin = get_origin(spec)
    if origin is not None and len(flatten(spec)) > 1:
        return {"union": [type_to_json(m, request_id) for m in flatten(spec)]}
    if origin is not None:  # list[str] -> list (items are checked when the answer is given, not when stored)
        spec = origin
    if isinstance(spec, type):
        if spec.__module__ == "builtins":
            return spec.__name__
        return f"{spec.__module__}:{spec.__qualname__}"
    raise CheckpointError(f"request {request_id!r}: its response type {spec!r} cannot be stored in a checkpoint")


def type_from_json(value: Any, where: str, types: dict[str, type]) -> Any:
    if value == "Any":
        return Any
    if isinstance(value, dict) and "union" in value:
        members = tuple(type_from_json(m, where, types) for m in value["union"])
        return typing.Union[members]  # noqa: UP007
    if isinstance(value, str) and value in _BUILTINS:
        return _BUILTINS[value]
    if isinstance(value, str) and value in types:
        return types[value]
    raise CheckpointError(
        f"{where}: a pending request expects an answer of type {value!r}, which this workflow's handlers do not name"
    )
