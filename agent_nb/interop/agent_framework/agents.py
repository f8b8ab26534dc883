"""``FrameworkAgent``: an Agent Framework agent as an agent_nb agent, with what its model received in the trace.

Wrapped, an Agent Framework agent runs in an ``AgentExecutor``, a builder, the ``Playground`` or
an experiment like any agent_nb agent: its executor's context mode decides what it is handed, and
the trace shows it. For an Agent Framework ``Agent`` (one with a chat client) the trace shows
more: each request its client got — the instructions, the history its session held, the input,
the tool rounds, the tools offered — recorded by a chat middleware put on the run while an
executor records (the client must have Agent Framework's chat middleware layer, as its own do).

Its Agent Framework session lives in the agent_nb session's state (``state["agent_framework"]``,
as Agent Framework serialises it), so a checkpoint or a saved session keeps its history, and a
failed run leaves it as it was.
"""

from __future__ import annotations

import json
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import agent_framework as af

from ...agents.requests import ModelRequest, recorder, safe_options
from ...errors import bad_argument
from ...messages import AgentResponse, AgentResponseUpdate, Message, to_messages
from ...sessions import AgentSession
from .convert import (
    KEY,
    Converted,
    Unsupported,
    agent_response_from_framework,
    agent_update_from_framework,
    messages_from_framework,
    messages_to_framework,
    usage_from_framework,
)

__all__ = ["FrameworkAgent"]

STATE_KEY = "agent_framework"
"""Where an agent_nb session keeps the Agent Framework session of a ``FrameworkAgent``."""


def _shown(value: Any) -> Any:
    """An option as a trace can keep it: JSON values as they are, anything else as its ``repr``."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


class _Recorder(af.ChatMiddleware):
    """Keeps each request an Agent Framework agent's client gets, as a ``ModelRequest`` of agent_nb."""

    def __init__(self, agent: str, given: int, into: list[ModelRequest]) -> None:
        self.agent, self.given, self.into = agent, given, into
        self.history: int | None = None
        self.rounds = 0

    async def process(self, context: Any, call_next: Callable[[], Awaitable[None]]) -> None:
        options = {k: v for k, v in dict(context.options or {}).items() if v is not None}
        instructions = options.pop("instructions", None)
        tools = tuple(str(getattr(t, "name", t)) for t in options.pop("tools", None) or ())
        system = [Message("system", instructions)] if instructions else []
        messages = [*system, *messages_from_framework(context.messages, unsupported="drop")]
        if self.history is None:  # the first request: what came before this turn's input is the session's
            self.history = max(len(context.messages) - self.given, 0)
        round_ = self.rounds
        spans = (len(system), self.history, min(self.given, len(context.messages) - self.history))
        shown = safe_options({k: _shown(v) for k, v in options.items()})
        error: str | None = None
        at = time.time()
        try:
            await call_next()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            result = context.result
            said = (getattr(result, "additional_properties", None) or {}).get(KEY) or {}
            model = getattr(result, "model", None) if error is None else None
            usage = usage_from_framework(getattr(result, "usage_details", None)) if error is None else None
            finish = getattr(result, "finish_reason", None) if error is None else None
            self.into.append(
                ModelRequest(
                    self.agent,
                    tuple(messages),
                    spans,
                    tools,
                    shown,
                    round_,
                    said.get("route"),
                    None if model is None else str(model),
                    error,
                    tuple(said.get("repairs", ())),
                    at,
                    time.time() - at,
                    usage.input_tokens if usage is not None else None,
                    usage.output_tokens if usage is not None else None,
                    None if finish is None else str(getattr(finish, "value", finish)),
                    str(getattr(context.client, "OTEL_PROVIDER_NAME", "agent_framework")),
                )
            )
            self.rounds += 1


