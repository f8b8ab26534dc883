"""Workflows inside workflows: ``WorkflowExecutor`` (a node of a parent graph) and ``WorkflowAgent``.

A sub-workflow runs whole inside one invocation of its node; the node's snapshot keeps the
sub-workflow's own trace (``snapshot.inner``), so the parent's report and run view open it.
Its answer goes downstream as an agent's would (an ``AgentExecutorResponse`` carrying the
conversation it was given and its answer), so the next agent reads it through its context mode.

``workflow.as_agent(name=...)`` makes the same workflow usable where an agent is: a
``ChatAgent``'s place in another workflow (there it runs as a ``WorkflowExecutor``, in every
builder: ``node_for``), the ``Playground`` and an experiment (both run the workflow itself, its
agents one by one). Like an agent's node, the sub-workflow's node reads what other agents
answered through its context mode (``full``, ``last_agent``, ``custom`` with a filter).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..agents import SupportsAgentRun
from ..conversation import Conversation
from ..errors import UsageError
from ..messages import AgentResponse, AgentResponseUpdate, Message, to_messages
from ..sessions import AgentSession
from .agent_executor import AgentExecutor, AgentExecutorResponse
from .context_modes import ContextFilter, ContextMode, ReadsContext, Selection
from .executor import WorkflowContext, handler
from .handed import TakesTheInput
from .requests import PendingRequest, RequestResponse

if TYPE_CHECKING:
    from .result import RunResult
    from .workflow import Workflow

__all__ = ["WorkflowAgent", "WorkflowExecutor", "node_for"]


def _answer(result: RunResult, name: str) -> AgentResponse:
    """What a sub-workflow answered: its outputs' messages (an agent's own), or its text, as ``name``'s reply."""
    messages: list[Message] = []
    for value in result.get_outputs():
        if isinstance(value, AgentResponse):
            messages.extend(value.messages)
    if not messages and result.text:
        messages = [Message("assistant", result.text, author_name=name)]
    return AgentResponse(messages)


def _waiting(result: RunResult, name: str) -> UsageError:
    ids = ", ".join(r.request_id for r in result.pending_requests)
    return UsageError(
        f"the sub-workflow {name!r} stopped to wait for answers to requests ({ids}); an agent cannot wait: "
        "use the workflow as a node (WorkflowExecutor) of its parent, which passes the requests on, or run it "
        "on its own to answer them"
    )


