"""The trace as plain text: the report ``str(trace)`` prints, and the one-line forms of its parts.

The text is stable (no timings unless asked for), so it can be compared in tests and
stored as a snapshot. By default it is whole: every invocation, every message. The folding
options of ``trace_text`` bound it the way the run view bounds its HTML (a notebook stores the
``text/plain`` of a ``RunResult``, however long the run): long lists show their first few and
last items and count the rest, long texts say how much they left out, and beyond a size the
invocations fold too. A report that needs no folding is the same with the options as without.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contents import shorten, tool_work_as_text
from ..errors import bad_argument
from ..messages import Message

if TYPE_CHECKING:
    from .snapshots import ContextSnapshot, Trace

__all__ = ["MIN_BYTES", "describe_state", "describe_value", "message_body", "message_line", "trace_text"]


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
    return shorten(f"{_who(m, was)}: {message_body(m)}", width)


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


def _who(m: Message, was: str | None) -> str:
    who: str = m.role
    if m.author_name:
        who += f", from {m.author_name}"
    if was is not None and was != m.role:
        who += f" (was {was})"
    return who


_WORD = re.compile(r"\S+")
_SUMMARY = 300
"""Bytes kept for the line that says how the invocations folded."""
MIN_BYTES = 1_000
"""The smallest ``max_bytes`` accepted: room for the summary and a few lines."""


def _start(text: str, n: int) -> tuple[str, int]:
    """The first ``n`` characters of ``text`` with its whitespace collapsed, and how far into ``text`` they reach.

    It reads only the words it keeps, so a text of megabytes costs what is shown.
    """
    pieces: list[str] = []
    size = end = 0
    for match in _WORD.finditer(text):
        room = n - size - (1 if pieces else 0)
        if room <= 0:
            break
        word = match.group()[:room]
        size += len(word) + (1 if pieces else 0)
        pieces.append(word)
        end = match.start() + len(word)
    return " ".join(pieces), end


def _cut(prefix: str, text: str, width: int) -> str:
    """``prefix`` and the start of ``text`` in about ``width`` characters, then how many characters were left out."""
    lead = " ".join(prefix.split())
    lead = f"{lead} " if lead else ""
    room = max(width - len(lead) - len(f"… ({len(text)} more characters)"), 1)
    shown, end = _start(text, room)
    return f"{lead}{shown}… ({len(text) - end} more characters)"


def _bytes(line: str) -> int:
    """What ``line`` and its newline take in UTF-8."""
    return (len(line) if line.isascii() else len(line.encode("utf-8"))) + 1


def _from_the_ends(n: int) -> Iterator[int]:
    """``0 … n-1`` from both ends inwards: the last, the first, then three from the end for each from the start.

    The proportions of a folded list (a quarter from the start, the rest from the end).
    """
    lo, hi, k = 0, n - 1, 0
    while lo <= hi:
        if k % 4 == 1:
            yield lo
            lo += 1
        else:
            yield hi
            hi -= 1
        k += 1


def _shown(n: int, limit: int | None) -> tuple[range, int, range]:
    """Which of ``n`` items a list folded to ``limit`` shows: the first ones, how many are left out, the last ones."""
    if limit is None or n <= limit:
        return range(n), 0, range(0)
    head = max(limit // 4, 1)
    tail = limit - head
    return range(head), n - head - tail, range(n - tail, n)


def _count(n: int, noun: str = "message") -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def model_got(s: ContextSnapshot, origins: Sequence[str]) -> str:
    """Where what the model got came from: ``instructions 1 · input 2`` (``in 2 requests`` after tool rounds).

    ``origins`` are those of ``s.model_input``, read once by the caller (they are derived each time).
    """
    request = s.model_input
    assert request is not None
    counts = " · ".join(f"{o} {n}" for o, n in Counter(origins).items()) or "nothing"
    rounds = sum(1 for q in s.model_requests if q.agent == request.agent)
    return counts + (f" · in {rounds} requests" if rounds > 1 else "")


def repaired(s: ContextSnapshot) -> list[str]:
    """What routers changed of its requests before their models got them, each change once."""
    return list(dict.fromkeys(r for q in s.model_requests for r in q.repairs))


def roles_before(s: ContextSnapshot, messages: Sequence[Message]) -> list[Message]:
    """For each message the model got, the message before its role was reassigned (itself when it was not)."""
    given = s.given or ()
    before = {id(g): c for g, c in zip(given, s.cached, strict=True)} if len(s.cached) == len(given) else {}
    return [before.get(id(m), m) for m in messages]


class _Report:
    """Draws one invocation's lines (whole, or with its lists and long texts folded), or its one-line brief."""

    def __init__(self, width: int, timings: bool, max_messages: int | None, max_chars: int | None) -> None:
        self.body = max(width - 14, 20)
        self.timings = timings
        self.max_messages = max_messages
        self.max_chars = max_chars
        self.cap = None if max_chars is None else max(width, max_chars)

    def capped(self, line: str) -> str:
        """A line cut to ``max(width, max_chars)`` characters when folding (a name or label that long, say)."""
        if self.cap is None or len(line) <= self.cap:
            return line
        return line[: self.cap - 1] + "…"

    def long(self, text: str) -> bool:
        return self.max_chars is not None and len(text) > self.max_chars

    def add(self, lines: list[str], label: str, text: str, *, counted: bool = False) -> None:
        shown = _cut("", text, self.body) if counted and self.long(text) else shorten(text, self.body)
        lines.append(self.capped(f"    {label:<9} {shown}"))  # a label of ten letters keeps its space

    def each(self, n: int, draw: Callable[[int], None], left_out: Callable[[int], None]) -> None:
        first, hidden, last = _shown(n, self.max_messages)
        for i in first:
            draw(i)
        if hidden:
            left_out(hidden)
        for i in last:
            draw(i)

    def listing(
        self,
        lines: list[str],
        mark: str,
        messages: Sequence[Message],
        was: Sequence[Message] = (),
        origins: Sequence[str] = (),
    ) -> None:
        width = self.body - 3

        def draw(i: int) -> None:
            m = messages[i]
            prefix = f"{i + 1}." if mark == "#" else mark
            room = width
            if origins:
                prefix += f" [{origins[i]}]"
                room -= len(origins[i]) + 3  # the tag takes its place in the line's width
            who = _who(m, was[i].role if was else None)
            body = message_body(m)
            line = _cut(f"{who}:", body, room) if self.long(body) else shorten(f"{who}: {body}", room)
            lines.append(self.capped(f"              {prefix} {line}"))

        self.each(len(messages), draw, lambda k: lines.append(f"              … {_count(k)} not shown …"))

    def head(self, s: ContextSnapshot) -> str:
        head = f"[{s.superstep}] {s.executor_id} · {s.kind}"
        if s.context_mode:
            head += f" · context_mode={s.context_mode}"
        if s.context_filter:
            head += f" ({s.context_filter})"
        head += f" · {s.status}"
        if self.timings:
            head += f" · {s.duration * 1000:.2f} ms"
        return self.capped(head)

    def block(self, s: ContextSnapshot) -> list[str]:
        """Every line of one invocation."""
        lines = [self.head(s)]
        self.add(lines, "received", describe_value(s.received, self.body))
        if s.dropped:
            self.add(lines, "dropped", _count(len(s.dropped)))
            self.listing(lines, "✗", s.dropped)
        request = s.model_input
        fixes = repaired(s)
        if s.given is not None and request is None:
            self.add(lines, "given", _count(len(s.given)))
            self.listing(lines, "#", s.given, s.cached if len(s.cached) == len(s.given) else ())
        elif request is not None:
            origins = request.origins
            self.add(lines, "given", _count(len(s.given or ())) + " by its executor")
            self.add(lines, "model got", f"{_count(len(request.messages))} · {model_got(s, origins)}")
            self.listing(lines, "#", request.messages, roles_before(s, request.messages), origins)
            if fixes:
                self.add(lines, "repaired", "; ".join(fixes))
        elif s.kind == "agent" and s.kept:
            self.add(lines, "cached", _count(len(s.kept)))
        if s.response is not None:
            self.add(lines, "answered", s.response.text, counted=True)
            notes = [n for n in s.response.repairs if n not in fixes and not any(n in w for w in s.warnings)]
            if notes:
                self.add(lines, "noted", "; ".join(notes))
        if s.wrote:
            self.add(lines, "wrote", _count(len(s.wrote)) + " to the chat")
            self.listing(lines, "»", s.wrote)
        state = list(s.state.items())
        self.each(
            len(state),
            lambda i: self.add(lines, state[i][0], describe_state(state[i][1], self.body)),
            lambda k: lines.append(f"    … {k} state {'entry' if k == 1 else 'entries'} not shown …"),
        )

        if s.inner is not None:
            ran = ", ".join(dict.fromkeys(x.executor_id for x in s.inner))
            self.add(lines, "ran", f"its own workflow: {_count(len(s.inner), 'invocation')} ({ran})")
            for x in s.inner:
                lines.extend(self.capped(f"    │ {line}") for line in self.block(x))

        def sent(i: int) -> None:
            x = s.sent[i]
            to = ", ".join(x.targets) or "(no downstream executor)"
            self.add(lines, "sent", f"{describe_value(x.message, self.body)} → {to}")

        self.each(len(s.sent), sent, lambda k: lines.append(f"    … {_count(k, 'sent message')} not shown …"))
        for warning in s.warnings:
            self.add(lines, "warning", warning)
        if s.error is not None:
            self.add(lines, "error", s.error)
        return lines

    def brief(self, s: ContextSnapshot) -> str:
        """One invocation in one line: its head and the sizes of what it had."""
        parts = []
        if s.dropped:
            parts.append(f"dropped {_count(len(s.dropped))}")
        if s.model_input is not None:
            parts.append(f"model got {_count(len(s.model_input.messages))}")
        elif s.given is not None:
            parts.append(f"given {_count(len(s.given))}")
        elif s.kind == "agent" and s.kept:
            parts.append(f"cached {_count(len(s.kept))}")
        if s.wrote:
            parts.append(f"wrote {_count(len(s.wrote))}")
        if s.sent:
            parts.append(f"sent {len(s.sent)}")
        return self.capped(f"{self.head(s)} · in brief" + (f": {', '.join(parts)}" if parts else ""))


