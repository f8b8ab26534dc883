"""Spans as runs go: an observer of every run (``agent_nb.workflow.observers``) that writes them.

An experiment run here (its local engine) is a span too, and each of its cells a span inside it
(``LiveExperiments``, a watcher of ``agent_nb.watchers``): each is the current span while it runs,
so the cell's runs open inside it. The Dask engine runs its cells in other processes: export its
result after the fact (``result.to_otel()``).

A run's span opens when it starts, under whatever span is current there (a cell of yours, an
experiment's, the invocation of a parent workflow's node), and closes when it ends. Each
invocation's span opens when the invocation starts and is the current span while it runs, so a
sub-workflow run inside it, or a span of your own code, nests under it; when it ends, its model
calls, tool calls and answered requests are written from its snapshot, with their own times.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel
from opentelemetry.trace import Span

from .run_secrets import secrets_of
from .spans import SpanWriter

__all__ = ["LiveExperiments", "LiveSpans"]


def _task() -> Any:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


class _Open:
    """A run's span and the spans of its invocations still running."""

    __slots__ = ("invocations", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.invocations: dict[str, list[tuple[Span, Any, Any]]] = {}
        """executor id -> (span, context token, the task that made it current), innermost last."""


class LiveSpans:
    """The observer: ``observe(LiveSpans(writer))`` starts it."""

    def __init__(self, writer: SpanWriter) -> None:
        self.writer = writer
        self._runs: dict[int, _Open] = {}

    def __call__(self, run: Any, event: Any) -> None:
        handle = getattr(self, f"_on_{event.type}", None)
        if handle is not None:
            handle(run, event)

    def _on_started(self, run: Any, event: Any) -> None:
        self.writer.learn(secrets_of(run.workflow, getattr(run, "_run_kwargs", {}).get("client_kwargs")))
        span = self.writer.start_run(run.workflow.name, otel_context.get_current(), run.began or time.time())
        self._runs[id(run)] = _Open(span)

    def _on_executor_invoked(self, run: Any, event: Any) -> None:
        opened = self._runs.get(id(run))
        if opened is None:
            return
        parent = otel.set_span_in_context(opened.span)
        span = self.writer.tracer.start_span(f"executor {event.executor_id}", context=parent)
        token = otel_context.attach(otel.set_span_in_context(span))
        opened.invocations.setdefault(event.executor_id, []).append((span, token, _task()))

    def _close(self, run: Any, executor_id: str, snapshot: Any) -> None:
        opened = self._runs.get(id(run))
        stack = opened.invocations.get(executor_id) if opened is not None else None
        if not stack:
            return
        span, token, _ = stack.pop()
        otel_context.detach(token)  # an invocation ends in the task it started in
        if snapshot is not None:
            parent = otel.set_span_in_context(opened.span)  # type: ignore[union-attr]
            self.writer.invocation(snapshot, parent, span=span, nested=False, requests=False)
        else:
            span.end()

    def _on_executor_completed(self, run: Any, event: Any) -> None:
        self._close(run, event.executor_id, event.snapshot)

    def _on_executor_failed(self, run: Any, event: Any) -> None:
        snapshots = getattr(run, "_snapshots", ())
        last = snapshots[-1] if snapshots and snapshots[-1].executor_id == event.executor_id else None
        self._close(run, event.executor_id, last)

    def _on_request_info(self, run: Any, event: Any) -> None:
        opened = self._runs.get(id(run))
        if opened is None:
            return
        stack = opened.invocations.get(event.executor_id)
        span = stack[-1][0] if stack else opened.span
        snapshot = _Asker(event.executor_id)
        self.writer._asked(event.request_id, snapshot, otel.set_span_in_context(span), time.time(), event.data)

    def _on_checkpoint(self, run: Any, event: Any) -> None:
        opened = self._runs.get(id(run))
        if opened is not None:
            parent = otel.set_span_in_context(opened.span)
            self.writer.checkpoint(parent, event.checkpoint_id, event.superstep, time.time())

    def _end(self, run: Any, status: str, error: BaseException | None) -> None:
        opened = self._runs.pop(id(run), None)
        if opened is None:
            return
        here = _task()
        for stack in opened.invocations.values():  # cancelled invocations: no event ended them
            for span, token, task in reversed(stack):
                if task is here:
                    otel_context.detach(token)
                span.set_attribute("agent_nb.status", "cancelled")
                span.end()
        turn = next((s.turn for s in getattr(run, "_snapshots", ()) if s.turn), 0)
        if turn:  # a harness's turn
            opened.span.set_attribute("agent_nb.turn", turn)
        restored = getattr(run, "restored", None)
        if restored is not None:  # resumed from a checkpoint
            opened.span.set_attribute("agent_nb.restored_from", restored.checkpoint.id)
        message = None if error is None else f"{type(error).__name__}: {error}"
        self.writer.end_run(opened.span, status, time.time(), message)

    def _on_completed(self, run: Any, event: Any) -> None:
        self._end(run, "waiting" if run.pending else "completed", None)

    def _on_failed(self, run: Any, event: Any) -> None:
        self._end(run, "failed", event.error)


class _Asker:
    """What a request span needs of its asker: the executor's id."""

    __slots__ = ("executor_id",)

    def __init__(self, executor_id: str) -> None:
        self.executor_id = executor_id


class LiveExperiments:
    """The experiments' watcher: ``watch(LiveExperiments(writer))`` starts it."""

    def __init__(self, writer: SpanWriter) -> None:
        self.writer = writer

    @contextlib.contextmanager
    def experiment(self, experiment: Any, engine: Any) -> Iterator[None]:
        if engine != "local":  # its cells run elsewhere, where nobody watches
            yield
            return
        span = self.writer.tracer.start_span(f"experiment {experiment.name}")
        span.set_attribute("agent_nb.experiment.name", experiment.name)
        span.set_attribute("agent_nb.experiment.cells", len(experiment))
        with self._current(span):
            yield

    @contextlib.contextmanager
    def cell(self, cell: Any) -> Iterator[None]:
        span = self.writer.tracer.start_span(f"experiment cell {cell.k}")
        try:
            with self._current(span, end=False):
                yield
        except BaseException:  # cancelled: the cell says what it had come to, the span that it was stopped
            self.writer.cell(span, cell)
            span.set_attribute("agent_nb.cell.status", "cancelled")
            span.end()
            raise
        self.writer.cell(span, cell)
        span.end()

    @contextlib.contextmanager
    def _current(self, span: Span, *, end: bool = True) -> Iterator[None]:
        """``span`` as the current span while the block runs (in this task, and in the tasks it makes)."""
        token = otel_context.attach(otel.set_span_in_context(span))
        try:
            yield
        except Exception as exc:
            self.writer.error(span, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            otel_context.detach(token)
            if end:
                span.end()
