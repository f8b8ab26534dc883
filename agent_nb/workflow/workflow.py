"""``Workflow``: a built graph of executors, and the ways to run it."""

from __future__ import annotations

import weakref
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from ..errors import (
    InputTypeError,
    RequestError,
    UsageError,
    WorkflowBusyError,
    WorkflowValidationError,
    bad_argument,
    did_you_mean,
)
from ..rendering import Displayable, render
from ..sync import run_sync
from .answers import answered_again
from .edges import Edge, EdgeGroup
from .executor import Executor
from .requests import PendingRequest, RequestResponse
from .result import RunResult
from .runner import _Run
from .stream import WorkflowRunStream

if TYPE_CHECKING:
    import asyncio

    from .checkpoints.checkpointer import Checkpointer
    from .checkpoints.storage import CheckpointStorage
    from .nested import WorkflowAgent

__all__ = ["Workflow", "WorkflowRunStream"]


class Workflow(Displayable):
    """A validated graph of executors, made by ``WorkflowBuilder.build()``.

    Executors keep their state between runs (an agent executor its conversation and
    session), so one workflow holds one conversation; it runs one run at a time.
    """

    def __init__(
        self,
        *,
        name: str,
        executors: dict[str, Executor],
        start_executor_id: str,
        groups: tuple[EdgeGroup, ...],
        max_supersteps: int,
        output_from: frozenset[str] | None,
        description: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.executors = executors
        self.start_executor_id = start_executor_id
        self.groups = groups
        self.edges: tuple[Edge, ...] = tuple(e for g in groups for e in g.edges())
        self.max_supersteps = max_supersteps
        self.output_from = output_from
        self.routes: dict[str, tuple[EdgeGroup, ...]] = {
            eid: tuple(g for g in groups if eid in g.sources) for eid in executors
        }
        self.fan_in_groups = tuple(g for g in groups if g.kind == "fan_in")
        self.checkpoint_storage = checkpoint_storage
        """Where every run takes its checkpoints (``run(checkpoint_storage=...)`` overrides it)."""
        self._checkpointers: dict[int, Checkpointer] = {}
        self._pending: dict[str, PendingRequest] = {}
        self._pending_kwargs: Mapping[str, dict[str, dict[str, Any]]] = {}
        """The run kwargs of the run that left requests pending: the answers' run gets them too (memory only)."""
        self._request_seq = 0
        self._fan_in_waiting: dict[int, dict[str, list[Any]]] = {}
        """What the fan-ins had gathered when the last run stopped to wait for answers (memory only)."""
        self._waiting_at: tuple[str, CheckpointStorage] | None = None
        """The checkpoint the pending requests wait in, and its storage (``None`` without one)."""
        self._answered: dict[str, dict[str, str]] = {}
        """Requests answered by this workflow's runs: request id -> when and by whom."""
        self._holder: weakref.ref[Any] | None = None
        """The run (or open stream) that has the workflow now; weak, so a dropped stream lets go of it."""
        self._abandoned: set[asyncio.Task[Any]] = set()
        """Runs of streams left early, still rolling back: a new run waits for them."""
        self._take(executors)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled idle (an experiment sent to a cluster): without its run, its checkpointers and what waits."""
        if self._holder is not None and self._holder() is not None:
            raise UsageError(f"workflow {self.name!r} is running: it can be pickled only between runs")
        state = dict(self.__dict__)
        state.update(_holder=None, _abandoned=set(), _checkpointers={})
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._take(self.executors)

    @property
    def start_executor(self) -> Executor:
        return self.executors[self.start_executor_id]

    def get_executor(self, executor_id: str) -> Executor:
        try:
            return self.executors[executor_id]
        except KeyError:
            raise KeyError(_unknown(executor_id, self.executors, f"workflow {self.name!r}")) from None

    # -- running --------------------------------------------------------------------

    @overload
    def run(
        self,
        *inputs: Any,
        stream: Literal[False] = False,
        client_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        function_invocation_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        max_supersteps: int | None = None,
        state: Mapping[str, Any] | None = None,
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> Coroutine[Any, Any, RunResult]: ...
    @overload
    def run(
        self,
        *inputs: Any,
        stream: Literal[True],
        client_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        function_invocation_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        max_supersteps: int | None = None,
        state: Mapping[str, Any] | None = None,
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> WorkflowRunStream: ...
    def run(
        self,
        *inputs: Any,
        stream: bool = False,
        client_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        function_invocation_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        max_supersteps: int | None = None,
        state: Mapping[str, Any] | None = None,
        responses: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> Coroutine[Any, Any, RunResult] | WorkflowRunStream:
        """Run the workflow on ``inputs``, delivered in order to the start executor.

        ``await workflow.run(x)`` returns a ``RunResult``; ``workflow.run(x, stream=True)``
        is an async iterator of events (its ``result`` is set once it is exhausted).

        ``client_kwargs`` and ``function_invocation_kwargs`` map executor ids to keyword
        arguments for that executor's agent; the key ``"*"`` applies to every agent.
        ``state`` is the shared state the run starts from (``ctx.get_state``); the run
        never changes the mapping passed in, and its ``RunResult.state`` holds the state it ended with.

        ``responses`` answers pending requests (``{request_id: value}``) instead of giving
        inputs. ``checkpoint_id`` resumes the run saved in that checkpoint (of
        ``checkpoint_storage``, or of the builder's), in this workflow or a freshly built
        one; a storage without a ``checkpoint_id`` just takes checkpoints as the run goes.
        """
        if checkpoint_storage is not None:
            check_storage(f"workflow {self.name!r}: run()", checkpoint_storage)
        if state is not None and not isinstance(state, Mapping):
            raise bad_argument(f"workflow {self.name!r}: run()", "state", state, "give a dict of shared state, or None")
        storage = checkpoint_storage if checkpoint_storage is not None else self.checkpoint_storage
        if checkpoint_id is not None:
            if storage is None:
                raise UsageError(
                    f"workflow {self.name!r}: checkpoint_id={checkpoint_id!r} needs the storage it is in: "
                    "run(checkpoint_id=..., checkpoint_storage=FileCheckpointStorage('...'))"
                )
            if inputs:
                raise UsageError(
                    f"workflow {self.name!r}: a resumed run continues where the checkpoint stopped and takes no new "
                    "input; resume first, then run with the input (the executors then hold the checkpoint's state)"
                )
            if state is not None:
                raise UsageError(f"workflow {self.name!r}: a resumed run takes its shared state from the checkpoint")
        elif not inputs and not responses:
            raise UsageError(
                f"workflow {self.name!r}: run() needs at least one input for {self.start_executor_id!r} "
                "(or responses={...} to answer pending requests, or checkpoint_id=... to resume)"
            )
        start = self.start_executor
        for value in inputs:
            if not start.can_handle(value):
                error = start.type_error(value)
                raise InputTypeError(f"start {error}", executor_id=error.executor_id, accepted=error.accepted)
        run_kwargs = {
            "client_kwargs": self._per_executor("client_kwargs", client_kwargs),
            "function_invocation_kwargs": self._per_executor("function_invocation_kwargs", function_invocation_kwargs),
        }
        checkpointer = self._checkpointer(storage) if storage is not None else None
        restored = checkpointer.restore(checkpoint_id) if checkpointer and checkpoint_id is not None else None
        if responses:
            self._check_responses(responses, restored.pending if restored else self._pending)
        if responses and restored is None:  # answering in this process: the asking run's kwargs carry over
            for kind, given in run_kwargs.items():
                if not given:
                    run_kwargs[kind] = dict(self._pending_kwargs.get(kind, {}))
        plan = {
            "run_kwargs": run_kwargs,
            "max_supersteps": self.max_supersteps if max_supersteps is None else check_limit(max_supersteps),
            "state": state,
            "checkpointer": checkpointer,
            "restored": restored,
            "responses": responses,
        }
        if stream:
            return WorkflowRunStream(self, inputs, plan)
        return self._run(inputs, plan)

    async def _run(self, inputs: tuple[Any, ...], plan: dict[str, Any]) -> RunResult:
        token = _Token()
        await self._enter(token)
        try:
            run = _Run(self, streaming=False, emit=None, **plan)
            return await run.execute(inputs)
        finally:
            self._leave(token)

    def _take(self, executors: Mapping[str, Executor]) -> None:
        """Make this workflow the one its executors run in: an executor holds one conversation.

        A workflow built later from the same executors takes them over (rebuilding in a
        notebook cell just works); the older workflow then refuses to run, naming the newer
        one. Taking an executor while another workflow runs it is refused.
        """
        for eid, ex in executors.items():
            ref = getattr(ex, "_workflow", None)
            other = ref() if ref is not None else None
            if other is not None and other is not self and other._holder is not None and other._holder() is not None:
                raise WorkflowValidationError(
                    f"executor {eid!r} is running in workflow {other.name!r} now; build this workflow once that "
                    "run has ended, or give it executors of its own",
                    executor_ids=(eid,),
                )
        me = weakref.ref(self)
        for ex in executors.values():
            ex._workflow = me  # type: ignore[attr-defined]

    def _check_owner(self) -> None:
        """Refuse to run when a newer workflow took an executor; take back those whose taker is gone."""
        me = None
        for eid, ex in self.executors.items():
            ref = getattr(ex, "_workflow", None)
            other = ref() if ref is not None else None
            if other is None:
                me = me or weakref.ref(self)
                ex._workflow = me  # type: ignore[attr-defined]
            elif other is not self:
                raise UsageError(
                    f"workflow {self.name!r} cannot run: its executor {eid!r} now belongs to workflow "
                    f"{other.name!r}, built later from the same executor. An executor holds one conversation, so "
                    "it runs in one workflow: run the newer workflow, or build this one again with new executors "
                    "(AgentExecutor(agent, ...) for each)"
                )

    async def _enter(self, holder: object) -> None:
        """Take the workflow for one run; one left behind by this task is stopped and rolled back first."""
        import asyncio

        self._check_owner()

        current = self._holder() if self._holder is not None else None
        if isinstance(current, WorkflowRunStream) and current.left_by(asyncio.current_task()):
            self._forget(current.abandon())
        if self._abandoned:
            await asyncio.gather(*list(self._abandoned), return_exceptions=True)
        current = self._holder() if self._holder is not None else None
        if current is not None:
            if isinstance(current, WorkflowRunStream):
                raise WorkflowBusyError(
                    f"workflow {self.name!r} is already running: a streamed run of it is still open. Read it to "
                    "the end, or stop it with 'await stream.aclose()' (inside 'async with workflow.run(..., "
                    "stream=True) as stream:' it stops when the block ends); then run again"
                )
            raise WorkflowBusyError(
                f"workflow {self.name!r} is already running; await that run first, "
                "or build a second workflow to run two conversations at once"
            )
        self._holder = weakref.ref(holder)

    def _leave(self, holder: object) -> None:
        if self._holder is not None and self._holder() in (holder, None):
            self._holder = None

    def _forget(self, task: asyncio.Task[Any] | None) -> None:
        """Keep a left run's task until it has rolled back (a new run waits for it)."""
        if task is not None and not task.done():
            self._abandoned.add(task)
            task.add_done_callback(self._abandoned.discard)

    @property
    def pending_requests(self) -> tuple[PendingRequest, ...]:
        """Requests for input that no run has answered yet."""
        return tuple(self._pending.values())

    def answered(self, request_id: str) -> Mapping[str, str] | None:
        """When and by whom a request was answered (``{"at", "by", "waiting"}``), or ``None``.

        Answers given in this workflow are known at once; with a checkpoint storage, so are
        those given by any run (in any process) that resumed the checkpoint the request waits in.
        """
        if request_id in self._answered:
            return self._answered[request_id]
        if self._waiting_at is None:
            return None
        waiting, storage = self._waiting_at
        look = getattr(storage, "answer_to", None)
        return look(waiting, request_id) if look is not None else None

    def release_answer(self, request_id: str) -> None:
        """Let a request be answered again, on purpose.

        For an answer delivered to a run that then failed, once you know that what it allowed
        was not done (agent_nb cannot know it: a tool may have run before the failure).
        """
        self._answered.pop(request_id, None)
        if self._waiting_at is not None:
            waiting, storage = self._waiting_at
            release = getattr(storage, "release_answer", None)
            if release is not None:
                release(waiting, request_id)

    def _checkpointer(self, storage: CheckpointStorage) -> Checkpointer:
        from .checkpoints.checkpointer import Checkpointer

        found = self._checkpointers.get(id(storage))
        if found is None or found.storage is not storage:
            found = self._checkpointers[id(storage)] = Checkpointer(self, storage)
        return found

    def _check_responses(self, responses: Mapping[str, Any], pending: Mapping[str, PendingRequest]) -> None:
        if not isinstance(responses, Mapping):
            raise UsageError(
                f"workflow {self.name!r}: responses must be a dict {{request_id: value}}, got {responses!r}"
            )
        for request_id, value in responses.items():
            asked = pending.get(request_id)
            earlier = self._answered.get(request_id)
            if earlier is not None:
                raise RequestError(answered_again(self.name, request_id, earlier), answered=earlier)
            if asked is None:
                waiting = ", ".join(pending) or "none"
                raise RequestError(
                    f"workflow {self.name!r} has no pending request {request_id!r} (pending: {waiting}); "
                    "nothing was run" + did_you_mean(str(request_id), pending)
                )
            asked.check(value)
            executor = self.executors[asked.executor_id]
            if not executor.can_handle(RequestResponse(request_id, asked.data, value)):
                raise RequestError(
                    f"executor {asked.executor_id!r} asked {request_id!r} but has no handler for the answer; "
                    "give it a @handler that takes a RequestResponse"
                )

    def run_sync(self, *inputs: Any, **kwargs: Any) -> RunResult:
        """``run`` for code that cannot ``await``: a script, or a notebook cell inside a running loop."""
        if kwargs.get("stream"):
            raise UsageError("run_sync cannot stream; use 'async for event in workflow.run(..., stream=True)'")
        return run_sync(cast("Coroutine[Any, Any, RunResult]", self.run(*inputs, **kwargs)))

    def as_agent(self, name: str | None = None, *, description: str | None = None) -> WorkflowAgent:
        """The workflow as an agent: usable in another workflow, the ``Playground``, an experiment.

        Each run of the agent is a run of the workflow on the messages given; its answer is the
        workflow's output. In another workflow it runs as a ``WorkflowExecutor`` whose snapshot
        holds this workflow's own trace.
        """
        from .nested import WorkflowAgent

        return WorkflowAgent(self, name=name, description=description)

    def reset(self) -> None:
        """Forget every agent executor's cache and conversation, and any pending request: start afresh."""
        self._pending = {}
        self._pending_kwargs = {}
        self._fan_in_waiting = {}
        self._waiting_at = None
        self._answered = {}
        self._checkpointers = {}  # and the messages their encoders keep alive
        for ex in self.executors.values():
            reset = getattr(ex, "reset", None)
            if callable(reset):
                reset()

    def _per_executor(self, what: str, given: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
        if given is not None and not isinstance(given, Mapping):
            raise bad_argument(
                f"workflow {self.name!r}: run()",
                what,
                given,
                "give a dict of executor id to keyword arguments",
                f"{what}={{'*': {{...}}}} for every agent",
            )
        if not given:
            return {}
        for key, value in given.items():
            if key != "*" and key not in self.executors:
                raise UsageError(
                    f"{what}: {_unknown(key, self.executors, f'workflow {self.name!r}')}. Keys are executor ids, "
                    f"or '*' for every agent: {what}={{'*': {{...}}}}"
                )
            if not isinstance(value, Mapping):
                raise UsageError(f"{what}[{key!r}] must be a dict of keyword arguments, got {type(value).__name__}")
        shared = dict(given.get("*", {}))
        return {eid: {**shared, **given.get(eid, {})} for eid in self.executors}

    # -- pictures -----------------------------------------------------------------

    def to_mermaid(self, *, direction: str = "TD") -> str:
        """The graph as a Mermaid flowchart (``direction`` ``"TD"`` or ``"LR"``): text for documents.

        As a cell's value it is drawn as a diagram where the front end draws Mermaid (JupyterLab 4.1+).
        """
        return render(self, "mermaid", direction=direction)  # type: ignore[no-any-return]

    def to_dot(self) -> str:
        """The graph in Graphviz DOT (text; agent_nb itself never needs Graphviz)."""
        return str(render(self, "dot"))

    def to_figure(self, *, direction: str = "TB") -> Any:
        """The graph as a matplotlib figure: ``workflow.to_figure().savefig("graph.png")``.

        ``direction``: layers down the page (``"TB"``) or across it (``"LR"``).
        """
        return render(self, "figure", direction=direction)

    def to_text(self) -> str:
        """The workflow and its edges, one per line."""
        return f"{self!r}\n" + "\n".join(f"  {e.source} -> {e.target}" for e in self.edges)

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, executors={list(self.executors)}, start={self.start_executor_id!r})"


class _Token:
    """Stands for a run that is not streamed while it has the workflow."""

    __slots__ = ("__weakref__",)


def _unknown(key: str, known: Mapping[str, Any], where: str) -> str:
    return f"there is no executor {key!r} in {where} (executors: {', '.join(known)}){did_you_mean(key, known)}"


def check_limit(max_supersteps: int) -> int:
    """``max_supersteps`` as given, once checked: a whole number of at least 1."""
    if isinstance(max_supersteps, bool) or not isinstance(max_supersteps, int) or max_supersteps < 1:
        raise bad_argument("the workflow", "max_supersteps", max_supersteps, "give a whole number of at least 1")
    return max_supersteps


def check_storage(where: str, storage: Any) -> Any:
    """``storage`` once it is known to be a checkpoint storage (or ``None``)."""
    if storage is None:
        return None
    from .checkpoints.storage import CheckpointStorage

    if not isinstance(storage, CheckpointStorage):
        raise bad_argument(
            where,
            "checkpoint_storage",
            storage,
            "give a checkpoint storage: InMemoryCheckpointStorage(), FileCheckpointStorage(directory) or "
            "SQLiteCheckpointStorage(path)",
        )
    return storage
