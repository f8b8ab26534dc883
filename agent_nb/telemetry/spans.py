"""A trace as OpenTelemetry spans: a run, its invocations, their model and tool calls, requests and answers.

Names and attributes follow the OpenTelemetry GenAI semantic conventions where they define one
(``invoke_agent``, ``chat``, ``execute_tool``; ``gen_ai.*``), and ``agent_nb.*`` for what they do not:
context modes, what an executor gave its agent and what its mode dropped, the messages whose role
was reassigned, routes and portability repairs. Message content is left out unless
``capture_content`` is set, and so is the text of an error (it may quote what a user wrote): a
failed span's status and ``error.type`` then say the error's type only. What could be a secret
(options under secret names, known keys, bearer tokens) is masked whatever the setting. Every span
takes its times from the trace, so a trace exported later keeps its own timings.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry import trace as otel
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ..agents.requests import ModelRequest
from ..clients.redaction import MASK, Scrubber, is_secret_key, redact_tree
from ..messages import Message
from ..trace import ContextSnapshot, Trace
from .run_secrets import config_secrets

__all__ = ["SpanWriter"]

AGENT_KINDS = frozenset({"agent", "orchestrator", "child agent", "connected agent"})
"""Executor kinds whose invocation is an agent's (``invoke_agent``)."""


def ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


_ERROR_TYPE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)(?::\s|:$)|^cancelled \(([A-Za-z_][A-Za-z0-9_.]*)\)$")
"""The type at the head of an error as a trace records it (``"Type: message"``, ``"cancelled (Type)"``)."""
OTHER = "_OTHER"
"""``error.type`` of an error whose type is not known (the conventions' fallback)."""


def error_type(error: str) -> str:
    """The low-cardinality type of a recorded error: its exception's name, ``rejected``, or ``_OTHER``."""
    found = _ERROR_TYPE.match(error)
    if found is not None:
        return found.group(1) or found.group(2)
    if error.startswith("the user rejected"):  # a rejected approval (agents/turn.py)
        return "rejected"
    return OTHER


