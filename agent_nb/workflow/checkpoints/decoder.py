"""Decoding a checkpoint back into a workflow's values, checking every stored text against its hash.

Loading never imports or evaluates anything: a value of a class is rebuilt only when the
class is one the workflow's handlers name (or one of agent_nb's own). Equal messages (same
role, author, contents and id) come back as one object.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args, get_origin

from pydantic import BaseModel

from ...conversation import EMPTY, Conversation
from ...errors import CheckpointError
from ...messages import AgentResponse, Message
from ...sessions import AgentSession
from .._types import flatten
from ..agent_executor import AgentExecutorResponse
from .format import link_key, message_hash, type_name_of

if TYPE_CHECKING:
    from ..workflow import Workflow

__all__ = ["Decoder", "known_types"]


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


def known_types(workflow: Workflow) -> dict[str, type]:
    """Classes a checkpoint of ``workflow`` may rebuild: agent_nb's own and those its handlers name."""
    from ... import contents, messages
    from .. import agent_executor, requests

    found: dict[str, type] = {}

    def add(spec: Any) -> None:
        for member in flatten(spec):
            origin = get_origin(member)
            if origin is not None:
                for arg in get_args(member):
                    add(arg)
            elif isinstance(member, type) and (dataclasses.is_dataclass(member) or issubclass(member, BaseModel)):
                found.setdefault(type_name_of(member), member)

    for module in (contents, messages, agent_executor, requests):
        for obj in vars(module).values():
            if isinstance(obj, type) and obj.__module__ == module.__name__:
                add(obj)
    for ex in workflow.executors.values():
        for spec in ex.handler_specs:
            add(spec.accepts)
            for t in (*(spec.sends or ()), *(spec.yields or ())):
                add(t)
        if getattr(ex, "kind", None) == "workflow":  # a sub-workflow's state holds what its own handlers name
            for name, cls in known_types(ex.workflow).items():  # type: ignore[attr-defined]
                found.setdefault(name, cls)
    return found
