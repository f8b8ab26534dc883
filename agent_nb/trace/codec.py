"""A trace as compact JSON, and back: what an experiment stores to show a cell's run again.

Messages are shared by every snapshot of a run (a ``full`` chain hands each agent the same
objects), so each distinct message is written once and the snapshots refer to it by number; each
distinct text is written once too (a reply and its hand-over to the next agent carry the same
words). A message of one text is three small values (role, author, text number); any other is
written whole. A snapshot is a list in the order of ``_FIELDS``; the views of one conversation
(each agent of a chain holds a longer one) are numbered once; a model request of exactly what
its executor gave refers to that. A three-agent run is about 1.4 KB, its model requests included.
What arrived, what was sent and the state are kept as the one-line
descriptions the displays print (``Described``): a trace read back shows the same views and
``who_has`` finds the same facts, but its values are text, not the objects that were delivered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from operator import is_
from types import MappingProxyType
from typing import Any

from pydantic_core import to_json

from ..agents.requests import ModelRequest
from ..contents import TextContent
from ..conversation import Conversation
from ..errors import UsageError
from ..messages import AgentResponse, Message
from .snapshots import ContextSnapshot, Sent, Trace, new_snapshot
from .text import describe_state, describe_value
from .who_has import strings_of

__all__ = ["Described", "dump_trace", "load_trace"]

_VERSION = 4
_READS = (2, 3, 4)
"""Format 3 writes a request of what the executor gave as 0 (and the common request as four values)."""
_FIELDS = (
    "executor_id", "superstep", "index", "received", "kind", "context_mode", "context_filter", "kept", "dropped",
    "given", "cached", "response", "wrote", "turn", "sent", "outputs", "duration", "model_requests", "more",
)  # fmt: skip
"""A stored snapshot, in order; ``more`` holds what most snapshots lack (state, error, requests, warnings),
or null."""


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


class _Table:
    """Numbers the distinct messages, texts and delivered values of a trace, in the order they are met.

    Messages and values are known by ``id``: ``kept`` holds each value while the trace is written,
    so no id is reused by another object in between.
    """

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.messages: list[Any] = []
        self.text_index: dict[str, int] = {}
        self.texts: list[str] = []
        self.values: dict[int, list[Any]] = {}
        self.seqs: dict[int, list[int]] = {}
        self.logs: dict[int, list[int]] = {}
        self.kept: list[Any] = []

    def text(self, text: str) -> int:
        k = self.text_index.get(text)
        if k is None:
            k = self.text_index[text] = len(self.texts)
            self.texts.append(text)
        return k

    def value(self, value: Any, width: int = 200) -> list[Any]:
        """A delivered value: its description, then the numbers of the texts it carries.

        What one executor sent is what the next received: each value is described once.
        """
        known = self.values.get(id(value))
        if known is None:
            known = [describe_value(value, width), [self.text(t) for t in strings_of(value)]]
            self.values[id(value)] = known
            self.kept.append(value)
        return known

    def refs(self, messages: Sequence[Message] | None) -> list[int] | None:
        """The numbers of ``messages``; a sequence met again, or another view of a log already met, costs a lookup."""
        if not messages:
            return None if messages is None else []
        known = self.seqs.get(id(messages))
        if known is not None:
            return known
        if type(messages) is Conversation:
            log, stop = messages.storage()
            numbered = self.logs.get(id(log))
            if numbered is None:
                numbered = self.logs[id(log)] = []
                self.kept.append(log)
            if len(numbered) < stop:
                numbered += self._number(messages[len(numbered) : stop] if numbered else messages)
            known = numbered[:stop]
        else:
            known = self._number(messages)
        self.seqs[id(messages)] = known
        self.kept.append(messages)
        return known

    def _number(self, messages: Sequence[Message]) -> list[int]:
        index, out = self.index, []
        for m in messages:
            k = index.get(id(m))
            if k is None:
                k = index[id(m)] = len(self.messages)
                self.messages.append(self._message(m))
            out.append(k)
        return out

    def _message(self, m: Message) -> Any:
        """``[role, author, text number]`` for a message of one text, the common case; the whole message otherwise."""
        if len(m.contents) == 1 and m.message_id is None:
            content = m.contents[0]
            if type(content) is TextContent:  # a subclass may carry more: written whole
                return [m.role, m.author_name, self.text(content.text)]
        return m


def dump_trace(trace: Trace) -> str:
    """The trace as one JSON text (``load_trace`` reads it back)."""
    return to_json(_data(trace), exclude_none=True, fallback=_described).decode()  # one pass in pydantic-core


def _data(trace: Trace) -> dict[str, Any]:
    """The trace as JSON-ready data; a sub-workflow's trace is nested, with its own tables."""
    table = _Table()
    refs, value = table.refs, table.value
    snapshots = []
    for s in trace:
        r, given = s.response, s.given
        more: dict[str, Any] | None = None
        if s.state or s.error is not None or s.requested or s.warnings or s.inner is not None:
            state = {str(k): [describe_state(v, 400), value(v)[1]] for k, v in s.state.items()}
            more = {"error": s.error, "requested": list(s.requested), "state": state, "warnings": list(s.warnings)}
            if s.inner is not None:
                more["inner"] = _data(s.inner)
        snapshots.append(
            [
                s.executor_id,
                s.superstep,
                s.index,
                value(s.received),
                s.kind,
                s.context_mode,
                s.context_filter,
                refs(s.kept),
                refs(s.dropped),
                refs(given),
                refs(s.cached),
                None if r is None else [refs(r.messages), r.route, r.model],
                refs(s.wrote),
                s.turn,
                [[*value(x.message), x.targets] for x in s.sent] if s.sent else [],
                _outputs(s.outputs, r, value),
                round(s.duration, 6),
                [_request(q, refs, given) for q in s.model_requests] if s.model_requests else [],
                more,
            ]
        )
    data = {
        "v": _VERSION,
        "executors": list(trace.executor_ids),
        "texts": table.texts,
        "messages": table.messages,
        "snapshots": snapshots,
        "chat": refs(trace.chat),
    }
    if trace.restored_from is not None:
        data |= {"restored_from": trace.restored_from, "restored": list(trace.restored)}
    if trace.name is not None:
        data["name"] = trace.name
    if any(s.at for s in trace):
        data["at"] = [s.at for s in trace]
    return data


