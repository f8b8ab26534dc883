"""``AgentExecutor``: an agent as a node of a workflow graph.

It caches what arrives, applies its context mode to upstream responses, runs the agent
(streaming or not), emits outputs, sends an ``AgentExecutorResponse`` downstream, and
clears its cache so each call only processes what arrived since the last one.

With ``AgentExecutorOptions(wait_for_turn_token=True)`` it follows the turn-token
pattern instead: messages are cached (and, with ``forward_incoming_messages``, passed
on at once) until a ``TurnToken`` arrives; after its turn it sends its reply messages
and a new ``TurnToken`` downstream.

When its agent asks for input (a tool call waiting for approval), the executor waits:
each request becomes a pending request of the run (``ctx.request_info``), or, with
``intercept_user_input_requests``, a ``UserInputRequestContent`` sent downstream. Once
every answer is in, the agent goes on from where it stopped, and its answer is the whole turn,
as if it had never waited: the calls it made before, their results, and what it said after.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Union

from ..agents import SupportsAgentRun
from ..agents.requests import recording
from ..agents.turn import stray_note, unanswered_calls
from ..conversation import EMPTY, Conversation
from ..errors import bad_argument
from ..messages import (
    AgentResponse,
    AgentResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    UserInputRequestContent,
    UserInputResponseContent,
    to_messages,
)
from ..sessions import AgentSession
from .context_modes import CONTEXT_MODES, ContextFilter, ContextMode, ReadsContext, Selection
from .executor import Executor, WorkflowContext, handler
from .requests import RequestResponse

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


@dataclass(frozen=True, slots=True)
class AgentExecutorRequest:
    """The canonical input: messages, and whether the agent should answer now.

    ``should_respond=False`` only caches the messages, to preload context.
    """

    messages: tuple[Message, ...]
    should_respond: bool = True

    def __init__(self, messages: str | Message | Iterable[str | Message], should_respond: bool = True) -> None:
        object.__setattr__(self, "messages", tuple(to_messages(messages, where="AgentExecutorRequest")))
        object.__setattr__(self, "should_respond", bool(should_respond))

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
        if full is not None and full.__class__ is not Conversation and not isinstance(full, Conversation):
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
    intercept_user_input_requests: bool = False
    """Send the agent's requests for input (tool approvals) downstream as ``UserInputRequestContent``
    messages, for an executor that answers with ``UserInputResponseContent``; by default they
    become pending requests of the run, answered with ``run(responses=...)``."""
    intercept_unterminated_function_calls: bool = False
    """Send tool calls the agent leaves unanswered (it has no such tool) downstream as
    ``FunctionCallContent`` messages, for an executor that answers with ``FunctionResultContent``."""


_Sends = Union[AgentExecutorResponse, list[Message], TurnToken, UserInputRequestContent, FunctionCallContent]  # noqa: UP007
_Yields = Union[AgentResponse, AgentResponseUpdate]  # noqa: UP007
_Ctx = WorkflowContext[_Sends, _Yields]


class AgentExecutor(ReadsContext, Executor):
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
        if not callable(getattr(agent, "run", None)) or not callable(getattr(agent, "create_session", None)):
            raise bad_argument(
                "AgentExecutor", "agent", agent, "give an agent: run() and create_session(), as ChatAgent"
            )
        if id is not None and (not isinstance(id, str) or not id):
            raise bad_argument(
                "AgentExecutor", "id", id, "give a non-empty str, or leave it out to use the agent's name"
            )
        if id is None and not name:
            raise ValueError(f"{type(agent).__name__} has no name: pass AgentExecutor(agent, id=...) to identify it")
        super().__init__(id or name)  # type: ignore[arg-type]
        where = f"AgentExecutor {self.id!r}"
        if session is not None and not isinstance(session, AgentSession):
            raise bad_argument(where, "session", session, "give an AgentSession (agent.create_session()), or None")
        if options is not None and not isinstance(options, AgentExecutorOptions):
            raise bad_argument(
                where, "options", options, "give AgentExecutorOptions(...), not a dict: AgentExecutorOptions(**options)"
            )
        self.agent = agent
        self.session = session
        self.options = options or AgentExecutorOptions()
        self._mode: ContextMode = "full"
        self._filter: ContextFilter | None = None
        self.set_context_mode(context_mode or ("custom" if context_filter is not None else "full"), context_filter)
        self._names = frozenset(n for n in (self.id, name) if n)
        self._cache = EMPTY
        self._conversation = EMPTY
        self._awaiting: dict[str, UserInputRequestContent | FunctionCallContent] = {}
        """What the agent asked and is waiting on, by request id (or call id)."""
        self._answers: dict[str, UserInputResponseContent | FunctionResultContent] = {}
        self._held: tuple[Conversation, Conversation] | None = None
        """A turn that waits for answers: what it was given, and what it said so far (with the results given)."""

    @property
    def waiting_on(self) -> tuple[str, ...]:
        """The ids of the requests (or tool calls) whose answers the agent waits for."""
        return tuple(k for k in self._awaiting if k not in self._answers)

    @property
    def conversation(self) -> Conversation:
        """The full conversation after the agent's last answer (its input and its reply)."""
        return self._conversation

    @property
    def cache(self) -> Conversation:
        """Messages received since the agent last ran."""
        return self._cache

    def sent_types(self) -> tuple[Any, ...]:
        out: tuple[Any, ...] = (
            (list[Message], TurnToken) if self.options.wait_for_turn_token else (AgentExecutorResponse,)
        )
        if self.options.intercept_user_input_requests:
            out += (UserInputRequestContent,)
        if self.options.intercept_unterminated_function_calls:
            out += (FunctionCallContent,)
        return out

    # -- handlers -------------------------------------------------------------------

    @handler
    async def on_request(self, request: AgentExecutorRequest, ctx: _Ctx) -> None:
        if self._arrive(Selection(request.messages), ctx, respond=request.should_respond):
            await self._take_turn(ctx, None)

    @handler
    async def on_response(self, response: AgentExecutorResponse, ctx: _Ctx) -> None:
        if self._arrive(self._select(response), ctx, respond=True, sources=(response.executor_id,)):
            await self._take_turn(ctx, None)

    @handler
    async def on_responses(self, responses: list[AgentExecutorResponse], ctx: _Ctx) -> None:
        """A fan-in: the responses of several agents, answered at once."""
        sources = tuple(r.executor_id for r in responses)
        if self._arrive(self._select_many(responses), ctx, respond=True, sources=sources):
            await self._take_turn(ctx, None)

    @handler
    async def on_text(self, text: str, ctx: _Ctx) -> None:
        if self._arrive(Selection((Message("user", text),)), ctx, respond=True):
            await self._take_turn(ctx, None)

    @handler
    async def on_message(self, message: Message, ctx: _Ctx) -> None:
        if self._arrive(Selection((message,)), ctx, respond=True):
            await self._take_turn(ctx, None)

    @handler
    async def on_messages(self, messages: list[Union[str, Message]], ctx: _Ctx) -> None:  # noqa: UP007
        if self._arrive(Selection(to_messages(messages)), ctx, respond=True):
            await self._take_turn(ctx, None)

    @handler
    async def on_turn_token(self, token: TurnToken, ctx: _Ctx) -> None:
        await self._take_turn(ctx, token)

    @handler
    async def on_request_response(self, answer: RequestResponse, ctx: _Ctx) -> None:
        """The answer to a pending request of the run (``run(responses=...)``)."""
        asked = self._asked(answer.request_id)
        value = answer.value
        if isinstance(asked, UserInputRequestContent):
            rid = asked.request_id
            reply = (
                UserInputResponseContent(request_id=rid, approved=bool(value))
                if asked.function_call is not None
                else UserInputResponseContent(request_id=rid, text=str(value))
            )
            await self._answered(answer.request_id, reply, ctx)
        else:
            await self._answered(answer.request_id, FunctionResultContent(call_id=asked.call_id, result=value), ctx)

    @handler
    async def on_user_input_response(self, reply: UserInputResponseContent, ctx: _Ctx) -> None:
        """An intercepted request answered by another executor."""
        self._asked(reply.request_id)
        await self._answered(reply.request_id, reply, ctx)

    @handler
    async def on_function_result(self, result: FunctionResultContent, ctx: _Ctx) -> None:
        """An intercepted tool call answered by another executor."""
        self._asked(result.call_id)
        await self._answered(result.call_id, result, ctx)

    # -- the work -------------------------------------------------------------------

    def _arrive(self, selection: Selection, ctx: _Ctx, *, respond: bool, sources: tuple[str, ...] = ()) -> bool:
        """Keep what arrived (as the context mode selected it); whether the agent answers now (``_take_turn``)."""
        record = ctx._record  # written directly: these are the record's own fields
        self._record_mode(record)
        record.kept, record.dropped = selection.kept, selection.dropped
        self._cache = self._cache.extend(selection.kept, validate=False)  # every handler made Messages
        if self.options.wait_for_turn_token:
            if self.options.forward_incoming_messages and selection.kept:
                ctx._send(list(selection.kept))
            return False
        if respond and not self._cache:
            raise ValueError(f"executor {self.id!r} has nothing to answer: {self._why_empty(selection, sources)}")
        return respond

    def _streams(self, ctx: _Ctx, token: TurnToken | None) -> bool:
        if self.options.emit_update_events is not None:
            return self.options.emit_update_events
        if token is not None and token.emit_events is not None:
            return token.emit_events
        return ctx.is_streaming()

    def _asked(self, key: str) -> UserInputRequestContent | FunctionCallContent:
        asked = self._awaiting.get(key)
        if asked is None:
            waiting = ", ".join(self.waiting_on) or "nothing"
            raise ValueError(
                f"executor {self.id!r} got an answer to {key!r}, which it did not ask (it waits on: {waiting}); "
                "answer with the request_id (or call_id) the request carried"
            )
        return asked

    async def _answered(self, key: str, reply: Any, ctx: _Ctx) -> None:
        """Keep an answer; once all are in, the agent goes on from its paused turn."""
        self._answers[key] = reply
        ctx.record_context(self._mode_record, kept=(), cached=self._cache)
        if self.waiting_on:
            return
        answers = list(self._answers.values())
        self._awaiting, self._answers = {}, {}
        results = [a for a in answers if isinstance(a, FunctionResultContent)]
        replies = [a for a in answers if isinstance(a, UserInputResponseContent)]
        messages = ([Message("tool", results)] if results else []) + ([Message("user", replies)] if replies else [])
        if self._held is not None and results:  # results given from outside are part of the turn, as its own are
            given, said = self._held
            self._held = (given, said.extend(messages[:1], validate=False))
        paused = self._conversation
        if getattr(self.agent, "history", None) is None:  # it remembers nothing: hand it its paused turn again
            self._cache = paused.extend(messages, validate=False)
        else:
            self._cache = Conversation(messages)
        await self._take_turn(ctx, None)

    async def _take_turn(self, ctx: _Ctx, token: TurnToken | None) -> None:
        cache, held = self._cache, self._held
        if not cache:
            why = "a turn token came" if token is not None else "it was asked to answer"
            raise ValueError(
                f"executor {self.id!r} has nothing to answer: {why}, but no message arrived since its last turn; "
                "send messages first (an empty list is no input)"
            )
        options = self.options
        listed = cache.as_input_for(self._names) if options.reassign_other_agents_as_users else cache.to_list()
        given = tuple(listed)
        record = ctx._record  # what the trace keeps of this invocation, written here directly (once per turn)
        self._record_mode(record)
        record.given, record.cached = given, cache
        if self.session is None:
            self.session = self.agent.create_session()
        streams = self._streams(ctx, token)
        with recording() as sent:
            try:
                result = self._run_agent(listed, ctx, streams)  # the list is its own: nothing else holds it
                if streams:
                    response = await result  # read update by update
                else:
                    response = self._answered_with(result if isinstance(result, AgentResponse) else await result)
            finally:  # what reached the model is shown when it failed too
                record.model_requests = tuple(sent)
        record.response = response  # what the agent answered in this invocation, to these requests
        # the turn went on after its answers: it answers whole, as if it had never waited
        answer = response if held is None else _whole(held[1], response)
        requests: Sequence[UserInputRequestContent] = ()
        calls: Sequence[FunctionCallContent] = ()
        stray: Sequence[FunctionCallContent] = ()
        if not _only_text(response.messages):  # most answers hold only text: nothing asked, no call left over
            requests, calls = self._asks(response)
            stray = [] if requests or calls else unanswered_calls(response.messages, everywhere=True)  # else: asked
        if stray:
            noted = stray_note([c.name for c in stray], self.agent.name or "")
            if noted not in response.repairs:  # an agent of another kind, which notes nothing: say it here
                tools = ", ".join(repr(name) for name in dict.fromkeys(c.name for c in stray))
                noted = (
                    f"the model called {tools}, which agent {self.agent.name!r} does not have; the calls were not "
                    "run and its answer has no text for them"
                )
            ctx.warn(  # the views show the agent's note once, inside this warning
                f"executor {self.id!r}: {noted}. Give the agent those tools (ChatAgent(tools=[...])), tell the "
                "model not to call them, or set AgentExecutorOptions(intercept_unterminated_function_calls=True) "
                "to send them to another executor"
            )
        emit = options.emit_response_events
        if (emit or (emit is None and not streams)) and not (requests or calls):
            ctx._output(answer)  # an agent that waits is a request (its event), not an answer yet
        start = cache if held is None else held[0]  # what the turn was given, before it waited if it did
        conversation = start.extend(answer.messages, validate=False)  # validated by AgentResponse
        self._conversation, self._cache, self._held = conversation, EMPTY, None
        if (requests or calls) and await self._pause(requests, calls, ctx):
            self._held = (start, Conversation(answer.messages))
            return
        if options.wait_for_turn_token:
            ctx._send(list(answer.messages))
            ctx._send(TurnToken(token.emit_events if token else None))
        else:
            ctx._send(AgentExecutorResponse(self.id, answer, conversation))

    def _asks(self, response: AgentResponse) -> tuple[Sequence[UserInputRequestContent], Sequence[FunctionCallContent]]:
        """What the answer waits on: requests for a person, and tool calls handed on to run elsewhere."""
        requests = [c for m in response.messages for c in m.contents if isinstance(c, UserInputRequestContent)]
        calls: list[FunctionCallContent] = []
        if self.options.intercept_unterminated_function_calls:
            asked = {c.function_call.call_id for c in requests if c.function_call is not None}
            calls = [c for c in unanswered_calls(response.messages, everywhere=True) if c.call_id not in asked]
        return requests, calls

    async def _pause(
        self, requests: Sequence[UserInputRequestContent], calls: Sequence[FunctionCallContent], ctx: _Ctx
    ) -> bool:
        """Ask for what the agent waits on; whether it waits (then nothing is sent on yet)."""
        if not requests and not calls:
            return False
        for request in requests:
            if self.options.intercept_user_input_requests:
                self._awaiting[request.request_id] = request
                await ctx.send_message(request)
            else:
                kind = bool if request.function_call is not None else str
                self._awaiting[ctx.request_info(request, kind)] = request
        for call in calls:
            self._awaiting[call.call_id] = call
            await ctx.send_message(call)
        return True

    def _run_agent(self, given: list[Message], ctx: _Ctx, streams: bool) -> Any:
        """What the agent's ``run`` returned (an answer, or an awaitable of one), or, streaming, a reader of it."""
        kwargs: dict[str, Any] = {}
        if ctx._run.has_kwargs:  # most runs give none
            if client_kwargs := ctx.client_kwargs:
                kwargs["client_kwargs"] = client_kwargs
            if fi_kwargs := ctx.function_invocation_kwargs:
                kwargs["function_invocation_kwargs"] = fi_kwargs
        result = self.agent.run(given, session=self.session, stream=streams, **kwargs)
        return self._read(result, ctx) if streams else result

    def _answered_with(self, response: Any) -> AgentResponse:
        if not isinstance(response, AgentResponse):
            raise TypeError(
                f"agent {self.id!r} returned {type(response).__name__} from run(); it must return an AgentResponse"
            )
        return response

    async def _read(self, result: Any, ctx: _Ctx) -> AgentResponse:
        """A streamed answer, each update yielded as it comes; the answer is their aggregate."""
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
            shown = [c for c in update.contents if not isinstance(c, UserInputRequestContent)]
            if len(shown) == len(update.contents):
                ctx._output(update)
            elif shown:  # a request for a person is its own event (request_info), not a piece of the answer
                ctx._output(update.model_copy(update={"contents": shown}))
        return AgentResponse.from_updates(updates)

    # -- state between runs ---------------------------------------------------------

    def snapshot_state(self) -> dict[str, Any]:
        session = self.session
        return {
            "cache": self._cache,
            "conversation": self._conversation,
            "session": session,
            "session_state": None if session is None else dict(session.state),
            "awaiting": dict(self._awaiting),
            "answers": dict(self._answers),
            "held": None if self._held is None else list(self._held),
        }

    def checkpoint_state(self) -> dict[str, Any]:
        """The snapshot without the copy of the session's state: a checkpoint stores the session itself."""
        state = self.snapshot_state()
        del state["session_state"]
        return state

    def restore_state(self, state: dict[str, Any]) -> None:
        """Back to a snapshot; the session's top-level state keys too (values are not deep-copied)."""
        self._cache = state["cache"]
        self._conversation = state["conversation"]
        self.session = state["session"]
        self._awaiting = dict(state.get("awaiting", {}))
        self._answers = dict(state.get("answers", {}))
        held = state.get("held")
        self._held = None if held is None else (_conversation(held[0]), _conversation(held[1]))
        if self.session is not None and "session_state" in state and self.session.state != state["session_state"]:
            self.session.state.clear()
            self.session.state.update(state["session_state"])

    def reset(self) -> None:
        """Forget the cache, the conversation and what it waits on (the session is kept)."""
        self._cache = self._conversation = EMPTY
        self._awaiting, self._answers, self._held = {}, {}, None

    def __repr__(self) -> str:
        return f"AgentExecutor(id={self.id!r}, context_mode={self._mode!r})"


def _only_text(messages: Sequence[Message]) -> bool:
    """Whether the messages hold texts only (so no request, and no tool call, to look for)."""
    for message in messages:
        for content in message.contents:
            if content.type != "text":
                return False
    return True


def _whole(said: Sequence[Message], response: AgentResponse) -> AgentResponse:
    """A turn that waited for answers, whole: what it said before (its requests left out), then what it said after.

    A run without approvals answers with the call, its result and the text; so does this one, and
    the conversation it sends on (a group chat's transcript) holds the call before its result.
    """
    before = []
    for m in said:
        kept = [c for c in m.contents if not isinstance(c, UserInputRequestContent)]
        if len(kept) == len(m.contents):
            before.append(m)
        elif kept:
            before.append(m.model_copy(update={"contents": tuple(kept)}))
    if not before:
        return response
    return response.model_copy(update={"messages": (*before, *response.messages)})


def _conversation(messages: Any) -> Conversation:
    return (
        messages if messages.__class__ is Conversation or isinstance(messages, Conversation) else Conversation(messages)
    )
