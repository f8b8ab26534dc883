"""``AgentExecutor``: an agent as a node of a workflow graph.

It caches what arrives, applies its context mode to upstream responses, runs the agent
(streaming or not), emits outputs, sends an ``AgentExecutorResponse`` downstream, and
clears its cache so each call only processes what arrived since the last one.

With ``AgentExecutorOptions(wait_for_turn_token=True)`` it follows the turn-token
pattern instead: messages are cached (and, with ``forward_incoming_messages``, passed
on at once) until a ``TurnToken`` arrives; after its turn it sends its reply messages
and a new ``TurnToken`` downstream.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from ..agents import SupportsAgentRun
from ..conversation import EMPTY, Conversation
from ..messages import AgentResponse, AgentResponseUpdate, Message, to_messages
from ..sessions import AgentSession
from .executor import Executor, WorkflowContext, handler

__all__ = [
    "CONTEXT_MODES",
    "AgentExecutor",
    "AgentExecutorOptions",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "ContextFilter",
    "ContextMode",
    "TurnToken",
]

ContextMode = Literal["full", "last_agent", "custom"]
CONTEXT_MODES: tuple[str, ...] = ("full", "last_agent", "custom")
ContextFilter = Callable[[list[Message]], list[Message]]


@dataclass(frozen=True, slots=True)
class AgentExecutorRequest:
    """The canonical input: messages, and whether the agent should answer now.

    ``should_respond=False`` only caches the messages, to preload context.
    """

    messages: tuple[Message, ...]
    should_respond: bool = True

    def __init__(self, messages: str | Message | Iterable[str | Message], should_respond: bool = True) -> None:
        object.__setattr__(self, "messages", tuple(to_messages(messages)))
        object.__setattr__(self, "should_respond", should_respond)

    def describe(self) -> str:
        flag = "" if self.should_respond else ", should_respond=False"
        return f"request of {len(self.messages)} messages{flag}"


@dataclass(frozen=True, slots=True)
class AgentExecutorResponse:
    """What an agent executor sends downstream after its agent answered.

    ``full_conversation`` is the input it processed followed by the agent's reply.
    """

    executor_id: str
    agent_response: AgentResponse
    full_conversation: Conversation | None = None

    def __post_init__(self) -> None:
        full = self.full_conversation
        if full is not None and not isinstance(full, Conversation):
            object.__setattr__(self, "full_conversation", Conversation(full))  # a list built by hand

    def describe(self) -> str:
        n = "?" if self.full_conversation is None else len(self.full_conversation)
        return f"response of {self.executor_id} (conversation of {n} messages)"

    def __repr__(self) -> str:
        n = "?" if self.full_conversation is None else len(self.full_conversation)
        return f"AgentExecutorResponse({self.executor_id!r}, {self.agent_response.text[:40]!r}, conversation={n})"


@dataclass(frozen=True, slots=True)
class TurnToken:
    """Tells a turn-token agent executor to answer what it has cached.

    ``emit_events`` decides whether it streams update events, unless the executor's
    own ``emit_update_events`` is set.
    """

    emit_events: bool | None = None

    def describe(self) -> str:
        return "turn token"


@dataclass(frozen=True, slots=True)
class AgentExecutorOptions:
    """How an ``AgentExecutor`` runs its agent and what it emits."""

    emit_update_events: bool | None = None
    """Stream the agent and yield each ``AgentResponseUpdate``; ``None`` follows the run (or the TurnToken)."""
    emit_response_events: bool | None = None
    """Yield the aggregated ``AgentResponse``; ``None`` yields it whenever updates were not yielded."""
    reassign_other_agents_as_users: bool = True
    """Hand assistant messages written by other agents to this agent as ``user`` messages."""
    forward_incoming_messages: bool = True
    """With turn tokens: pass arriving messages downstream at once, before this agent's reply."""
    wait_for_turn_token: bool = False
    """Cache messages until a ``TurnToken`` arrives (the turn-token pattern)."""


_Sends = Union[AgentExecutorResponse, list[Message], TurnToken]  # noqa: UP007
_Yields = Union[AgentResponse, AgentResponseUpdate]  # noqa: UP007
_Ctx = WorkflowContext[_Sends, _Yields]


@dataclass(slots=True)
class _Selection:
    kept: Sequence[Message]
    dropped: Sequence[Message] = field(default=())