def _outputs(outputs: tuple[Any, ...], response: AgentResponse | None, value: Any) -> list[Any]:
    """What an executor yielded; 0 for the agent's answer (most agents yield only that)."""
    if len(outputs) == 1 and outputs[0] is response:
        return [0]
    return [0 if x is response else value(x) for x in outputs]


def _request(q: ModelRequest, refs: Any, given: Sequence[Message] | None) -> list[Any]:
    """A model request: its messages by number, or 0 when they are what the executor gave.

    The common request (what the executor gave, no tools, options or tool round, answered by its
    own client) is four values.
    """
    m = q.messages
    messages: Any = 0
    timed = [q.sent_at, q.duration, q.input_tokens, q.output_tokens, q.finish_reason, q.provider]
    if given is not None and len(m) == len(given) and all(map(is_, m, given)):
        if not (q.tools or q.options or q.round or q.route or q.error or q.repairs):
            return [q.agent, 0, q.spans, q.model, timed]
    else:
        messages = refs(m)
    return [q.agent, messages, q.spans, q.tools, dict(q.options), q.round, q.route, q.model, q.error, q.repairs, timed]


_NO_OPTIONS: Any = MappingProxyType({})


def _read_request(row: list[Any], pick: Any, given: tuple[Message, ...] | None) -> ModelRequest:
    """A stored request; from format 4 on with its timing, tokens, finish reason and provider (the last value)."""
    timed = row[-1] if len(row) in (5, 11) else (0.0, 0.0, None, None, None, None)
    if len(row) in (4, 5):  # the common request
        agent, _, spans, model = row[:4]
        return ModelRequest(agent, given or (), tuple(spans), (), _NO_OPTIONS, 0, None, model, None, (), *timed)
    agent, messages, spans, tools, options, round_, route, model, error, repairs = row[:10]
    sent = (given or ()) if messages == 0 else pick(messages)
    return ModelRequest(
        agent, sent, tuple(spans), tuple(tools), options, round_, route, model, error, tuple(repairs), *timed
    )


def _described(value: Any) -> str:
    """An option that is not JSON (a response format given as a class, say): its one-line description."""
    return describe_value(value, 200)


def load_trace(text: str) -> Trace:
    """The trace ``dump_trace`` wrote; delivered values come back as ``Described`` texts."""
    return _read(json.loads(text))


def _read(data: dict[str, Any]) -> Trace:
    if data.get("v") not in _READS:
        raise UsageError(
            f"this stored trace is in format {data.get('v')!r} and this agent_nb reads formats "
            f"{', '.join(map(str, _READS))}; "
            "run the experiment again with a new store, or with run(..., replace=True), to store its traces anew"
        )
    texts = data["texts"]
    messages = [
        Message(m[0], [TextContent(texts[m[2]])], author_name=m[1])
        if isinstance(m, list)
        else Message.model_validate(m)
        for m in data["messages"]
    ]

    def value(text: str, refs: list[int]) -> Described:
        return Described(text, tuple(texts[k] for k in refs))

    def pick(refs: list[int] | None) -> tuple[Message, ...] | None:
        return None if refs is None else tuple(messages[k] for k in refs)

    snapshots: list[ContextSnapshot] = []
    starts = data.get("at")
    for row in data["snapshots"]:
        r = dict(zip(_FIELDS, row, strict=True))
        response = None
        if r["response"] is not None:
            refs, route, model = r["response"]
            response = AgentResponse(messages=list(pick(refs) or ()), route=route, model=model)
        more = r["more"] or {}
        given = pick(r["given"])
        snapshots.append(
            new_snapshot(
                dict(
                    executor_id=r["executor_id"],
                    superstep=r["superstep"],
                    index=r["index"],
                    received=value(*r["received"]),
                    kind=r["kind"],
                    context_mode=r["context_mode"],
                    context_filter=r["context_filter"],
                    kept=pick(r["kept"]) or (),
                    dropped=pick(r["dropped"]) or (),
                    given=given,
                    cached=pick(r["cached"]) or (),
                    response=response,
                    wrote=pick(r["wrote"]) or (),
                    state={k: value(*v) for k, v in more.get("state", {}).items()},
                    turn=r["turn"],
                    sent=tuple(Sent(value(text, refs), tuple(targets)) for text, refs, targets in r["sent"]),
                    outputs=tuple(response if x == 0 else value(*x) for x in r["outputs"]),
                    duration=r["duration"],
                    error=more.get("error"),
                    requested=tuple(more.get("requested", ())),
                    warnings=tuple(more.get("warnings", ())),
                    model_requests=tuple(_read_request(q, pick, given) for q in r["model_requests"]),
                    at=starts[len(snapshots)] if starts else 0.0,
                    inner=_read(more["inner"]) if "inner" in more else None,
                )
            )
        )
    return Trace(
        snapshots,
        data["executors"],
        chat=pick(data.get("chat")) or (),
        restored_from=data.get("restored_from"),
        restored=data.get("restored", ()),
        name=data.get("name"),
    )
