"""A trace as compact JSON, and back: what an experiment stores to show a cell's run again.

Messages are shared by every snapshot of a run (a ``full`` chain hands each agent the same
objects), so each distinct message is written once and the snapshots refer to it by number; a
10-message run costs about a kilobyte and a few microseconds. What arrived, what was sent and the
state are kept as the one-line descriptions the displays print (``Described``): a trace read back
shows the same views and ``who_has`` finds the same facts, but its values are text, not the objects
that were delivered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from ..messages import AgentResponse, Message
from .snapshots import ContextSnapshot, Sent, Trace
from .text import describe_state, describe_value
from .who_has import strings_of

__all__ = ["Described", "dump_trace", "load_trace"]

_VERSION = 1


@dataclass(frozen=True, slots=True)
class Described:
    """A delivered value read back from JSON: its description, and the texts it carried (for ``who_has``)."""

    text: str
    carried: tuple[str, ...] = ()

    def describe(self) -> str:
        return self.text

    def texts(self) -> tuple[str, ...]:
        return self.carried

    def __str__(self) -> str:
        return self.text


class _Messages:
    """Numbers the distinct messages and texts of a trace, in the order they are met."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.messages: list[Message] = []
        self.text_index: dict[str, int] = {}
        self.texts: list[str] = []
        self.values: dict[int, list[Any]] = {}
        self.kept: list[Any] = []

    def value(self, value: Any, width: int = 200) -> list[Any]:
        """A delivered value: its description, then the numbers of the texts it carries.

        What one executor sent is what the next received: each value is described once.
        """
        known = self.values.get(id(value))
        if known is not None:
            return known
        refs = []
        for text in strings_of(value):
            k = self.text_index.get(text)
            if k is None:
                k = self.text_index[text] = len(self.texts)
                self.texts.append(text)
            refs.append(k)
        described = self.values[id(value)] = [describe_value(value, width), refs]
        self.kept.append(value)  # alive until the dump ends, so its id is not reused
        return described

    def refs(self, messages: Sequence[Message] | None) -> list[int] | None:
        if messages is None:
            return None
        out = []
        for m in messages:
            k = self.index.get(id(m))
            if k is None:
                k = self.index[id(m)] = len(self.messages)
                self.messages.append(m)
            out.append(k)
        return out


def dump_trace(trace: Trace) -> str:
    """The trace as one JSON text (``load_trace`` reads it back)."""
    table = _Messages()
    snapshots = []
    for s in trace:
        record: dict[str, Any] = {
            "e": s.executor_id,
            "s": s.superstep,
            "i": s.index,
            "r": table.value(s.received),
            "k": s.kind,
            "kept": table.refs(s.kept),
            "dropped": table.refs(s.dropped),
            "given": table.refs(s.given),
            "cached": table.refs(s.cached),
            "wrote": table.refs(s.wrote),
            "t": s.turn,
            "d": s.duration,
        }
        if s.context_mode is not None:
            record["mode"], record["filter"] = s.context_mode, s.context_filter
        if s.response is not None:
            record["response"] = [table.refs(s.response.messages), s.response.route, s.response.model]
        if s.state:
            record["state"] = {str(k): [describe_state(v, 400), table.value(v)[1]] for k, v in s.state.items()}
        if s.sent:
            record["sent"] = [[*table.value(x.message), list(x.targets)] for x in s.sent]
        if s.outputs:
            record["outputs"] = [0 if x is s.response else table.value(x) for x in s.outputs]  # 0: the answer
        if s.error is not None:
            record["error"] = s.error
        if s.requested:
            record["requested"] = list(s.requested)
        snapshots.append(record)
    chat = table.refs(trace.chat)
    data = {
        "v": _VERSION,
        "executors": list(trace.executor_ids),
        "messages": table.messages,
        "texts": table.texts,
        "snapshots": snapshots,
    }
    if chat:
        data["chat"] = chat
    return to_json(data, exclude_none=True).decode()  # one pass in pydantic-core: messages and all


def load_trace(text: str) -> Trace:
    """The trace ``dump_trace`` wrote; delivered values come back as ``Described`` texts."""
    data = json.loads(text)
    messages = [Message.model_validate(m) for m in data["messages"]]
    texts = data["texts"]

    def value(text: str, refs: list[int]) -> Described:
        return Described(text, tuple(texts[k] for k in refs))

    def pick(refs: list[int] | None) -> tuple[Message, ...] | None:
        return None if refs is None else tuple(messages[k] for k in refs)

    snapshots = []
    for r in data["snapshots"]:
        response = None
        if "response" in r:
            refs, route, model = r["response"]
            response = AgentResponse(messages=list(pick(refs) or ()), route=route, model=model)
        snapshots.append(
            ContextSnapshot(
                executor_id=r["e"],
                superstep=r["s"],
                index=r["i"],
                received=value(*r["r"]),
                kind=r["k"],
                context_mode=r.get("mode"),
                context_filter=r.get("filter"),
                kept=pick(r["kept"]) or (),
                dropped=pick(r["dropped"]) or (),
                given=pick(r["given"]),
                cached=pick(r["cached"]) or (),
                response=response,
                wrote=pick(r["wrote"]) or (),
                state={k: value(*v) for k, v in r.get("state", {}).items()},
                turn=r["t"],
                sent=tuple(Sent(value(text, refs), tuple(targets)) for text, refs, targets in r.get("sent", ())),
                outputs=tuple(response if x == 0 else value(*x) for x in r.get("outputs", ())),
                duration=r["d"],
                error=r.get("error"),
                requested=tuple(r.get("requested", ())),
            )
        )
    return Trace(snapshots, data["executors"], chat=pick(data.get("chat")) or ())
