"""Context modes: what a node that answers keeps of the answers it receives.

An agent's node (``AgentExecutor``) and a sub-workflow's node (``WorkflowExecutor``) read an
upstream answer the same way: ``full`` keeps its whole conversation, ``last_agent`` only the
reply, ``custom`` what a filter ``list[Message] -> list[Message]`` keeps. ``ReadsContext`` holds
the setting, checks it, and makes the selection both record in the trace (kept and dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..conversation import Conversation
from ..errors import ArgumentError, bad_argument, did_you_mean
from ..messages import Message

if TYPE_CHECKING:
    from .agent_executor import AgentExecutorResponse

__all__ = ["CONTEXT_MODES", "ContextFilter", "ContextMode", "ReadsContext", "Selection", "without"]

ContextMode = Literal["full", "last_agent", "custom"]
CONTEXT_MODES: tuple[str, ...] = ("full", "last_agent", "custom")
ContextFilter = Callable[[list[Message]], list[Message]]


@dataclass(slots=True)
class Selection:
    """What a context mode kept of what arrived, and what it dropped."""

    kept: Sequence[Message]
    dropped: Sequence[Message] = field(default=())


class ReadsContext:
    """A node's context mode and filter, and the selection they make of upstream answers.

    A mixin for executors (it uses ``self.id`` and ``self.kind``); ``_mode_record`` is what the
    node records in its snapshot (``kind``, ``context_mode``, ``context_filter``).
    """

    id: str
    kind: str
    _mode: ContextMode = "full"
    _filter: ContextFilter | None = None
    _mode_record: dict[str, Any]

    @property
    def context_mode(self) -> ContextMode:
        return self._mode

    @context_mode.setter
    def context_mode(self, mode: ContextMode) -> None:
        self.set_context_mode(mode, self._filter if mode == "custom" else None)

    @property
    def context_filter(self) -> ContextFilter | None:
        return self._filter

    def set_context_mode(self, mode: ContextMode, context_filter: ContextFilter | None = None) -> None:
        """Change what this executor keeps of upstream responses; applies from the next message."""
        if mode not in CONTEXT_MODES:
            raise bad_argument(
                f"executor {self.id!r}",
                "context_mode",
                mode,
                f"use one of: {', '.join(CONTEXT_MODES)}" + did_you_mean(str(mode), CONTEXT_MODES),
            )
        if mode == "custom" and context_filter is None:
            raise ArgumentError(
                f"executor {self.id!r}: context_mode='custom' needs a context_filter, "
                "a function list[Message] -> list[Message]",
                argument="context_filter",
            )
        if context_filter is not None and mode != "custom":
            raise ArgumentError(
                f"executor {self.id!r}: a context_filter is only used with context_mode='custom', not {mode!r}; "
                "pass context_mode='custom' (or leave the mode out)",
                argument="context_filter",
            )
        if context_filter is not None and not callable(context_filter):
            raise bad_argument(
                f"executor {self.id!r}", "context_filter", context_filter, "give a function of a list of messages"
            )
        self._mode, self._filter = mode, context_filter
        name = getattr(context_filter, "__name__", type(context_filter).__name__) if mode == "custom" else None
        self._mode_record = {"kind": self.kind, "context_mode": mode, "context_filter": name}

    def _record_mode(self, record: Any) -> None:
        """Write the mode into an invocation's open record (``_mode_record``'s three fields)."""
        mode = self._mode_record
        record.kind, record.context_mode, record.context_filter = (
            mode["kind"],
            mode["context_mode"],
            mode["context_filter"],
        )

    def _select(self, response: AgentExecutorResponse) -> Selection:
        """Apply the context mode to an upstream response."""
        reply = response.agent_response.messages
        full = response.full_conversation
        if full is None:
            full = Conversation(reply)
        if self._mode == "full":
            return Selection(full)
        if self._mode == "last_agent":
            n, k = len(full), len(reply)
            if k <= n and (
                full[n - 1] is reply[0] if k == 1 else all(full[n - k + i] is m for i, m in enumerate(reply))
            ):
                return Selection(reply, full.head(n - k))
            return Selection(reply, without(full, reply))
        return self._filtered(full.to_list())

    def _select_many(self, responses: list[AgentExecutorResponse]) -> Selection:
        """Apply the context mode to a fan-in: each message once, in order of first appearance."""
        seen: dict[int, Message] = {}
        for r in responses:
            for m in r.full_conversation if r.full_conversation is not None else r.agent_response.messages:
                seen.setdefault(id(m), m)
        everything = list(seen.values())
        if self._mode == "full":
            return Selection(everything)
        if self._mode == "last_agent":
            replies = [m for r in responses for m in r.agent_response.messages]
            return Selection(replies, without(everything, replies))
        return self._filtered(everything)

    def _filtered(self, everything: list[Message]) -> Selection:
        assert self._filter is not None
        try:
            kept = self._filter(list(everything))
        except Exception as exc:
            name = getattr(self._filter, "__name__", repr(self._filter))
            raise RuntimeError(f"the context_filter {name!r} of executor {self.id!r} raised {exc!r}") from exc
        if not isinstance(kept, (list, tuple)) or not all(isinstance(m, Message) for m in kept):
            raise TypeError(
                f"the context_filter of executor {self.id!r} must return a list of Message, got {kept!r:.80}"
            )
        return Selection(tuple(kept), without(everything, kept))

    def _why_empty(self, selection: Selection, sources: tuple[str, ...]) -> str:
        """Why a turn has no message to work from: its filter or mode dropped them all, or none came."""
        upstream = " and ".join(repr(s) for s in sources) or "its input"
        if selection.dropped:
            n = len(selection.dropped)
            what = (
                f"its context_filter {self._mode_record['context_filter']!r}"
                if self._mode == "custom"
                else (f"its context_mode {self._mode!r}")
            )
            return (
                f"{what} dropped all {n} message{'' if n == 1 else 's'} that came from {upstream}; "
                "make it keep at least one, or change the mode"
            )
        if sources:
            return f"{upstream} answered nothing (its reply had no message); look at why it gave an empty answer"
        return "it was handed no message (an empty list is no input); send at least one"


def without(messages: Iterable[Message], removed: Iterable[Message]) -> list[Message]:
    """``messages`` minus the ``removed`` objects (by identity: equal messages may be distinct turns)."""
    gone = {id(m) for m in removed}
    return [m for m in messages if id(m) not in gone]
