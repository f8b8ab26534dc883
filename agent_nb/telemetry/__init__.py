"""Traces out: agent_nb runs as OpenTelemetry spans (``pip install 'agent_nb[otel]'``).

Two ways, the same spans:

```python
from agent_nb import telemetry

telemetry.instrument(tracer_provider=provider)   # live: every run from now on, streaming included
result.trace.to_otel(tracer_provider=provider)   # after the fact: a trace (or result.to_otel(), exp_result.to_otel())
```

A run is a span (``workflow <name>``; a harness conversation one per turn), each invocation a
span inside it (``invoke_agent <id>`` for agents, ``executor <id>`` otherwise), each model call a
``chat <model>`` span and each tool call an ``execute_tool <name>`` span inside that, with the
GenAI semantic conventions' attributes and ``agent_nb.*`` ones for context modes, what was given
and dropped, routes and repairs; requests for input, their answers and checkpoints are spans too.
Sub-workflows and connected agents nest; an experiment's cells are spans under the experiment.
Message content is exported only with ``capture_content=True``; secrets never are. Nothing here is
imported, and nothing is paid, until it is used.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

try:
    from opentelemetry import trace as otel
    from opentelemetry.context import Context
    from opentelemetry.trace import Span
except ImportError as exc:  # the optional extra is not installed
    raise ImportError(
        f"agent_nb.telemetry (to_otel, instrument) needs OpenTelemetry, which is not installed ({exc}); "
        "install the extra: pip install 'agent_nb[otel]'"
    ) from exc

from ..errors import bad_argument
from ..trace import Trace
from ..watchers import watch
from ..workflow.observers import observe
from .live import LiveExperiments, LiveSpans
from .run_secrets import known, secrets_of
from .spans import SpanWriter, ns

__all__ = ["Instrumentation", "export_experiment", "export_result", "export_trace", "instrument", "uninstrument"]

_ACTIVE: list[Instrumentation] = []


def _tracer(tracer_provider: Any) -> otel.Tracer:
    from .. import __version__

    if tracer_provider is None:
        return otel.get_tracer("agent_nb", __version__)
    if not callable(getattr(tracer_provider, "get_tracer", None)):
        raise bad_argument(
            "agent_nb.telemetry", "tracer_provider", tracer_provider, "an OpenTelemetry TracerProvider, or None"
        )
    return tracer_provider.get_tracer("agent_nb", __version__)  # type: ignore[no-any-return]


def _writer(tracer_provider: Any, capture_content: bool, secrets: Iterable[str]) -> SpanWriter:
    if not isinstance(capture_content, bool):
        raise bad_argument("agent_nb.telemetry", "capture_content", capture_content, "True or False")
    return SpanWriter(_tracer(tracer_provider), capture_content=capture_content, secrets=secrets)


class Instrumentation:
    """Live spans for every run while it lasts; ``uninstrument()`` (or ``with``) ends it."""

    def __init__(self, writer: SpanWriter, tracer_provider: Any = None) -> None:
        self.writer = writer
        self.tracer_provider = tracer_provider
        """The provider it was given (``None``: OpenTelemetry's global one)."""
        self._stops = (observe(LiveSpans(writer)), watch(LiveExperiments(writer)))

    def uninstrument(self) -> None:
        for stop in self._stops:
            stop()
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.uninstrument()

    def __repr__(self) -> str:
        content = ", capture_content=True" if self.writer.capture_content else ""
        return f"Instrumentation({'on' if self in _ACTIVE else 'off'}{content})"


def instrument(
    tracer_provider: Any = None, *, capture_content: bool = False, secrets: Iterable[str] = ()
) -> Instrumentation:
    """Spans for every run from now on, as it goes (``tracer_provider``: yours, or OpenTelemetry's global one).

    Called again with the same ``tracer_provider`` (a notebook cell run again), it replaces the
    earlier call, which is ended: every run is still traced once, with the latest settings. Another
    provider is traced beside it.

    ``secrets``: strings to mask wherever they would appear, besides keys under secret names, the
    keys of each run's clients and the environment's API keys.
    """
    writer = _writer(tracer_provider, capture_content, known(secrets))
    for earlier in [i for i in _ACTIVE if i.tracer_provider is tracer_provider]:
        earlier.uninstrument()
    instrumentation = Instrumentation(writer, tracer_provider)
    _ACTIVE.append(instrumentation)
    return instrumentation


def uninstrument() -> None:
    """End every ``instrument()``: runs are no longer traced."""
    for instrumentation in list(_ACTIVE):
        instrumentation.uninstrument()


def export_trace(
    trace: Trace,
    tracer_provider: Any = None,
    *,
    name: str | None = None,
    capture_content: bool = False,
    parent: Context | None = None,
    secrets: Iterable[str] = (),
) -> Span:
    """A trace's spans, with the times it was recorded at; returns the run's span (already ended).

    ``name``: the run's; by default its workflow's, when the trace knows it, else ``"run"``.
    """
    if not isinstance(trace, Trace):
        raise bad_argument("export_trace", "trace", trace, "a Trace (result.trace)")
    return _writer(tracer_provider, capture_content, known(secrets)).trace(trace, name=name, parent=parent)


def export_result(
    result: Any,
    tracer_provider: Any = None,
    *,
    capture_content: bool = False,
    parent: Context | None = None,
    secrets: Iterable[str] = (),
) -> Span:
    """A run's spans: its trace, its status and the checkpoints it wrote."""
    writer = _writer(tracer_provider, capture_content, known(secrets))
    if result.workflow is not None:  # its clients' keys, its options' secrets
        writer.learn(secrets_of(result.workflow))
    name = result.workflow.name if result.workflow is not None else None
    span = writer.trace(result.trace, name=name, parent=parent, status=result.status)
    ends: dict[int, float] = {}
    for s in result.trace:
        ends[s.superstep] = max(ends.get(s.superstep, 0.0), (s.at or time.time()) + s.duration)
    inside = otel.set_span_in_context(span)
    for event in result.events:
        if event.type == "checkpoint":
            at = ends.get(event.superstep) or min(ends.values(), default=time.time())
            writer.checkpoint(inside, event.checkpoint_id, event.superstep, at)
    return span


def export_experiment(
    result: Any,
    tracer_provider: Any = None,
    *,
    capture_content: bool = False,
    parent: Context | None = None,
    secrets: Iterable[str] = (),
) -> Span:
    """An experiment's spans: one for it, one per cell (configuration, input, status, scores), its run inside."""
    writer = _writer(tracer_provider, capture_content, known(secrets))
    if result.experiment.ready is not None:  # a ready workflow's clients' keys (a built one's are not kept)
        writer.learn(secrets_of(result.experiment.ready))
    cells = [result.cell(c.k) for c in result.cells()]  # with their traces
    traces = [c.trace for c in cells]
    starts = [min((s.at for s in t if s.at), default=0.0) for t in traces]
    now = time.time()
    first = min((t for t in starts if t), default=now - sum(c.latency_s for c in cells))
    last = max((t + c.latency_s for t, c in zip(starts, cells, strict=True) if t), default=now)
    span = writer.tracer.start_span(f"experiment {result.name}", context=parent, start_time=ns(first))
    span.set_attribute("agent_nb.experiment.name", result.name)
    span.set_attribute("agent_nb.experiment.cells", len(cells))
    inside = otel.set_span_in_context(span)
    at = first
    for cell, trace, start in zip(cells, traces, starts, strict=True):
        begin = start or at
        cell_span = writer.tracer.start_span(f"experiment cell {cell.k}", context=inside, start_time=ns(begin))
        writer.cell(cell_span, cell)
        if len(trace):
            writer.trace(trace, parent=otel.set_span_in_context(cell_span))  # named after its workflow
        cell_span.end(end_time=ns(begin + cell.latency_s))
        at = begin + cell.latency_s
    span.end(end_time=ns(max(last, at)))
    return span
