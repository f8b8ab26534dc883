"""Checkpoints: what a workflow holds between supersteps, as JSON that refers to each message once.

Messages are immutable and shared, so a checkpoint never copies them per executor.
Each message's JSON is stored once, under the hash of that JSON. A conversation is a
hash chain of *links* (a message's hash and the key of the link before it), so a whole
conversation is one key: the key of its last link. Eight executors holding one
conversation cost eight keys; a checkpoint writes only the messages and links that are
new since the last one. Keys are content hashes, so anything changed on disk is detected
on load.

Equal messages (same role, author, contents and id) come back as one object.

Loading never imports or evaluates anything: a value of a class is rebuilt only when
the class is one the workflow's handlers name (or one of agent_nb's own).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args, get_origin

from pydantic import BaseModel

from ..conversation import EMPTY, Conversation
from ..errors import CheckpointError
from ..messages import AgentResponse, Message
from ..sessions import AgentSession
from ._types import flatten
from .agent_executor import AgentExecutorResponse

if TYPE_CHECKING:
    from .workflow import Workflow

__all__ = ["FORMAT", "Checkpoint", "CheckpointError", "Link", "StoredMessage", "graph_parts", "graph_signature"]

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


def graph_parts(workflow: Workflow) -> list[str]:
    """What a checkpoint depends on, in words: the start, each executor (id, kind, class), each edge group."""
    parts = [f"start {workflow.start_executor_id}"]
    parts += sorted(f"executor {eid} ({ex.kind}, {type(ex).__qualname__})" for eid, ex in workflow.executors.items())
    for g in workflow.groups:
        when = " when a condition holds" if g.condition is not None else ""
        parts.append(f"{g.kind} edge {', '.join(g.sources)} -> {', '.join(g.targets)}{when}")
    return parts


def graph_signature(workflow: Workflow) -> str:
    """A hash of ``graph_parts``: a checkpoint resumes only in a workflow with the same one."""
    return hashlib.sha256("\n".join(graph_parts(workflow)).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One checkpoint, as stored: a small JSON document plus the message nodes it refers to.

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


def checkpoint_from_header(header: Mapping[str, Any], body: Mapping[str, Any], where: str) -> Checkpoint:
    """Rebuild a checkpoint from its stored parts; anything missing or foreign is a ``CheckpointError``."""
    if not isinstance(header, Mapping):
        raise CheckpointError(f"{where} is not a checkpoint (its header is not a JSON object)")
    version = header.get("format")
    if version != FORMAT:
        raise CheckpointError(
            f"{where} has format {version!r}; this agent_nb reads format {FORMAT}. "
            "It was written by another version: resume it with that version, or start the run again"
        )
    try:
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
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{where} is incomplete: its header lacks or garbles {exc}") from None


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


# -- encoding ---------------------------------------------------------------------------


class Encoder:
    """Turns a workflow's values into JSON, each message as a node written once.

    One encoder lives as long as its workflow's checkpointing, so the nodes of a long
    conversation are hashed once, not at every checkpoint.
    """

    def __init__(self) -> None:
        self._hashes: dict[int, tuple[Message, str]] = {}
        """id(message) -> (the message, kept alive so the id stays its own; its hash)."""
        self._links: dict[tuple[str | None, int], str] = {}
        self._tips: dict[int, tuple[Any, list[str]]] = {}
        """id(log) -> (log, key of each of its messages, in order)."""
        self._written: set[str] = set()
        self._new_links: list[Link] = []
        self._new_messages: list[StoredMessage] = []
        self.sessions: dict[str, AgentSession] = {}
        """The sessions met since this was last cleared (their states are stored apart, once per change)."""
        self._states: dict[str, tuple[str, str]] = {}
        """session id -> (its state as JSON, the hash of that text) at the last checkpoint."""
        self.where = ""

    def take_new(self) -> tuple[list[Link], list[StoredMessage]]:
        """The links and messages made since the last call: what the storage has not been given yet."""
        links, messages = self._new_links, self._new_messages
        self._new_links, self._new_messages = [], []
        return links, messages

    def seed(self, decoder: Decoder) -> None:
        """Know what a storage already holds, from a checkpoint just read: a resumed run writes only what is new."""
        for mkey, message in decoder._messages.items():
            self._hashes[id(message)] = (message, mkey)
            self._written.add(mkey)
        for key, (previous, mkey) in decoder.links.items():
            self._written.add(key)
            found = decoder._messages.get(mkey)
            if found is not None:
                self._links[(previous, id(found))] = key
        for conv, keys in decoder.logs:
            self._tips[id(conv._log)] = (conv._log, list(keys))
        for sid, (text, digest) in decoder.states.items():
            self._states[sid] = (text, digest)
        self._written.update(decoder.messages)  # every text it read (messages, states) is in the storage

    def blob(self, text: str) -> dict[str, str]:
        """A JSON text stored once, under its hash (an executor's state that changed, say)."""
        digest = message_hash(text)
        if digest not in self._written:
            self._written.add(digest)
            self._new_messages.append((digest, text))
        return {"$blob": digest}

    def session_state(self, session: AgentSession, *, recheck: bool = True) -> dict[str, str]:
        """A session's state, stored as a JSON text once per change (a long history is not copied per checkpoint).

        ``recheck=False``: no executor holding it ran since the last checkpoint, so it is as it was.
        """
        known = self._states.get(session.session_id)
        if known is not None and not recheck:
            return {"$blob": known[1]}
        try:
            text = dumps(session.state) if session.state else "{}"
        except (TypeError, ValueError) as exc:
            raise CheckpointError(
                f"{self.where}: the state of session {session.session_id!r} is not JSON ({exc}); "
                "keep only str, int, float, bool, None, lists and dicts in session.state"
            ) from None
        if known is not None and known[0] == text:
            return {"$blob": known[1]}
        digest = message_hash(text)
        self._states[session.session_id] = (text, digest)
        if digest not in self._written:
            self._written.add(digest)
            self._new_messages.append((digest, text))
        return {"$blob": digest}

    def forget_written(self) -> None:
        """The storage may lack some (a save failed): write each again when it is met."""
        self._written.clear()
        self._states.clear()
        self._links.clear()
        self._tips.clear()
        self._hashes.clear()

    def _node(self, previous: str | None, message: Message) -> str:
        ident = id(message)
        key = self._links.get((previous, ident))
        if key is not None:
            return key
        known = self._hashes.get(ident)
        if known is None:
            text = message.model_dump_json()
            known = self._hashes[ident] = (message, message_hash(text))
            if known[1] not in self._written:
                self._written.add(known[1])
                self._new_messages.append((known[1], text))
        key = self._links[(previous, ident)] = link_key(previous, known[1])
        if key not in self._written:
            self._written.add(key)
            self._new_links.append((key, previous, known[1]))
        return key

    def chain(self, messages: Iterable[Message]) -> str | None:
        key = None
        for m in messages:
            key = self._node(key, m)
        return key

    def conversation(self, conv: Conversation) -> str | None:
        if not conv:
            return None
        log = conv._log
        entry = self._tips.get(id(log))
        if entry is None:
            entry = self._tips[id(log)] = (log, [])
        keys = entry[1]
        msgs = log.messages
        while len(keys) < len(conv):
            keys.append(self._node(keys[-1] if keys else None, msgs[len(keys)]))
        return keys[len(conv) - 1]

    def value(self, v: Any, path: str) -> Any:
        """``v`` as JSON; ``path`` names it in the error raised for a value that cannot be stored."""
        try:
            return self._value(v)
        except _Unstorable as exc:
            raise CheckpointError(
                f"{self.where}: {path}{exc.where} is a {exc.kind}, which a checkpoint cannot store. Keep to JSON "
                "values, messages, conversations, sessions, dataclasses and pydantic models (of types the "
                "workflow's handlers name)"
            ) from None

    def _value(self, v: Any) -> Any:
        kind = type(v)
        if kind in _PLAIN:
            return v
        if kind is dict or (kind is not Conversation and isinstance(v, dict)):
            if all(type(k) is str and k[:1] != "$" for k in v):
                out = {}
                for k, x in v.items():
                    out[k] = self._inside(x, f"[{k!r}]")
                return out
            return {"$map": [[self._inside(k, " (a key)"), self._inside(x, f"[{k!r}]")] for k, x in v.items()]}
        if kind is Conversation:
            return {"$conv": self.conversation(v), "n": len(v)}
        if kind is Message:
            return {"$msg": self._node(None, v)}
        if kind is list or kind is tuple:
            if v and all(type(m) is Message for m in v):
                return {"$msgs": self.chain(v), "n": len(v), "tuple": kind is tuple}
            items = [self._inside(x, f"[{i}]") for i, x in enumerate(v)]
            return {"$tuple": items} if kind is tuple else items
        if kind is AgentSession:
            self.sessions[v.session_id] = v
            return {"$session": v.session_id}
        if kind is AgentExecutorResponse:
            return self._agent_response(v)
        if isinstance(v, BaseModel):  # field by field, so the messages of a response are links too
            fields = {k: self._inside(getattr(v, k), f".{k}") for k in kind.model_fields if k in v.model_fields_set}
            return {"$model": _name(kind), "fields": fields}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = {f.name: self._inside(getattr(v, f.name), f".{f.name}") for f in dataclasses.fields(v)}
            return {"$dataclass": _name(kind), "fields": fields}
        if isinstance(v, (bool, int, float, str)):  # subclasses, such as an IntEnum
            return v
        raise _Unstorable(kind.__name__)

    def _agent_response(self, v: AgentExecutorResponse) -> dict[str, Any]:
        """What every hop of an agent workflow sends: its reply is the tail of its conversation, so refer to it."""
        response, full = v.agent_response, v.full_conversation
        reply = response.messages
        out: dict[str, Any] = {"$agent_response": v.executor_id}
        k = len(reply)
        if full is not None and 0 < k <= len(full) and all(full[len(full) - k + i] is m for i, m in enumerate(reply)):
            out["tail"] = k
        else:
            out["reply"] = self._inside(reply, ".agent_response.messages")
        out["conversation"] = None if full is None else self._inside(full, ".full_conversation")
        out["meta"] = {k: self._inside(getattr(response, k), f".agent_response.{k}") for k in _RESPONSE_FIELDS}
        return out

    def _inside(self, v: Any, where: str) -> Any:
        """A value inside a container; a failure deeper down learns where it was."""
        try:
            return self._value(v)
        except _Unstorable as exc:
            exc.where = where + exc.where
            raise


_PLAIN = frozenset({str, int, float, bool, type(None)})
_RESPONSE_FIELDS = tuple(f for f in AgentResponse.model_fields if f != "messages")


class _Unstorable(Exception):
    def __init__(self, kind: str) -> None:
        self.kind, self.where = kind, ""


# -- decoding ---------------------------------------------------------------------------


@dataclass(slots=True)
class Decoder:
    """Rebuilds values from a checkpoint; one message object per stored message, shared as before."""

    links: Mapping[str, tuple[str | None, str]]
    messages: Mapping[str, str]
    types: Mapping[str, type]
    sessions_data: Mapping[str, Any]
    where: str
    _messages: dict[str, Message] = field(default_factory=dict)
    states: dict[str, tuple[str, str]] = field(default_factory=dict)
    """session id -> (its state as stored, the hash of that text)."""
    logs: list[tuple[Conversation, list[str]]] = field(default_factory=list)
    """Each conversation rebuilt, with the link key of each of its positions."""
    _convs: dict[str, Conversation] = field(default_factory=dict)
    _sessions: dict[str, AgentSession] = field(default_factory=dict)

    def _link(self, key: str) -> tuple[str | None, str]:
        entry = self.links.get(key)
        if entry is None:
            raise CheckpointError(
                f"{self.where} refers to message {key}, which its storage does not hold "
                "(its files were moved or edited); the checkpoint cannot be restored"
            )
        if link_key(*entry) != key:
            raise CheckpointError(f"{self.where}: link {key} was changed after it was written (its hash differs)")
        return entry

    def message(self, key: str) -> Message:
        """The message at link ``key``."""
        return self._message(self._link(key)[1])

    def _text(self, key: str, what: str) -> str:
        """A stored text, checked against its hash."""
        text = self.messages.get(key)
        if text is None:
            raise CheckpointError(f"{self.where} refers to {what} {key}, which its storage does not hold")
        if message_hash(text) != key:
            raise CheckpointError(f"{self.where}: {what} {key} was changed after it was written (its hash differs)")
        return text

    def _message(self, mkey: str) -> Message:
        found = self._messages.get(mkey)
        if found is not None:
            return found
        text = self._text(mkey, "message")
        try:
            message = Message.model_validate_json(text)
        except ValueError as exc:
            raise CheckpointError(f"{self.where}: message {mkey} is not a valid message: {exc}") from None
        self._messages[mkey] = message
        return message

    def chain(self, tip: str | None, n: int) -> list[Message]:
        return self._chain(tip, n)[0]

    def _chain(self, tip: str | None, n: int) -> tuple[list[Message], list[str]]:
        out: list[Message] = []
        keys: list[str] = []
        key = tip
        while key is not None and len(out) <= n:
            previous, mkey = self._link(key)
            out.append(self._message(mkey))
            keys.append(key)
            key = previous
        if len(out) != n:
            raise CheckpointError(f"{self.where}: a conversation should hold {n} messages but its chain has {len(out)}")
        out.reverse()
        keys.reverse()
        return out, keys

    def conversation(self, tip: str | None, n: int) -> Conversation:
        if tip is None:
            return EMPTY
        conv = self._convs.get(tip)
        if conv is None:
            messages, keys = self._chain(tip, n)
            conv = self._convs[tip] = Conversation(messages)
            self.logs.append((conv, keys))
        return conv

    def _blob(self, key: str) -> Any:
        text = self._text(key, "the stored text")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise CheckpointError(f"{self.where}: the stored text {key} is not JSON ({exc})") from None

    def session(self, sid: str) -> AgentSession:
        found = self._sessions.get(sid)
        if found is None:
            ref = self.sessions_data.get(sid)
            if not isinstance(ref, dict) or not isinstance(ref.get("$blob"), str):
                raise CheckpointError(f"{self.where} refers to session {sid!r} but does not hold its state")
            text = self.messages.get(ref["$blob"])
            if text is None or message_hash(text) != ref["$blob"]:
                problem = "does not hold it" if text is None else "holds it changed (its hash differs)"
                raise CheckpointError(
                    f"{self.where}: the state of session {sid!r} is stored apart, and the storage {problem}"
                )
            state = json.loads(text)
            self.states[sid] = (text, ref["$blob"])
            if not isinstance(state, dict):
                raise CheckpointError(f"{self.where}: the state of session {sid!r} is not a JSON object")
            found = self._sessions[sid] = AgentSession(sid, state)
        return found

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if not isinstance(v, dict):
            raise CheckpointError(f"{self.where} holds a value JSON cannot have written: {v!r:.60}")
        if "$conv" in v:
            return self.conversation(v["$conv"], v["n"])
        if "$msgs" in v:
            msgs = self.chain(v["$msgs"], v["n"])
            return tuple(msgs) if v.get("tuple") else msgs
        if "$msg" in v:
            return self.message(v["$msg"])
        if "$tuple" in v:
            return tuple(self.value(x) for x in v["$tuple"])
        if "$session" in v:
            return self.session(v["$session"])
        if "$blob" in v:
            return self.value(self._blob(v["$blob"]))
        if "$agent_response" in v:
            full = self.value(v["conversation"])
            reply = full[len(full) - v["tail"] :] if "tail" in v else self.value(v["reply"])
            try:
                response = AgentResponse(reply, **{k: self.value(x) for k, x in v["meta"].items()})
            except ValueError as exc:
                raise CheckpointError(f"{self.where}: a stored agent response is not valid: {exc}") from None
            return AgentExecutorResponse(v["$agent_response"], response, full)
        if "$map" in v:
            return {self.value(k): self.value(x) for k, x in v["$map"]}
        if "$model" in v:
            cls = self._type(v["$model"])
            try:
                return cls.model_validate({k: self.value(x) for k, x in v["fields"].items()})  # type: ignore[attr-defined]
            except ValueError as exc:
                raise CheckpointError(f"{self.where}: a stored {cls.__name__} is not valid: {exc}") from None
        if "$dataclass" in v:
            cls = self._type(v["$dataclass"])
            values = {k: self.value(x) for k, x in v["fields"].items()}
            obj: Any = object.__new__(cls)  # field by field: __init__ may convert, and the values are final already
            for name, value in values.items():
                object.__setattr__(obj, name, value)
            return obj
        return {k: self.value(x) for k, x in v.items()}

    def _type(self, name: str) -> type:
        cls = self.types.get(name)
        if cls is None:
            raise CheckpointError(
                f"{self.where} holds a value of type {name}, which is not among the types this workflow's "
                "handlers take or send; a checkpoint never imports a class it is told to. "
                "Resume it in the workflow that wrote it"
            )
        return cls


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def known_types(workflow: Workflow) -> dict[str, type]:
    """Classes a checkpoint of ``workflow`` may rebuild: agent_nb's own and those its handlers name."""
    from .. import contents, messages
    from . import agent_executor, requests

    found: dict[str, type] = {}

    def add(spec: Any) -> None:
        for member in flatten(spec):
            origin = get_origin(member)
            if origin is not None:
                for arg in get_args(member):
                    add(arg)
            elif isinstance(member, type) and (dataclasses.is_dataclass(member) or issubclass(member, BaseModel)):
                found.setdefault(_name(member), member)

    for module in (contents, messages, agent_executor, requests):
        for obj in vars(module).values():
            if isinstance(obj, type) and obj.__module__ == module.__name__:
                add(obj)
    for ex in workflow.executors.values():
        for spec in ex.handler_specs:
            add(spec.accepts)
            for t in (*(spec.sends or ()), *(spec.yields or ())):
                add(t)
    return found


_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps(value: Any) -> str:
    """Compact JSON with NaN refused, as every stored document is written (one encoder, made once)."""
    return _JSON.encode(value)