class WorkflowExecutor(TakesTheInput, ReadsContext):
    """Runs a whole workflow for each message it receives; its snapshot holds that run's trace.

    What another agent answered reaches the sub-workflow through this node's context mode, as it
    would reach an agent (``context_mode``, ``context_filter``: see ``AgentExecutor``); a text or
    messages given directly are taken whole. A request the sub-workflow makes (an approval, say)
    becomes a request of the parent's run; once every one is answered, the sub-workflow goes on
    with the answers.
    """

    kind = "workflow"

    def __init__(
        self,
        workflow: Workflow,
        *,
        id: str | None = None,
        context_mode: ContextMode | None = None,
        context_filter: ContextFilter | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__(id or workflow.name)
        self.workflow = workflow
        self.description = description if description is not None else workflow.description
        self.set_context_mode(context_mode or ("custom" if context_filter is not None else "full"), context_filter)
        self._asked: dict[str, str] = {}
        """The parent's request id -> the sub-workflow's, for the requests it waits on."""
        self._answers: dict[str, Any] = {}
        self._given: tuple[Message, ...] = ()

    @handler
    async def on_response(
        self, response: AgentExecutorResponse, ctx: WorkflowContext[AgentExecutorResponse, Any]
    ) -> None:
        await self._read(self._select(response), ctx, (response.executor_id,))

    @handler
    async def on_responses(
        self, responses: list[AgentExecutorResponse], ctx: WorkflowContext[AgentExecutorResponse, Any]
    ) -> None:
        """A fan-in: the answers of several agents, read at once."""
        await self._read(self._select_many(responses), ctx, tuple(r.executor_id for r in responses))

    async def _read(self, selection: Selection, ctx: WorkflowContext[Any, Any], sources: tuple[str, ...]) -> None:
        if not selection.kept:
            raise ValueError(f"executor {self.id!r} has nothing to run on: {self._why_empty(selection, sources)}")
        ctx.record_context(self._mode_record, kept=selection.kept, dropped=selection.dropped)
        await self._start(list(selection.kept), ctx)

    @handler
    async def on_answer(self, answer: RequestResponse, ctx: WorkflowContext[AgentExecutorResponse, Any]) -> None:
        """An answer to a request the sub-workflow made; with the last one, it goes on."""
        inner = self._asked.pop(answer.request_id, None)
        if inner is None or inner not in self.workflow._pending:
            raise UsageError(
                f"executor {self.id!r} got an answer to {answer.request_id!r}, which its sub-workflow "
                f"{self.workflow.name!r} does not wait on (it waits on: {', '.join(self._asked) or 'nothing'})"
            )
        self._answers[inner] = answer.value
        if self._asked:
            return
        answers, self._answers = self._answers, {}
        await self._finish(await self.workflow.run(responses=answers), ctx)

    async def take(self, messages: list[Message], ctx: WorkflowContext[Any, Any]) -> None:
        ctx.record_context(self._mode_record, kept=messages)
        await self._start(messages, ctx)

    async def _start(self, messages: list[Message], ctx: WorkflowContext[Any, Any]) -> None:
        self._given = tuple(messages)
        await self._finish(await self.workflow.run(messages), ctx)

    async def _finish(self, result: RunResult, ctx: WorkflowContext[Any, Any]) -> None:
        ctx.record_context(inner=result.trace)
        if result.status == "waiting":  # its requests become the parent run's
            for request in result.pending_requests:
                self._asked[ctx.request_info(request.data, request.response_type)] = request.request_id
            return
        answer = _answer(result, self.id)
        for value in result.get_outputs():
            await ctx.yield_output(value)
        conversation = Conversation(list(self._given)).extend(answer.messages, validate=False)
        await ctx.send_message(AgentExecutorResponse(self.id, answer, conversation))

    def snapshot_state(self) -> dict[str, Any]:
        inner = self.workflow
        return {
            "executors": {eid: ex.snapshot_state() for eid, ex in inner.executors.items()},
            "waiting": (inner._pending, inner._fan_in_waiting, inner._request_seq, inner._pending_kwargs),
            "asked": dict(self._asked),
            "answers": dict(self._answers),
            "given": self._given,
        }

    def checkpoint_state(self) -> dict[str, Any]:
        """The sub-workflow's executors and what it waits on, in a form a checkpoint stores.

        Its pending requests keep their data (encoded as any state is) and the type of answer each
        expects (by name), so a checkpoint resumed in another process answers them there too.
        """
        from .checkpoints.checkpointer import type_to_json

        state = self.snapshot_state()
        pending, fan_in, seq, _ = state.pop("waiting")  # the run's keywords are never stored
        state["executors"] = {eid: ex.checkpoint_state() for eid, ex in self.workflow.executors.items()}
        state["pending"] = [
            [p.request_id, p.executor_id, p.data, type_to_json(p.response_type, p.request_id)] for p in pending.values()
        ]
        state["fan_in"] = [[index, buffer] for index, buffer in fan_in.items()]
        state["request_seq"] = seq
        return state

    def restore_state(self, state: dict[str, Any]) -> None:
        for executor_id, saved in state.get("executors", {}).items():
            self.workflow.executors[executor_id].restore_state(saved)
        inner = self.workflow
        if "waiting" in state:
            inner._pending, inner._fan_in_waiting, inner._request_seq, inner._pending_kwargs = state["waiting"]
        elif "pending" in state:  # from a checkpoint
            from .checkpoints.checkpointer import type_from_json
            from .checkpoints.decoder import known_types

            where, types = f"executor {self.id!r}: its sub-workflow {inner.name!r}", known_types(inner)
            inner._pending = {
                rid: PendingRequest(rid, eid, data, type_from_json(kind, where, types))
                for rid, eid, data, kind in state["pending"]
            }
            inner._fan_in_waiting = {int(index): dict(buffer) for index, buffer in state.get("fan_in", ())}
            inner._request_seq, inner._pending_kwargs = int(state.get("request_seq", 0)), {}
        self._asked, self._answers = dict(state.get("asked", {})), dict(state.get("answers", {}))
        self._given = tuple(state.get("given", ()))

    def reset(self) -> None:
        self.workflow.reset()
        self._asked, self._answers, self._given = {}, {}, ()


def node_for(
    agent: SupportsAgentRun, *, context_mode: ContextMode | None = None, context_filter: ContextFilter | None = None
) -> AgentExecutor | WorkflowExecutor:
    """An agent's node in a graph, as every builder makes it.

    An ``AgentExecutor``, or for a workflow used as an agent (``as_agent``) its ``WorkflowExecutor``,
    so the sub-workflow's run nests (its trace, its box in the graph, its requests). Either reads
    other agents' answers through ``context_mode`` (and ``context_filter``).
    """
    if isinstance(agent, WorkflowAgent):
        return WorkflowExecutor(
            agent.workflow,
            id=agent.name,
            context_mode=context_mode,
            context_filter=context_filter,
            description=agent.description,
        )
    return AgentExecutor(agent, context_mode=context_mode, context_filter=context_filter)


class WorkflowAgent:
    """A workflow used as an agent: each run is a run of the workflow on the messages given.

    Its answer is the workflow's output messages (or its text, as this agent's reply); the last
    run's result, trace included, is ``last_result``. Inside another workflow it runs as a
    ``WorkflowExecutor``, so the parent's trace holds the sub-workflow's.
    """

    def __init__(self, workflow: Workflow, *, name: str | None = None, description: str | None = None) -> None:
        self.workflow = workflow
        self.name = name or workflow.name
        self.description = description
        self.last_result: RunResult | None = None

    def create_session(self) -> AgentSession:
        return AgentSession()

    def run(self, messages: Any = None, *, session: AgentSession | None = None, stream: bool = False) -> Any:
        given = to_messages(messages if messages is not None else [], where=f"agent {self.name!r}")
        if stream:
            return self._stream(given)
        return self._respond(given)

    async def _respond(self, messages: list[Message]) -> AgentResponse:
        result = await self.workflow.run(messages)
        self.last_result = result
        if result.status == "waiting":
            raise _waiting(result, self.name)
        return _answer(result, self.name)

    async def _stream(self, messages: list[Message]) -> AsyncIterator[AgentResponseUpdate]:
        stream = self.workflow.run(messages, stream=True)
        async for event in stream:
            data = getattr(event, "data", None)
            if event.type == "output" and isinstance(data, AgentResponseUpdate):
                yield data
        result = stream.result
        self.last_result = result
        if result is not None and result.status == "waiting":
            raise _waiting(result, self.name)
        if result is not None and not any(isinstance(v, AgentResponseUpdate) for v in result.get_outputs()):
            for m in _answer(result, self.name).messages:  # a workflow whose outputs are not streamed words
                yield AgentResponseUpdate(m.contents, role=m.role, author_name=m.author_name)

    def __repr__(self) -> str:
        return f"WorkflowAgent({self.name!r}, workflow={self.workflow.name!r})"
