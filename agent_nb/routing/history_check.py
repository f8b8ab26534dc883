"""Will a route accept this conversation? The checks a routed request passes before it is sent.

The failure people meet most when they move a conversation to another provider is a
history the new one rejects: a tool result whose call is gone, a call never answered,
tool-call ids in another provider's format, tool messages for a model without tools.
``check_history`` finds these (naming each message); ``repair_history`` fixes what can be
fixed and says what it changed.

Pairing rules, as OpenAI-style providers enforce them: the results of an assistant
message's tool calls follow it at once, in tool messages, one per call; nothing else comes
in between; a call may stay unanswered only at the very end, for a route that allows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..clients.base import Capabilities
from ..contents import FunctionResultContent, TextContent, shorten, tool_work_as_text
from ..messages import Message, estimate_tokens

__all__ = ["HistoryScan", "Problem", "check_history", "describe_message", "repair_history"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing a route would reject, and where."""

    index: int
    """Position of the message in the request, from 0 (in words, messages are numbered from 1, as in traces)."""
    kind: str
    """``orphan_result``, ``unanswered_call``, ``misplaced``, ``tools``, ``images``, ``system``, ``call_id``
    or ``context``."""
    detail: str
    call_id: str | None = None
    position: int | None = None
    """Which content of the message, for problems about one content."""

    def __str__(self) -> str:
        return f"message {self.index + 1}: {self.detail}"


def describe_message(m: Message) -> str:
    """``assistant from planner "I see 2 messages…"``: how a message is named in an error."""
    who = m.role if m.author_name is None else f"{m.role} from {m.author_name}"
    body = m.text or ", ".join(c.type for c in m.contents)
    return f'{who} "{shorten(body, 40)}"'


def _is_image(content: object) -> bool:
    media = getattr(content, "media_type", None) or ""
    return getattr(content, "type", "") in ("data", "uri") and media.startswith("image/")


class HistoryScan:
    """``check_history`` as a left-to-right scan that can be resumed: feed messages, then ``finish``.

    A router keeps the scan of a conversation it already checked, and feeds it only the
    messages added since (``copy`` first to keep the original as it was).
    """

    __slots__ = ("_pattern", "caps", "count", "open_calls", "problems", "tokens")

    def __init__(self, capabilities: Capabilities) -> None:
        self.caps = capabilities
        self._pattern = re.compile(capabilities.call_id_pattern) if capabilities.call_id_pattern else None
        self.count = 0
        self.tokens = 0
        self.open_calls: dict[str, tuple[int, int]] = {}  # call id -> (message, content) that made it
        self.problems: list[Problem] = []

    def copy(self) -> HistoryScan:
        other = HistoryScan.__new__(HistoryScan)
        other.caps, other._pattern, other.count, other.tokens = self.caps, self._pattern, self.count, self.tokens
        other.open_calls, other.problems = dict(self.open_calls), list(self.problems)
        return other

    def _unanswered(self, reason: str) -> None:
        for call_id, (at, position) in self.open_calls.items():
            detail = f"tool call {call_id!r} has no result ({reason})"
            self.problems.append(Problem(at, "unanswered_call", detail, call_id, position))
        self.open_calls.clear()

    def feed(self, messages: Sequence[Message]) -> HistoryScan:
        caps, problems, open_calls = self.caps, self.problems, self.open_calls
        count_tokens = caps.context_window is not None
        for i, m in enumerate(messages, self.count):
            role, contents = m.role, m.contents
            if count_tokens:
                self.tokens += estimate_tokens([m])
            plain = (len(contents) == 1 and contents[0].type == "text") or all(c.type == "text" for c in contents)
            if plain and role != "tool":  # the common case, checked fast
                if role == "system" and not caps.system_messages:
                    problems.append(Problem(i, "system", f"{describe_message(m)}: this route takes no system messages"))
                if open_calls:
                    self._unanswered(f"message {i + 1} ({role}) comes before its result")
                continue
            self._feed_one(i, m)
        self.count += len(messages)
        return self

    def _feed_one(self, i: int, m: Message) -> None:
        caps, problems, open_calls = self.caps, self.problems, self.open_calls
        tool_work = [c for c in m.contents if c.type == "function_call" or c.type == "function_result"]
        if m.role == "system" and not caps.system_messages:
            problems.append(Problem(i, "system", f"{describe_message(m)}: this route takes no system messages"))
        if not caps.images and any(_is_image(c) for c in m.contents):
            problems.append(Problem(i, "images", f"{describe_message(m)}: this route takes no images"))
        if not caps.tool_calls:
            if tool_work or m.role == "tool":
                detail = f"{describe_message(m)}: a tool exchange, but this route has no tools"
                problems.append(Problem(i, "tools", detail))
            return
        if self._pattern is not None:
            for work in tool_work:
                if not self._pattern.fullmatch(work.call_id):
                    detail = f"tool-call id {work.call_id!r} does not match {caps.call_id_pattern!r}"
                    problems.append(Problem(i, "call_id", detail, work.call_id))
        if m.role == "tool":
            for position, c in enumerate(m.contents):
                if not isinstance(c, FunctionResultContent):
                    detail = f"a {c.type} content in a tool message, where only tool results go"
                    problems.append(Problem(i, "misplaced", detail, getattr(c, "call_id", None), position))
                elif c.call_id in open_calls:
                    del open_calls[c.call_id]
                else:
                    detail = f"tool result {c.call_id!r} answers no call just before it"
                    problems.append(Problem(i, "orphan_result", detail, c.call_id, position))
            return
        if open_calls:
            self._unanswered(f"message {i + 1} ({m.role}) comes before its result")
        for position, c in enumerate(m.contents):
            if c.type == "function_result":
                detail = f"tool result {c.call_id!r} is in a {m.role} message"
                problems.append(Problem(i, "orphan_result", detail, c.call_id, position))
            elif c.type != "function_call":
                continue
            elif m.role != "assistant":
                detail = f"tool call {c.call_id!r} is in a {m.role} message"
                problems.append(Problem(i, "unanswered_call", detail, c.call_id, position))
            elif c.call_id in open_calls:
                detail = f"tool call id {c.call_id!r} is used twice in one message"
                problems.append(Problem(i, "unanswered_call", detail, c.call_id, position))
            else:
                open_calls[c.call_id] = (i, position)

    def finish(self) -> list[Problem]:
        """The problems of everything fed, including what only the end decides."""
        if not self.open_calls and self.caps.context_window is None:
            return list(self.problems)
        end = self.copy()
        if end.open_calls:
            last = end.count - 1
            if not (end.caps.trailing_tool_call and all(at == last for at, _ in end.open_calls.values())):
                end._unanswered("the conversation ends before its result")
        window = end.caps.context_window
        if window is not None and end.tokens > window:
            end.problems.append(Problem(0, "context", f"about {end.tokens} tokens, more than this route's {window}"))
        return end.problems