class SpanWriter:
    """Writes spans for traces and their invocations through one tracer."""

    def __init__(self, tracer: otel.Tracer, *, capture_content: bool = False, secrets: Iterable[str] = ()) -> None:
        self.tracer = tracer
        self.capture_content = capture_content
        self.scrubber = Scrubber(secrets)

    # -- content, when asked for, never secrets -------------------------------------------

    def learn(self, secrets: Iterable[str]) -> None:
        """Mask ``secrets`` too from now on (a run's clients' keys, its options' secrets)."""
        self.scrubber = self.scrubber.adding(secrets)

    def _text(self, text: str) -> str:
        return self.scrubber.scrub(text)

    def error(self, span: Span, error: str, kind: str | None = None) -> None:
        """A failed span: ``error.type``, and a status that says the error (its type only, without content)."""
        kind = kind or error_type(error)
        span.set_status(Status(StatusCode.ERROR, self._text(error) if self.capture_content else kind))
        span.set_attribute("error.type", kind)

    def _messages(self, messages: Sequence[Message]) -> str:
        """Messages in the conventions' form: role and parts (text, tool calls and results, others by type)."""
        out = []
        for m in messages:
            parts: list[dict[str, Any]] = []
            for c in m.contents:
                if c.type == "text":
                    parts.append({"type": "text", "content": self._text(c.text)})
                elif c.type == "function_call":
                    parts.append({"type": "tool_call", "id": c.call_id, "name": c.name, "arguments": c.arguments})
                elif c.type == "function_result":
                    parts.append({"type": "tool_call_response", "id": c.call_id, "response": c.result})
                else:
                    parts.append({"type": c.type})
            entry: dict[str, Any] = {"role": m.role, "parts": parts}
            if m.author_name:
                entry["name"] = m.author_name
            out.append(entry)
        return self._text(json.dumps(redact_tree(out, self.scrubber), default=str, ensure_ascii=False))

    # -- a run ----------------------------------------------------------------------------

    def trace(
        self, trace: Trace, *, name: str | None = None, parent: Context | None = None, status: str | None = None
    ) -> Span:
        """The whole trace after the fact: a run span (one per harness turn) holding every invocation.

        ``name``: the run's; by default the workflow's, when the trace knows it, else ``"run"``.
        """
        name = name or trace.name or "run"
        turns = sorted({s.turn for s in trace}) if any(s.turn for s in trace) else [0]
        if len(turns) == 1:
            return self._run(trace, list(trace), name, parent, status)
        start, end = _bounds(list(trace))
        root = self.tracer.start_span(f"conversation {name}", context=parent, start_time=ns(start))
        root.set_attribute("agent_nb.turns", len(turns))
        inside = otel.set_span_in_context(root)
        for turn in turns:
            snapshots = [s for s in trace if s.turn == turn]
            self._run(trace, snapshots, f"{name} turn {turn}", inside, status, turn=turn)
        root.end(end_time=ns(end))
        return root

    def _run(
        self,
        trace: Trace,
        snapshots: list[ContextSnapshot],
        name: str,
        parent: Context | None,
        status: str | None,
        *,
        turn: int = 0,
    ) -> Span:
        start, end = _bounds(snapshots)
        span = self.start_run(name, parent, start)
        if turn:
            span.set_attribute("agent_nb.turn", turn)
        if trace.restored_from:
            span.set_attribute("agent_nb.restored_from", trace.restored_from)
        inside = otel.set_span_in_context(span)
        for s in snapshots:
            self.invocation(s, inside, base=start if not s.at else None)
        failed = [s for s in snapshots if s.error is not None]
        self.end_run(span, status or ("failed" if failed else "completed"), end, failed[0].error if failed else None)
        return span

    def start_run(self, name: str, parent: Context | None, start: float) -> Span:
        span = self.tracer.start_span(f"workflow {name}", context=parent, start_time=ns(start), kind=SpanKind.INTERNAL)
        span.set_attribute("agent_nb.workflow.name", name)
        return span

    def end_run(self, span: Span, status: str, end: float, error: str | None = None) -> None:
        span.set_attribute("agent_nb.run.status", status)
        if error is not None:
            self.error(span, error)
        span.end(end_time=ns(end))

    # -- an invocation --------------------------------------------------------------------

    def invocation(
        self,
        s: ContextSnapshot,
        parent: Context | None,
        *,
        span: Span | None = None,
        base: float | None = None,
        nested: bool = True,
        requests: bool = True,
    ) -> None:
        """One executor's invocation; ``span`` when it was opened as it started (live), else made now."""
        start = s.at or ((base or time.time()) + s.started)
        end = start + s.duration
        if span is None:
            span = self.tracer.start_span(_invocation_name(s), context=parent, start_time=ns(start))
        else:
            span.update_name(_invocation_name(s))
        self._invocation_attributes(span, s)
        inside = otel.set_span_in_context(span)
        received = s.received
        if type(received).__name__ == "RequestResponse":
            self._answer(received, inside, start)
        for request in s.model_requests:
            self._chat(request, inside, start)
        self._tools(s, inside, end)
        for request_id in s.requested if requests else ():  # live, each was written as it was asked
            self._asked(request_id, s, inside, end)
        if nested and s.inner is not None:
            self.trace(s.inner, name=s.inner.name or s.executor_id, parent=inside)
        if s.error is not None:
            self.error(span, s.error)
        span.end(end_time=ns(end))

    def _invocation_attributes(self, span: Span, s: ContextSnapshot) -> None:
        span.set_attribute("agent_nb.executor.id", s.executor_id)
        span.set_attribute("agent_nb.executor.kind", s.kind)
        span.set_attribute("agent_nb.superstep", s.superstep)
        span.set_attribute("agent_nb.status", s.status)
        if s.kind in AGENT_KINDS:
            span.set_attribute("gen_ai.operation.name", "invoke_agent")
            span.set_attribute("gen_ai.agent.name", s.executor_id)
        if s.turn:
            span.set_attribute("agent_nb.turn", s.turn)
        caller, call_id = getattr(s.received, "caller", None), getattr(s.received, "call_id", None)
        if isinstance(caller, str) and isinstance(call_id, str):  # a harness component, called by its orchestrator
            span.set_attribute("agent_nb.caller", caller)
            span.set_attribute("agent_nb.call.id", call_id)
        if s.context_mode is not None:
            span.set_attribute("agent_nb.context_mode", s.context_mode)
        if s.context_filter is not None:
            span.set_attribute("agent_nb.context_filter", s.context_filter)
        if s.given is not None:
            span.set_attribute("agent_nb.messages.given", len(s.given))
            span.set_attribute("agent_nb.messages.dropped", len(s.dropped))
            span.set_attribute("agent_nb.messages.reassigned", sum(s.reassigned))  # roles really reassigned
        tokens_in = sum(r.input_tokens or 0 for r in s.model_requests)
        tokens_out = sum(r.output_tokens or 0 for r in s.model_requests)
        if tokens_in or tokens_out:
            span.set_attribute("gen_ai.usage.input_tokens", tokens_in)
            span.set_attribute("gen_ai.usage.output_tokens", tokens_out)
        if s.wrote:
            span.set_attribute("agent_nb.messages.wrote", len(s.wrote))
        if s.warnings:
            span.set_attribute("agent_nb.warnings", [self._text(w) for w in s.warnings])
        if self.capture_content and s.response is not None:
            span.set_attribute("gen_ai.output.messages", self._messages(s.response.messages))

    # -- inside an invocation -------------------------------------------------------------

    def _chat(self, r: ModelRequest, parent: Context, fallback: float) -> None:
        model = r.options.get("model") if isinstance(r.options.get("model"), str) else None
        name = f"chat {model or r.model or r.route or r.agent}"
        start = r.sent_at or fallback
        span = self.tracer.start_span(name, context=parent, start_time=ns(start), kind=SpanKind.CLIENT)
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.agent.name", r.agent)
        if model or r.model:
            span.set_attribute("gen_ai.request.model", str(model or r.model))
        if r.model:
            span.set_attribute("gen_ai.response.model", r.model)
        if r.provider:
            span.set_attribute("gen_ai.provider.name", r.provider)
        for option, attribute in _REQUEST_OPTIONS:
            value = r.options.get(option)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                span.set_attribute(attribute, value)
        if r.input_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", r.input_tokens)
        if r.output_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", r.output_tokens)
        if r.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [r.finish_reason])
        if r.route:
            span.set_attribute("agent_nb.route", r.route)
        if r.repairs:
            span.set_attribute("agent_nb.repairs", list(r.repairs))
        span.set_attribute("agent_nb.round", r.round)
        span.set_attribute("agent_nb.messages.sent", len(r.messages))
        origins = r.origins
        for origin in ("instructions", "history", "handed over", "input", "tool work"):
            if origin in origins:
                span.set_attribute(f"agent_nb.messages.{origin.replace(' ', '_')}", origins.count(origin))
        if r.tools:
            span.set_attribute("agent_nb.tools", list(r.tools))
        if self.capture_content:
            system = r.of("instructions")
            if system:
                span.set_attribute("gen_ai.system_instructions", self._messages(system))
            rest = [m for m, o in zip(r.messages, origins, strict=True) if o != "instructions"]
            span.set_attribute("gen_ai.input.messages", self._messages(rest))
        if r.error is not None:
            self.error(span, r.error)
        span.end(end_time=ns(start + r.duration))

    def _tools(self, s: ContextSnapshot, parent: Context, end: float) -> None:
        """A span per tool call the agent's turn made and answered, between the model's rounds."""
        if s.response is None:
            return
        results = {c.call_id: c for m in s.response.messages for c in m.contents if c.type == "function_result"}
        requests = s.model_requests
        asked = getattr(getattr(s.received, "data", None), "function_call", None)
        if asked is not None and asked.call_id in results:  # approved: it ran first, before the model was asked
            first = requests[0].sent_at if requests and requests[0].sent_at else end
            begin = s.at or first
            self._tool(asked, results[asked.call_id], parent, min(begin, first), first)
        rounds = [
            m
            for m in s.response.messages
            if m.role == "assistant" and any(c.type == "function_call" for c in m.contents)
        ]
        for k, message in enumerate(rounds):
            after = requests[k] if k < len(requests) else None
            following = requests[k + 1] if k + 1 < len(requests) else None
            start = (after.sent_at + after.duration) if after is not None and after.sent_at else end
            stop = following.sent_at if following is not None and following.sent_at else end
            for c in message.contents:
                if c.type != "function_call" or c.call_id not in results:
                    continue  # waiting for approval: a request, not a tool run
                self._tool(c, results[c.call_id], parent, start, max(stop, start))

    def _tool(self, call: Any, result: Any, parent: Context, start: float, stop: float) -> None:
        span = self.tracer.start_span(f"execute_tool {call.name}", context=parent, start_time=ns(start))
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", call.name)
        span.set_attribute("gen_ai.tool.call.id", call.call_id)
        span.set_attribute("gen_ai.tool.type", "function")
        if self.capture_content:
            arguments = call.arguments
            if not isinstance(arguments, str):  # what sits under a secret name is masked whole
                arguments = json.dumps(redact_tree(arguments, self.scrubber), default=str, ensure_ascii=False)
            answer = json.dumps(redact_tree(result.result, self.scrubber), default=str, ensure_ascii=False)
            span.set_attribute("gen_ai.tool.call.arguments", self._text(arguments))
            span.set_attribute("gen_ai.tool.call.result", self._text(answer))
        if result.exception:
            self.error(span, result.exception)
        span.end(end_time=ns(stop))

    def _asked(self, request_id: str, s: Any, parent: Context, at: float, data: Any = None) -> None:
        span = self.tracer.start_span(f"agent_nb.request {s.executor_id}", context=parent, start_time=ns(at))
        span.set_attribute("agent_nb.request.id", request_id)
        span.set_attribute("agent_nb.executor.id", s.executor_id)
        prompt = getattr(data, "prompt", None)
        if self.capture_content and isinstance(prompt, str) and prompt:
            span.set_attribute("agent_nb.request.prompt", self._text(prompt))
        span.end(end_time=ns(at))

    def _answer(self, received: Any, parent: Context, at: float) -> None:
        span = self.tracer.start_span(f"agent_nb.response {received.request_id}", context=parent, start_time=ns(at))
        span.set_attribute("agent_nb.request.id", received.request_id)
        value = received.value
        if isinstance(value, bool):  # an approval: not content
            span.set_attribute("agent_nb.response.approved", value)
        elif self.capture_content:
            span.set_attribute("agent_nb.response.value", self._text(str(value)))
        span.end(end_time=ns(at))

    def cell(self, span: Span, cell: Any) -> None:
        """An experiment cell's span: its configuration (secrets masked), input, repeat, status, scores, tokens."""
        self.learn(config_secrets(cell.config))
        for key, value in cell.config.items():
            shown = MASK if is_secret_key(key.rsplit(".", 1)[-1]) else self._text(str(value))
            span.set_attribute(f"agent_nb.config.{key}", shown)
        span.set_attribute("agent_nb.cell.input_id", cell.input_id)
        span.set_attribute("agent_nb.cell.repeat", cell.repeat)
        span.set_attribute("agent_nb.cell.status", cell.status)
        for score, value in cell.scores.items():
            if isinstance(value, (bool, int, float)):
                span.set_attribute(f"agent_nb.score.{score}", value)
        span.set_attribute("gen_ai.usage.input_tokens", cell.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", cell.output_tokens)
        if cell.error:
            self.error(span, f"{cell.error_type}: {cell.error}", cell.error_type)

    def checkpoint(self, parent: Context, checkpoint_id: str, superstep: int, at: float) -> None:
        span = self.tracer.start_span("agent_nb.checkpoint", context=parent, start_time=ns(at))
        span.set_attribute("agent_nb.checkpoint.id", checkpoint_id)
        span.set_attribute("agent_nb.superstep", superstep)
        span.end(end_time=ns(at))


_REQUEST_OPTIONS = (
    ("temperature", "gen_ai.request.temperature"),
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("top_p", "gen_ai.request.top_p"),
    ("seed", "gen_ai.request.seed"),
)


def _invocation_name(s: ContextSnapshot) -> str:
    if s.kind in AGENT_KINDS:
        return f"invoke_agent {s.executor_id}"
    if s.kind == "tool":  # a harness's tool component
        return f"execute_tool {s.executor_id}"
    return f"executor {s.executor_id}"


def _bounds(snapshots: Sequence[ContextSnapshot]) -> tuple[float, float]:
    """When the snapshots' run began and ended; a trace stored without times ends now."""
    known = [s for s in snapshots if s.at]
    if known:
        return min(s.at for s in known), max(s.at + s.duration for s in known)
    total = max((s.started + s.duration for s in snapshots), default=0.0)
    now = time.time()
    return now - total, now
