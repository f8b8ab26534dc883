"""Encoding a workflow's values for a checkpoint: each message, and each state that changed, stored once.

An encoder lives as long as its workflow's checkpointing in one storage, so the links of a
long conversation are hashed once, not at every checkpoint, and it knows what the storage
already holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...conversation import Conversation
from ...errors import CheckpointError
from ...messages import AgentResponse, Message
from ...sessions import AgentSession
from ..agent_executor import AgentExecutorResponse
from .format import Link, StoredMessage, dumps, link_key, message_hash, too_deep, type_name_of

if TYPE_CHECKING:
    from .decoder import Decoder

__all__ = ["Encoder"]

_to_json = Message.__pydantic_serializer__.to_json


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
        except RecursionError:
            raise CheckpointError(
                f"{self.where}: the state of session {session.session_id!r} {too_deep('stored')}"
            ) from None
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
            data = _to_json(message)  # what model_dump_json() gives, as bytes, without its wrapper's cost
            known = self._hashes[ident] = (message, hashlib.sha256(data).hexdigest()[:32])
            text = data.decode()
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
        except RecursionError:
            raise CheckpointError(f"{self.where}: {path} {too_deep('stored')}") from None

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
            return {"$model": type_name_of(kind), "fields": fields}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = {f.name: self._inside(getattr(v, f.name), f".{f.name}") for f in dataclasses.fields(v)}
            return {"$dataclass": type_name_of(kind), "fields": fields}
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
