"""The trace as plain text: the report ``str(trace)`` prints, and the one-line forms of its parts.

The text is stable (no timings unless asked for), so it can be compared in tests and
stored as a snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contents import shorten, tool_work_as_text
from ..messages import Message

if TYPE_CHECKING:
    from .snapshots import Trace

__all__ = ["describe_state", "describe_value", "message_body", "message_line", "trace_text"]


def describe_value(value: Any, width: int = 60) -> str:
    """How a delivered message reads in one line; workflow messages describe themselves."""
    if isinstance(value, str):
        return f"text {shorten(repr(value), width)}"
    if isinstance(value, Message):
        return f"{value.role} message {shorten(repr(value.text), width)}"
    describe = getattr(value, "describe", None)
    if callable(describe):
        return shorten(str(describe()), width)
    if isinstance(value, list):
        return f"list of {len(value)}"
    return shorten(f"{type(value).__name__} {value!r}", width + 10)


def describe_state(value: Any, width: int = 60) -> str:
    """A value of a snapshot's ``state`` in one line: mappings as ``k=v``, sequences joined by ``;``."""
    if isinstance(value, Mapping):
        text = ", ".join(f"{k}={v!r}" for k, v in value.items()) or "(none)"
    elif isinstance(value, (list, tuple)):
        text = "; ".join(str(v) for v in value) or "(none)"
    else:
        text = str(value)
    return shorten(text, width)


def message_line(m: Message, width: int, *, was: str | None = None) -> str:
    """One message in at most ``width`` characters: ``user, from planner (was assistant): I see…``."""
    who: str = m.role
    if m.author_name:
        who += f", from {m.author_name}"
    if was is not None and was != m.role:
        who += f" (was {was})"
    return shorten(f"{who}: {message_body(m)}", width)


def message_body(m: Message) -> str:
    """A message's contents as one readable text: tool work, card prompts and clicks included."""
    parts = []
    for c in m.contents:
        if c.type == "text":
            parts.append(c.text)
        elif c.type == "user_input_request":
            parts.append(c.prompt + "".join(f" [{o}]" for o in c.options))
        elif c.type == "user_input_response":
            parts.append(f"▸ {c.text}")
        elif c.type in ("function_call", "function_result"):
            parts.append(tool_work_as_text(c).text)
        else:
            parts.append(f"[{c.type}]")
    return " ".join(parts)


def trace_text(trace: Trace, *, width: int = 100, timings: bool = False) -> str:
    """A plain-text report: per invocation, what arrived, what was kept and dropped, what was answered."""
    lines: list[str] = []
    body = max(width - 14, 20)

    def add(label: str, text: str) -> None:
        lines.append(f"    {label:<9} {shorten(text, body)}")  # a label of ten letters keeps its space

    def listing(mark: str, messages: Sequence[Message], was: Sequence[Message] = ()) -> None:
        for i, m in enumerate(messages):
            prefix = f"{i + 1}." if mark == "#" else mark
            original = was[i].role if was else None
            lines.append(f"              {prefix} {message_line(m, body - 3, was=original)}")

    def count(n: int) -> str:
        return f"{n} message{'' if n == 1 else 's'}"

    for s in trace:
        head = f"[{s.superstep}] {s.executor_id} · {s.kind}"
        if s.context_mode:
            head += f" · context_mode={s.context_mode}"
        if s.context_filter:
            head += f" ({s.context_filter})"
        head += f" · {s.status}"
        if timings:
            head += f" · {s.duration * 1000:.2f} ms"
        lines.append(head)
        add("received", describe_value(s.received, body))
        if s.dropped:
            add("dropped", count(len(s.dropped)))
            listing("✗", s.dropped)
        if s.given is not None:
            add("given", count(len(s.given)))
            listing("#", s.given, s.cached if len(s.cached) == len(s.given) else ())
        elif s.kind == "agent" and s.kept:
            add("cached", count(len(s.kept)))
        if s.response is not None:
            add("answered", s.response.text)
        if s.wrote:
            add("wrote", count(len(s.wrote)) + " to the chat")
            listing("»", s.wrote)
        for key, value in s.state.items():
            add(key, describe_state(value, body))
        for sent in s.sent:
            add(
                "sent",
                f"{describe_value(sent.message, body)} → {', '.join(sent.targets) or '(no downstream executor)'}",
            )
        if s.error is not None:
            add("error", s.error)
    return "\n".join(lines)