class AgentExecutor(Executor):
    """Wraps an agent so it can take part in a workflow.

    ```python
    writer = AgentExecutor(agent, context_mode="last_agent")
    workflow = WorkflowBuilder(start_executor=planner).add_edge(planner, writer).build()
    ```

    Args:
        agent: anything that meets ``SupportsAgentRun``.
        session: shared with other executors when the same session is passed to them;
            by default the executor creates its own on first use.
        id: defaults to the agent's name; also the key for per-executor run arguments.
        context_mode: what to keep of an upstream ``AgentExecutorResponse``: ``"full"``
            (its whole conversation, the default), ``"last_agent"`` (only the upstream reply)
            or ``"custom"`` (``context_filter`` decides; the default when a filter is given).
        context_filter: ``list[Message] -> list[Message]``; required by ``"custom"``.
        options: ``AgentExecutorOptions``.
    """

    kind = "agent"

    def __init__(
        self,
        agent: SupportsAgentRun,
        *,
        session: AgentSession | None = None,
        id: str | None = None,
        context_mode: ContextMode | None = None,
        context_filter: ContextFilter | None = None,
        options: AgentExecutorOptions | None = None,
    ) -> None:
        name = getattr(agent, "name", None)
        if id is None and not name:
            raise ValueError(f"{type(agent).__name__} has no name: pass AgentExecutor(agent, id=...) to identify it")
        super().__init__(id or name)  # type: ignore[arg-type]
        self.agent = agent
        self.session = session
        self.options = options or AgentExecutorOptions()
        self._mode: ContextMode = "full"
        self._filter: ContextFilter | None = None
        self.set_context_mode(context_mode or ("custom" if context_filter is not None else "full"), context_filter)
        self._names = frozenset(n for n in (self.id, name) if n)
        self._cache = EMPTY
        self._conversation = EMPTY

    # -- context mode ---------------------------------------------------------------

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
            raise ValueError(
                f"executor {self.id!r}: unknown context_mode {mode!r}; use one of: {', '.join(CONTEXT_MODES)}"
            )
        if mode == "custom" and context_filter is None:
            raise ValueError(
                f"executor {self.id!r}: context_mode='custom' needs a context_filter, "
                "a function list[Message] -> list[Message]"
            )
        if context_filter is not None and mode != "custom":
            raise ValueError(
                f"executor {self.id!r}: a context_filter is only used with context_mode='custom', not {mode!r}; "
                "pass context_mode='custom' (or leave the mode out)"
            )
        if context_filter is not None and not callable(context_filter):
            raise TypeError(f"executor {self.id!r}: context_filter must be callable, got {context_filter!r}")
        self._mode, self._filter = mode, context_filter
        name = getattr(context_filter, "__name__", type(context_filter).__name__) if mode == "custom" else None
        self._mode_record = {"kind": self.kind, "context_mode": mode, "context_filter": name}

    @property
    def conversation(self) -> Conversation:
        """The full conversation after the agent's last answer (its input and its reply)."""
        return self._conversation

    @property
    def cache(self) -> Conversation:
        """Messages received since the agent last ran."""
        return self._cache

    def sent_types(self) -> tuple[Any, ...]:
        if self.options.wait_for_turn_token:
            return (list[Message], TurnToken)
        return (AgentExecutorResponse,)

    # -- handlers -------------------------------------------------------------------

    @handler
    async def on_request(self, request: AgentExecutorRequest, ctx: _Ctx) -> None:
        await self._arrive(_Selection(request.messages), ctx, respond=request.should_respond)

    @handler
    async def on_response(self, response: AgentExecutorResponse, ctx: _Ctx) -> None:
        await self._arrive(self._select(response), ctx, respond=True)

    @handler
    async def on_responses(self, responses: list[AgentExecutorResponse], ctx: _Ctx) -> None:
        """A fan-in: the responses of several agents, answered at once."""
        await self._arrive(self._select_many(responses), ctx, respond=True)

    @handler
    async def on_text(self, text: str, ctx: _Ctx) -> None:
        await self._arrive(_Selection((Message("user", text),)), ctx, respond=True)

    @handler
    async def on_message(self, message: Message, ctx: _Ctx) -> None:
        await self._arrive(_Selection((message,)), ctx, respond=True)

    @handler
    async def on_messages(self, messages: list[Union[str, Message]], ctx: _Ctx) -> None:  # noqa: UP007
        await self._arrive(_Selection(to_messages(messages)), ctx, respond=True)

    @handler
    async def on_turn_token(self, token: TurnToken, ctx: _Ctx) -> None:
        await self._take_turn(ctx, token)

    # -- the work -------------------------------------------------------------------

    def _select(self, response: AgentExecutorResponse) -> _Selection:
        """Apply the context mode to an upstream response."""
        reply = response.agent_response.messages
        full = response.full_conversation
        if full is None:
            full = Conversation(reply)
        if self._mode == "full":
            return _Selection(full)
        if self._mode == "last_agent":
            n, k = len(full), len(reply)
            if k <= n and all(full[n - k + i] is m for i, m in enumerate(reply)):
                return _Selection(reply, full.head(n - k))
            return _Selection(reply, _without(full, reply))
        return self._filtered(full.to_list())

    def _select_many(self, responses: list[AgentExecutorResponse]) -> _Selection:
        """Apply the context mode to a fan-in: each message once, in order of first appearance."""
        seen: dict[int, Message] = {}
        for r in responses:
            for m in r.full_conversation if r.full_conversation is not None else r.agent_response.messages:
                seen.setdefault(id(m), m)
        everything = list(seen.values())
        if self._mode == "full":
            return _Selection(everything)
        if self._mode == "last_agent":
            replies = [m for r in responses for m in r.agent_response.messages]
            return _Selection(replies, _without(everything, replies))
        return self._filtered(everything)

    def _filtered(self, everything: list[Message]) -> _Selection:
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
        return _Selection(tuple(kept), _without(everything, kept))

    async def _arrive(self, selection: _Selection, ctx: _Ctx, *, respond: bool) -> None:
        ctx.record_context(self._mode_record, kept=selection.kept, dropped=selection.dropped)
        self._cache = self._cache.extend(selection.kept, validate=False)  # every handler made Messages
        if self.options.wait_for_turn_token:
            if self.options.forward_incoming_messages and selection.kept:
                await ctx.send_message(list(selection.kept))
        elif respond:
            await self._take_turn(ctx, None)

    def _streams(self, ctx: _Ctx, token: TurnToken | None) -> bool:
        if self.options.emit_update_events is not None:
            return self.options.emit_update_events
        if token is not None and token.emit_events is not None:
            return token.emit_events
        return ctx.is_streaming()

    async def _take_turn(self, ctx: _Ctx, token: TurnToken | None) -> None:
        cache = self._cache
        if not cache:
            why = "a turn token came" if token is not None else "it was asked to answer"
            raise ValueError(
                f"executor {self.id!r} has nothing to answer: {why}, but no message arrived since its last turn; "
                "send messages first (an empty list is no input)"
            )
        reassign = self.options.reassign_other_agents_as_users
        given = tuple(cache.as_input_for(self._names) if reassign else cache.to_list())
        ctx.record_context(self._mode_record, given=given, cached=cache)
        if self.session is None:
            self.session = self.agent.create_session()
        streams = self._streams(ctx, token)
        response = await self._run_agent(list(given), ctx, streams)
        ctx.record_context(response=response)
        emit = self.options.emit_response_events
        if emit or (emit is None and not streams):
            await ctx.yield_output(response)
        conversation = cache.extend(response.messages, validate=False)  # AgentResponse validated them
        self._conversation, self._cache = conversation, EMPTY
        if self.options.wait_for_turn_token:
            await ctx.send_message(list(response.messages))
            await ctx.send_message(TurnToken(token.emit_events if token else None))
        else:
            await ctx.send_message(AgentExecutorResponse(self.id, response, conversation))

    async def _run_agent(self, given: list[Message], ctx: _Ctx, streams: bool) -> AgentResponse:
        kwargs: dict[str, Any] = {}
        if client_kwargs := ctx.client_kwargs:
            kwargs["client_kwargs"] = client_kwargs
        if fi_kwargs := ctx.function_invocation_kwargs:
            kwargs["function_invocation_kwargs"] = fi_kwargs
        result = self.agent.run(given, session=self.session, stream=streams, **kwargs)
        if not streams:
            response = result if isinstance(result, AgentResponse) else await result
            if not isinstance(response, AgentResponse):
                raise TypeError(
                    f"agent {self.id!r} returned {type(response).__name__} from run(); it must return an AgentResponse"
                )
            return response
        if not isinstance(result, AsyncIterable):
            result = await result  # an 'async def run' that returns the stream
        if not isinstance(result, AsyncIterable):
            raise TypeError(
                f"agent {self.id!r}: run(stream=True) must return an async iterable of AgentResponseUpdate, "
                f"got {type(result).__name__}"
            )
        updates = []
        async for update in result:
            updates.append(update)
            await ctx.yield_output(update)
        return AgentResponse.from_updates(updates)

    # -- state between runs ---------------------------------------------------------

    def snapshot_state(self) -> dict[str, Any]:
        session = self.session
        return {
            "cache": self._cache,
            "conversation": self._conversation,
            "session": session,
            "session_state": None if session is None else dict(session.state),
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Back to a snapshot; the session's top-level state keys too (values are not deep-copied)."""
        self._cache = state["cache"]
        self._conversation = state["conversation"]
        self.session = state["session"]
        if self.session is not None and self.session.state != state["session_state"]:
            self.session.state.clear()
            self.session.state.update(state["session_state"])

    def reset(self) -> None:
        """Forget the cache and the conversation (the session is kept)."""
        self._cache = self._conversation = EMPTY

    def __repr__(self) -> str:
        return f"AgentExecutor(id={self.id!r}, context_mode={self._mode!r})"


def _without(messages: Iterable[Message], removed: Iterable[Message]) -> list[Message]:
    """``messages`` minus the ``removed`` objects (by identity: equal messages may be distinct turns)."""
    gone = {id(m) for m in removed}
    return [m for m in messages if id(m) not in gone]
