"""Spans written to the OpenTelemetry SDK's in-memory exporter, read back as a tree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_nb import telemetry


class Spans:
    """What was exported: spans by name, each one's parent, its children."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def all(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        return next((s for s in self.all if s.context.span_id == span.parent.span_id), None)

    def children(self, span: ReadableSpan) -> list[ReadableSpan]:
        kids = [s for s in self.all if s.parent is not None and s.parent.span_id == span.context.span_id]
        return sorted(kids, key=lambda s: (s.start_time, s.name))

    def tree(self, span: ReadableSpan | None = None, depth: int = 0) -> list[str]:
        """Names, indented by depth, children in the order they started."""
        if span is None:
            roots = sorted((s for s in self.all if self.parent(s) is None), key=lambda s: s.start_time)
            return [line for root in roots for line in self.tree(root)]
        return ["  " * depth + span.name, *(line for kid in self.children(span) for line in self.tree(kid, depth + 1))]

    def attributes(self) -> list[dict[str, Any]]:
        return [dict(s.attributes or {}) for s in self.all]

    def clear(self) -> None:
        self.exporter.clear()


@pytest.fixture
def spans() -> Iterator[Spans]:
    recorded = Spans()
    yield recorded
    telemetry.uninstrument()
    recorded.provider.shutdown()