class FrameworkAgent:
    """An Agent Framework agent as an agent_nb agent (``SupportsAgentRun``).

    Args:
        agent: any Agent Framework agent (``run(messages, stream=..., session=...)``).
        name: its name in agent_nb (the executor's id, its messages' author); by default the agent's.
        unsupported: what to do with answer contents agent_nb cannot hold (reasoning text, hosted
            tools' work): ``"refuse"`` (an error naming them) or ``"drop"`` (left out, counted in ``dropped``).
    """

    def __init__(self, agent: Any, *, name: str | None = None, unsupported: Unsupported = "refuse") -> None:
        if not callable(getattr(agent, "run", None)) or not callable(getattr(agent, "create_session", None)):
            raise bad_argument("FrameworkAgent", "agent", agent, "an Agent Framework agent (run and create_session)")
        name = name if name is not None else (getattr(agent, "name", None) or getattr(agent, "id", None))
        if not isinstance(name, str) or not name:
            raise bad_argument("FrameworkAgent", "name", name, "a non-empty str: the agent has no name of its own")
        if unsupported not in ("refuse", "drop"):
            raise bad_argument(f"FrameworkAgent {name!r}", "unsupported", unsupported, "'refuse' or 'drop'")
        self.agent = agent
        self.name = name
        self.description = getattr(agent, "description", None)
        self.unsupported: Unsupported = unsupported
        self.dropped: Counter[str] = Counter()
        """Answer contents left out so far, by Agent Framework content type (``unsupported="drop"``)."""
        self._sessions: dict[int, tuple[weakref.ref[AgentSession], Any, Any]] = {}
        """id of a live agent_nb session -> (it, its Agent Framework session, the state that session was read from)."""
        self._asked: dict[str, Any] = {}
        """Approval request id -> the Agent Framework call it asks about (its answer must name that very call)."""

    def create_session(self) -> AgentSession:
        return AgentSession()

    # -- the Agent Framework session inside an agent_nb one --------------------------------

    def _session(self, session: AgentSession | None) -> Any:
        if session is None:
            return None
        saved = session.state.get(STATE_KEY)
        held = self._sessions.get(id(session))
        if held is not None and held[0]() is session and held[2] is saved:  # not restored meanwhile
            return held[1]
        if saved is None:
            mine = self.agent.create_session(session_id=session.session_id)
        else:
            mine = af.AgentSession.from_dict(saved)
        self._hold(session, mine, saved)
        return mine

    def _hold(self, session: AgentSession, mine: Any, saved: Any) -> None:
        key = id(session)
        self._sessions[key] = (weakref.ref(session, lambda _: self._sessions.pop(key, None)), mine, saved)

    def _save(self, session: AgentSession | None, mine: Any) -> None:
        if session is None:
            return
        saved = mine.to_dict()
        session.state[STATE_KEY] = saved
        self._hold(session, mine, saved)

    # -- runs -----------------------------------------------------------------------------

    def _arguments(self, given: list[Message], session: AgentSession | None, stream: bool) -> tuple[Any, ...]:
        mine = self._session(session)
        extra: dict[str, Any] = {"session": mine, "stream": stream}
        into = recorder()
        if into is not None and isinstance(self.agent, af.Agent):
            extra["client_kwargs"] = {"middleware": [_Recorder(self.name, len(given), into)]}
        return messages_to_framework(given, asked=self._asked), extra, mine

    def _remember(self, answer: Any) -> None:
        """Keep the calls the answer asks approval for: the answer to each must name that very call."""
        for m in answer.messages:
            for c in m.contents:
                if c.type == "function_approval_request":
                    self._asked[c.id] = c.function_call

    def _mine(self, messages: tuple[Message, ...], seen: Converted) -> tuple[Message, ...]:
        """The answer's messages under this agent's name; what was left out counted."""
        self.dropped.update(seen.dropped)
        out = []
        for m in messages:
            anonymous = m.author_name is None and m.role in ("assistant", "tool")
            out.append(m.model_copy(update={"author_name": self.name}) if anonymous else m)
        return tuple(out)

    def run(
        self,
        messages: Any = None,
        *,
        session: AgentSession | None = None,
        stream: bool = False,
    ) -> Awaitable[AgentResponse] | AsyncIterator[AgentResponseUpdate]:
        given = to_messages(messages)
        return self._stream(given, session) if stream else self._respond(given, session)

    async def _respond(self, given: list[Message], session: AgentSession | None) -> AgentResponse:
        inputs, extra, mine = self._arguments(given, session, False)
        answer = await self.agent.run(inputs, **extra)
        self._remember(answer)
        response, seen = agent_response_from_framework(answer, unsupported=self.unsupported)
        self._save(session, mine)
        return response.model_copy(update={"messages": self._mine(response.messages, seen)})

    async def _stream(self, given: list[Message], session: AgentSession | None) -> AsyncIterator[AgentResponseUpdate]:
        inputs, extra, mine = self._arguments(given, session, True)
        stream = self.agent.run(inputs, **extra)
        async for update in stream:
            converted, seen = agent_update_from_framework(update, unsupported=self.unsupported)
            self.dropped.update(seen.dropped)
            yield converted if converted.author_name else converted.model_copy(update={"author_name": self.name})
        finisher = getattr(stream, "get_final_response", None)
        if finisher is not None:  # Agent Framework saves the session's history as the stream is finished
            self._remember(await finisher())
        self._save(session, mine)

    def __repr__(self) -> str:
        return f"FrameworkAgent({self.name!r}, {type(self.agent).__name__})"
