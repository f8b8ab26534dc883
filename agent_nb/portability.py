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

from .clients.base import Capabilities
from .messages import FunctionResultContent, Message, TextContent, estimate_tokens, shorten, tool_work_as_text

__all__ = ["Problem", "check_history", "describe_message", "repair_history"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing a route would reject, and where."""

    index: int
    """Position of the message in the request."""
    kind: str
    """``orphan_result``, ``unanswered_call``, ``tools``, ``images``, ``system``, ``call_id`` or ``context``."""
    detail: str
    call_id: str | None = None

    def __str__(self) -> str:
        return f"message {self.index}: {self.detail}"


def describe_message(m: Message) -> str:
    """``assistant from planner "I see 2 messages…"``: how a message is named in an error."""
    who = m.role if m.author_name is None else f"{m.role} from {m.author_name}"
    body = m.text or ", ".join(c.type for c in m.contents)
    return f'{who} "{shorten(body, 40)}"'


def _is_image(content: object) -> bool:
    media = getattr(content, "media_type", None) or ""
    return getattr(content, "type", "") in ("data", "uri") and media.startswith("image/")


def check_history(messages: Sequence[Message], capabilities: Capabilities) -> list[Problem]:
    """Everything in ``messages`` a route with ``capabilities`` would reject (empty when it is fine)."""
    caps = capabilities
    problems: list[Problem] = []
    open_calls: dict[str, int] = {}  # call id -> index of the assistant message that made it
    pattern = re.compile(caps.call_id_pattern) if caps.call_id_pattern else None

    def unanswered(reason: str) -> None:
        for call_id, at in open_calls.items():
            problems.append(Problem(at, "unanswered_call", f"tool call {call_id!r} has no result ({reason})", call_id))
        open_calls.clear()

    for i, m in enumerate(messages):
        tool_work = [c for c in m.contents if c.type == "function_call" or c.type == "function_result"]
        if m.role == "system" and not caps.system_messages:
            problems.append(Problem(i, "system", f"{describe_message(m)}: this route takes no system messages"))
        if not caps.images and any(_is_image(c) for c in m.contents):
            problems.append(Problem(i, "images", f"{describe_message(m)}: this route takes no images"))
        if not caps.tool_calls:
            if tool_work or m.role == "tool":
                problems.append(
                    Problem(i, "tools", f"{describe_message(m)}: a tool exchange, but this route has no tools")
                )
            continue
        if pattern is not None:
            for c in tool_work:
                if not pattern.fullmatch(c.call_id):
                    problems.append(
                        Problem(
                            i,
                            "call_id",
                            f"tool-call id {c.call_id!r} does not match {caps.call_id_pattern!r}",
                            c.call_id,
                        )
                    )
        if m.role == "tool":
            for result in m.contents:
                if not isinstance(result, FunctionResultContent):
                    continue
                if result.call_id in open_calls:
                    del open_calls[result.call_id]
                else:
                    detail = f"tool result {result.call_id!r} answers no call just before it"
                    problems.append(Problem(i, "orphan_result", detail, result.call_id))
            continue
        if open_calls:
            unanswered(f"message {i} ({m.role}) comes before its result")
        for c in tool_work:
            if c.type == "function_result":
                problems.append(
                    Problem(i, "orphan_result", f"tool result {c.call_id!r} is in a {m.role} message", c.call_id)
                )
            elif m.role == "assistant":
                open_calls[c.call_id] = i
            else:
                problems.append(
                    Problem(i, "unanswered_call", f"tool call {c.call_id!r} is in a {m.role} message", c.call_id)
                )
    if open_calls:
        last = len(messages) - 1
        if not (caps.trailing_tool_call and all(at == last for at in open_calls.values())):
            unanswered("the conversation ends before its result")
    if caps.context_window is not None:
        tokens = estimate_tokens(messages)
        if tokens > caps.context_window:
            problems.append(
                Problem(0, "context", f"about {tokens} tokens, more than this route's {caps.context_window}")
            )
    return problems


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
        orphans = {(p.index, p.call_id or "") for p in pairing if p.kind in ("orphan_result", "unanswered_call")}
        if orphans:
            out = _drop_contents(out, orphans)
            notes.append(f"dropped {len(orphans)} unpaired tool call{'s' if len(orphans) != 1 else ''} or result(s)")
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


def _drop_contents(messages: list[Message], drop: set[tuple[int, str]]) -> list[Message]:
    out = []
    for i, m in enumerate(messages):
        kept = [
            c for c in m.contents if not (c.type in ("function_call", "function_result") and (i, c.call_id) in drop)
        ]
        if len(kept) == len(m.contents):
            out.append(m)
        elif kept:  # a message left with nothing is dropped
            out.append(Message(m.role, kept, author_name=m.author_name, message_id=m.message_id))
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
        out.append(Message(m.role, contents, author_name=m.author_name, message_id=m.message_id))
    return out, len(mapping)


def _without_images(m: Message) -> Message:
    if not any(_is_image(c) for c in m.contents):
        return m
    contents = [
        TextContent(f"[image omitted: {getattr(c, 'media_type', '')}]") if _is_image(c) else c for c in m.contents
    ]
    return Message(m.role, contents, author_name=m.author_name, message_id=m.message_id)