def _checked(name: str, value: int | None, least: int, accepted: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
        raise bad_argument("trace_text", name, value, accepted)
    return value


def trace_text(
    trace: Trace,
    *,
    width: int = 100,
    timings: bool = False,
    max_messages: int | None = None,
    max_chars: int | None = None,
    max_bytes: int | None = None,
) -> str:
    """A plain-text report: per invocation, what arrived, what was kept and dropped, what was answered.

    The report is whole by default. The folding options bound it (each ``None`` leaves it out):

    Args:
        trace: the snapshots to report.
        width: characters of a line; each message is one line, cut with ``…`` when longer.
        timings: add each invocation's duration.
        max_messages: lines per list (the messages dropped, given or written, the state entries, the
            messages sent); a longer list shows its first quarter and its last ones and counts the rest
            (``… 99960 messages not shown …``), like the run view's lists.
        max_chars: a text longer than this (a message, an answer) ends its line with how many of its
            characters were left out (``… (99913 more characters)``); no line is longer than this
            (or than ``width``, when that is more).
        max_bytes: the report's size in UTF-8 bytes, at most (at least ``MIN_BYTES``). A report that
            would be larger folds its invocations: every executor's last invocation is kept in one line
            (in at most half the size; beyond, as many as fit), the first and the last invocations are
            shown whole in the rest, and the others are counted (``… 975 invocations not shown …``);
            a first line says how it folded.

    A report whose lists, texts and size are within the limits is exactly the whole report.
    """
    _checked("max_messages", max_messages, 1, "give an int >= 1, or None for every message")
    _checked("max_chars", max_chars, 1, "give an int >= 1, or None for whole texts")
    _checked("max_bytes", max_bytes, MIN_BYTES, f"give an int >= {MIN_BYTES}, or None for no bound")
    report = _Report(width, timings, max_messages, max_chars)
    if trace.restored_from is None:
        return _body(trace, report, max_bytes)
    first, rest = restored_line(trace), None
    if max_bytes is not None:  # the line takes at most a quarter of the bound; the report the rest
        first = _within(first, max_bytes // 4)
        rest = max_bytes - _bytes(first) - 1
    return f"{first}\n{_body(trace, report, rest)}" if len(trace) else first


def _within(text: str, size: int) -> str:
    """``text`` in at most ``size`` UTF-8 bytes, ending with ``…`` when cut."""
    data = text.encode()
    return text if len(data) <= size else data[: size - 3].decode("utf-8", "ignore") + "…"


def restored_line(trace: Trace) -> str:
    """What a run resumed from a checkpoint put back without running it, in one line."""
    who = ", ".join(trace.restored) or "no executor"
    return f"resumed from checkpoint {trace.restored_from}: restored {who} (not run in this run)"


def _body(trace: Trace, report: _Report, max_bytes: int | None) -> str:
    if max_bytes is None:
        return "\n".join(line for s in trace for line in report.block(s))

    blocks: dict[int, list[str]] = {}
    size = -1  # the last line has no newline
    for i, s in enumerate(trace):  # whole, if it fits: stops as soon as it does not
        blocks[i] = report.block(s)
        size += sum(_bytes(line) for line in blocks[i])
        if size > max_bytes:
            break
    else:
        return "\n".join(line for i in range(len(blocks)) for line in blocks[i])
    return _folded(trace, report, blocks, max_bytes)


def _folded(trace: Trace, report: _Report, blocks: dict[int, list[str]], max_bytes: int) -> str:
    """The report with its invocations folded to ``max_bytes`` (see ``trace_text``)."""
    n = len(trace)
    gap = _bytes(f"… {n} invocations not shown, {n} of them an executor's last …")  # the longest a gap line is
    budget = max_bytes - _SUMMARY - gap  # the summary, and a gap line at the end
    shown: set[int] = set()

    def cost(i: int, lines: list[str]) -> int:
        # hidden invocations between runs of shown ones fold into one line each: a new run may need one more
        alone = i - 1 not in shown and i + 1 not in shown
        return sum(_bytes(line) for line in lines) + (gap if alone else 0)

    lasts = sorted({s.executor_id: i for i, s in enumerate(trace)}.values())
    last_set = set(lasts)
    briefs: dict[int, str] = {}  # what the executors' last invocations take in one line: at most half the size
    reserve = 0
    for i in lasts:
        briefs[i] = report.brief(trace[i])
        reserve += _bytes(briefs[i]) + gap
        if reserve >= budget // 2:
            reserve = budget // 2
            break
    used = 0
    whole: dict[int, list[str]] = {}
    for i in _from_the_ends(n):  # the first and the last invocations whole, in what the one-line ones leave
        lines = blocks.get(i) or report.block(trace[i])
        price = cost(i, lines)
        if used + price > budget - reserve:
            break
        whole[i] = lines
        shown.add(i)
        used += price
    others = [i for i in lasts if i not in shown]
    brief: dict[int, str] = {}
    for k in _from_the_ends(len(others)):
        i = others[k]
        line = briefs.get(i) or report.brief(trace[i])
        price = cost(i, [line])
        if used + price > budget:
            break
        brief[i] = line
        shown.add(i)
        used += price
    hidden = n - len(shown)
    out = [
        f"(folded to at most {max_bytes} bytes: {_count(n, 'invocation')}, {len(whole)} shown whole, "
        f"{len(brief)} in one line, {hidden} not shown)"
    ]
    skipped = skipped_lasts = 0
    for i in range(n):
        if i not in shown:
            skipped += 1
            skipped_lasts += i in last_set
            continue
        if skipped:
            out.append(_gap_line(skipped, skipped_lasts))
            skipped = skipped_lasts = 0
        out.extend(whole[i] if i in whole else [brief[i]])
    if skipped:
        out.append(_gap_line(skipped, skipped_lasts))
    return "\n".join(out)


def _gap_line(skipped: int, lasts: int) -> str:
    of = f", {lasts} of them an executor's last" if lasts else ""
    return f"… {_count(skipped, 'invocation')} not shown{of} …"
