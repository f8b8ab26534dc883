"""What a model really received: each request an agent sent to its chat client, kept as it went.

An executor hands its agent some messages; the model gets more: the agent's instructions, the
history its provider loaded, the tools it offers, the options, and in a tool round the calls and
results so far. ``ModelRequest`` is one such request, exactly as sent, each message labelled by
where it came from (``ORIGINS``). A turn records its requests while ``recording()`` is open (an
agent executor opens it around its agent's run); outside it nothing is kept and nothing is paid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, NamedTuple

from ..clients.redaction import REQUEST_EXTRAS, is_secret_key, redact_tree
from ..messages import Message

__all__ = ["ORIGINS", "ModelRequest", "origins_of", "recorder", "recording", "safe_options"]

ORIGINS = ("instructions", "history", "handed over", "input", "tool work")
"""Where a message of a request came from: the agent's instructions, its stored history, another
agent's words (handed over by an executor), this turn's input, or this turn's own tool calls and
results (a tool round)."""


class ModelRequest(NamedTuple):
    """One request an agent sent to its chat client, and who answered it (a tuple: made in one step)."""

    agent: str
    messages: tuple[Message, ...]
    """The messages exactly as the agent sent them to its client, in order (a router may repair them: ``repairs``)."""
    spans: tuple[int, int, int]
    """How many of the messages are instructions, then history, then this turn's (the rest: tool work)."""
    tools: tuple[str, ...] = ()
    """The names of the tools offered."""
    options: Mapping[str, Any] = MappingProxyType({})
    """The options sent, tools left out (named above); what sits under a secret-naming key is masked."""
    round: int = 0
    """0 for a turn's first request, then one more for each tool round."""
    route: str | None = None
    model: str | None = None
    error: str | None = None
    """The client's failure, when this request was not answered."""
    repairs: tuple[str, ...] = ()
    """What a router changed of it before its route's model got it (``history_policy="repair"``)."""
    sent_at: float = 0.0
    """When it was sent (seconds since the epoch; 0 when not known, as in traces stored before it was kept)."""
    duration: float = 0.0
    """Seconds until its answer (or its failure) came back."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    provider: str | None = None
    """Who served it, as its client says (``provider``): ``"openai"``, ``"agent_nb.offline"``, ..."""

    @property
    def origins(self) -> tuple[str, ...]:
        """One of ``ORIGINS`` per message (read from the messages: nothing is kept twice)."""
        instructions, history, new = self.spans
        start = instructions + history
        turn = self.messages[start : start + new]
        return origins_of(self.agent, instructions, history, turn, len(self.messages) - start - new)

    def of(self, origin: str) -> tuple[Message, ...]:
        """The messages of one origin (``"instructions"``, ``"history"``, ...), in order."""
        return tuple(m for m, o in zip(self.messages, self.origins, strict=True) if o == origin)

    def __repr__(self) -> str:
        origins = self.origins
        counts = ", ".join(f"{o} {origins.count(o)}" for o in ORIGINS if o in origins)
        by = f", route={self.route!r}" if self.route else ""
        return f"ModelRequest({self.agent!r}, round {self.round}: {len(self.messages)} messages ({counts}){by})"


_recording: ContextVar[list[ModelRequest] | None] = ContextVar("agent_nb_model_requests", default=None)


class recording:  # lower case: used as a function, ``with recording() as sent:``
    """The requests sent while the block runs, in order (nested agents' too: each names its agent)."""

    __slots__ = ("_token", "requests")

    def __enter__(self) -> list[ModelRequest]:
        self.requests: list[ModelRequest] = []
        self._token = _recording.set(self.requests)
        return self.requests

    def __exit__(self, *exc: object) -> None:
        _recording.reset(self._token)


def recorder() -> list[ModelRequest] | None:
    """Where a turn appends its requests, or ``None`` when nobody is recording."""
    return _recording.get()


def origins_of(agent: str, instructions: int, history: int, new: Sequence[Message], produced: int) -> tuple[str, ...]:
    """The origin of each message of ``[*instructions, *history, *new, *produced]``.

    Of the turn's new messages, the agent's own tool work (a call it made, results of its calls)
    is tool work; words another agent wrote are handed over; the rest is this turn's input.
    """
    labels = ["instructions"] * instructions + ["history"] * history
    for m in new:
        author = m.author_name
        if m.role == "tool" or (author == agent and any(c.type == "function_call" for c in m.contents)):
            labels.append("tool work")
        elif author is not None and author != agent and author != "user":  # "user": the person, as a harness names them
            labels.append("handed over")
        else:
            labels.append("input")
    labels += ["tool work"] * produced
    return tuple(labels)


def safe_options(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """The options without ``tools``, secrets masked (most options hold none: they are kept as they are)."""
    shown = {k: v for k, v in options.items() if k != "tools"}
    if any(is_secret_key(k) or k in REQUEST_EXTRAS for k in shown):
        return dict(redact_tree(shown))
    return shown