def check_history(messages: Sequence[Message], capabilities: Capabilities) -> list[Problem]:
    """Everything in ``messages`` a route with ``capabilities`` would reject (empty when it is fine)."""
    return HistoryScan(capabilities).feed(messages).finish()


_ID_FORMATS: tuple[Callable[[int], str], ...] = (
    lambda n: f"call_{n}",
    lambda n: f"call{n:06d}",
    lambda n: f"c{n:08d}",
    lambda n: f"{n:09d}",
    lambda n: f"{n}",
)


def _id_format(pattern: str) -> Callable[[int], str] | None:
    regex = re.compile(pattern)
    for fmt in _ID_FORMATS:
        if all(regex.fullmatch(fmt(n)) for n in (1, 42, 12345)):
            return fmt
    return None


def repair_history(messages: Sequence[Message], capabilities: Capabilities) -> tuple[list[Message], list[str]]:
    """A version of ``messages`` the route accepts, and what was changed; some problems cannot be repaired.

    Tool exchanges become text for a route without tools; orphaned results and unanswered
    calls are dropped; call ids are renumbered into the route's format; system messages
    become user messages; images become a placeholder. An over-long conversation is left
    as it is (``check_history`` will still report it).
    """
    caps = capabilities
    out = list(messages)
    notes: list[str] = []
    if not caps.tool_calls:
        out, n = _render_tool_work(out)
        if n:
            notes.append(f"rendered {n} tool message{'s' if n != 1 else ''} as text (the route has no tools)")
    else:
        pairing = check_history(out, Capabilities(trailing_tool_call=caps.trailing_tool_call))
        unpaired = {
            (p.index, p.position)
            for p in pairing
            if p.kind in ("orphan_result", "unanswered_call", "misplaced") and p.position is not None
        }
        if unpaired:
            out = _drop_contents(out, unpaired)
            n = len(unpaired)
            notes.append(f"dropped {n} unpaired or misplaced tool content{'s' if n != 1 else ''}")
        if caps.call_id_pattern and any(p.kind == "call_id" for p in check_history(out, caps)):
            fmt = _id_format(caps.call_id_pattern)
            if fmt is not None:
                out, n = _renumber(out, fmt)
                notes.append(f"renumbered {n} tool-call id{'s' if n != 1 else ''} to match {caps.call_id_pattern!r}")
    if not caps.system_messages and any(m.role == "system" for m in out):
        out = [
            Message("user", [TextContent(f"[system] {m.text}")], author_name=m.author_name) if m.role == "system" else m
            for m in out
        ]
        notes.append("turned system messages into user messages (the route takes none)")
    if not caps.images and any(_is_image(c) for m in out for c in m.contents):
        out = [_without_images(m) for m in out]
        notes.append("replaced images with a placeholder (the route takes none)")
    return out, notes


def _render_tool_work(messages: list[Message]) -> tuple[list[Message], int]:
    out, n = [], 0
    for m in messages:
        if m.role == "tool" or any(c.type in ("function_call", "function_result") for c in m.contents):
            n += 1
            role = "user" if m.role == "tool" else m.role
            m = Message(role, [tool_work_as_text(c) for c in m.contents], author_name=m.author_name)
        out.append(m)
    return out, n


def _drop_contents(messages: list[Message], drop: set[tuple[int, int]]) -> list[Message]:
    out = []
    for i, m in enumerate(messages):
        kept = [c for position, c in enumerate(m.contents) if (i, position) not in drop]
        if len(kept) == len(m.contents):
            out.append(m)
        elif kept:  # a message left with nothing is dropped
            out.append(m.model_copy(update={"contents": tuple(kept)}))
    return out


def _renumber(messages: list[Message], fmt: Callable[[int], str]) -> tuple[list[Message], int]:
    mapping: dict[str, str] = {}
    out = []
    for m in messages:
        if not any(c.type in ("function_call", "function_result") for c in m.contents):
            out.append(m)
            continue
        contents = []
        for c in m.contents:
            if c.type in ("function_call", "function_result"):
                new_id = mapping.setdefault(c.call_id, fmt(len(mapping) + 1))
                c = c.model_copy(update={"call_id": new_id})
            contents.append(c)
        out.append(m.model_copy(update={"contents": tuple(contents)}))
    return out, len(mapping)


def _without_images(m: Message) -> Message:
    if not any(_is_image(c) for c in m.contents):
        return m
    contents = [
        TextContent(f"[image omitted: {getattr(c, 'media_type', '')}]") if _is_image(c) else c for c in m.contents
    ]
    return m.model_copy(update={"contents": tuple(contents)})
