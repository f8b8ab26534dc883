"""One run of a workflow: supersteps, routing, outputs, the trace, and undoing a failed run.

Messages sent in superstep *n* are delivered in superstep *n + 1*. Executors that have
messages in a superstep run concurrently; one executor handles its messages in the
order they were sent. What a superstep's executors send, and the state they set, lands
executor by executor in the order they started, never in the order they finished, so
timing changes nothing. When an executor fails, the others of that superstep are
cancelled and every executor goes back to the state it had before the run.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import AgentNbError, RequestError, RunError, StepFailed, SuperstepLimitExceeded, UsageError
from ..history_writes import HistoryWrites, holding, reset_writer
from ..sessions import AgentSession
from ..sync import gather_or_cancel
from ..trace import ContextSnapshot, Sent, Trace
from ..trace.snapshots import OpenSnapshot, freeze
from ._types import type_name
from .answers import AnswerClaims, answered_again
from .edges import EdgeGroup
from .events import (
    CheckpointSaved,
    ExecutorCompleted,
    ExecutorFailed,
    ExecutorInvoked,
    IntermediateEvent,
    OutputEvent,
    RequestInfoEvent,
    SuperstepCompleted,
    SuperstepStarted,
    WorkflowCompleted,
    WorkflowEvent,
    WorkflowFailed,
    WorkflowStarted,
    WorkflowWarning,
)
from .executor import Executor, WorkflowContext
from .observers import OBSERVERS, notify
from .requests import PendingRequest, RequestResponse
from .result import RunResult

if TYPE_CHECKING:
    from .checkpoints.checkpointer import Checkpointer, Restored
    from .workflow import Workflow

Emit = Callable[[WorkflowEvent], None]


class _Failure(Exception):
    """Carries an executor's error out of a superstep."""

    def __init__(self, executor_id: str, superstep: int, error: BaseException) -> None:
        self.executor_id, self.superstep, self.error = executor_id, superstep, error


class _Run:
    """The state of one run; nothing of it outlives the run except the result."""

    def __init__(
        self,
        workflow: Workflow,
        *,
        streaming: bool,
        emit: Emit | None,
        run_kwargs: Mapping[str, dict[str, dict[str, Any]]],
        max_supersteps: int,
        state: Mapping[str, Any] | None = None,
        checkpointer: Checkpointer | None = None,
        restored: Restored | None = None,
        responses: Mapping[str, Any] | None = None,
    ) -> None:
        self.workflow = workflow
        self.checkpointer = checkpointer
        self.restored = restored
        self._responses = dict(responses or {})
        if restored is not None:
            state = restored.state
        self.pending: dict[str, PendingRequest] = dict(restored.pending if restored else workflow._pending)
        """Requests nobody answered yet; they become the workflow's only if the run succeeds."""
        self.request_seq = restored.request_seq if restored else workflow._request_seq
        self.last_checkpoint: str | None = None
        self.touched: set[str] | None = None
        """Executors invoked since the last checkpoint; ``None`` before the run's first one (all may differ)."""
        self._initial: Mapping[str, Any] = MappingProxyType(dict(state or {}))
        self.state: dict[str, Any] = dict(self._initial)
        """The shared state (``ctx.get_state``); updates land at the end of each superstep."""
        self._updates: list[tuple[tuple[int, int], dict[str, Any]]] = []
        self._outbox: list[tuple[tuple[int, int], int, str, Any]] = []
        """This superstep's messages: delivered in the next one in the order of their senders (not of timing)."""
        self.streaming = streaming
        self.events: list[WorkflowEvent] = []
        self._emit_extra = emit
        self._observers = tuple(OBSERVERS)  # those watching when it starts: a run is watched whole or not at all
        self.emit: Emit = self.events.append if emit is None and not self._observers else self._emit_watched
        """Record an event (and hand it to the stream and the observers this run started with, if any)."""
        self._run_kwargs = run_kwargs
        self.has_kwargs = any(run_kwargs.values())
        """Whether the run gives any agent keyword arguments (``client_kwargs``, ``function_invocation_kwargs``)."""
        self.max_supersteps = max_supersteps
        self.superstep = 0
        self._next: list[tuple[str, Any]] = []
        self._fan_in: dict[int, dict[str, list[Any]]] = {
            i: {source: list(sent) for source, sent in buffer.items()} for i, buffer in workflow._fan_in_waiting.items()
        }
        """What each fan-in has gathered so far; a run that answers requests goes on from what the asking run had."""
        self._snapshots: list[ContextSnapshot] = []
        self._count = 0
        self._t0 = 0.0
        self.began = 0.0
        """When the run started, in seconds since the epoch."""
        self._writes: HistoryWrites | None = None
        """The run's held history writes (set when it executes)."""
        self._warned: set[tuple[int, str]] = set()

    # -- called by WorkflowContext --------------------------------------------------

    def also_emit_to(self, emit: Emit) -> None:
        """Hand every event to ``emit`` too (a stream's queue), from now on."""
        self._emit_extra = emit
        self.emit = self._emit_watched

    def _emit_watched(self, event: WorkflowEvent) -> None:
        self.events.append(event)
        if self._observers:
            notify(self, event, self._observers)
        if self._emit_extra is not None:
            self._emit_extra(event)

    def output(self, executor_id: str, value: Any) -> None:
        allowed = self.workflow.output_from
        if allowed is None or executor_id in allowed:
            self.emit(OutputEvent(executor_id, value))
        else:  # not an output of the run, still an event: a stream shows it, the trace keeps it
            self.emit(IntermediateEvent(executor_id, value))

    def request(self, executor_id: str, data: Any, response_type: Any) -> str:
        self.request_seq += 1
        request_id = f"{executor_id}:{self.request_seq}"
        self.pending[request_id] = PendingRequest(request_id, executor_id, data, response_type)
        self.emit(RequestInfoEvent(request_id, executor_id, data, response_type))
        return request_id

    def kwargs_for(self, kind: str, executor_id: str) -> dict[str, Any]:
        per = self._run_kwargs.get(kind)
        return per.get(executor_id, {}) if per else {}

    def route(self, source: str, message: Any, target_id: str | None, order: tuple[int, int] = (0, 0)) -> Sent:
        executors = self.workflow.executors
        groups = self.workflow.routes.get(source, ())
        delivered: list[str] = []
        taken = False  # did any edge lead to an executor that takes this type?
        for group in groups:
            if group.kind == "fan_in":
                if target_id is None or target_id in group.targets:  # delivered once every source has sent
                    self._fan_in.setdefault(group.index, {}).setdefault(source, []).append(message)
                    delivered.append(group.targets[0])
                    taken = True
                continue
            # a condition or a selection only ever sees messages its targets can take
            targets = [
                t for t in group.targets if (target_id is None or t == target_id) and executors[t].can_handle(message)
            ]
            taken = taken or bool(targets)
            if not targets or (group.condition is not None and not _call(group.condition, message, group, source)):
                continue
            if group.selection is not None:
                targets = [t for t in _select(group, message, source) if t in targets]
            for target in targets:
                self._outbox.append((order, len(self._outbox), target, message))
            delivered.extend(targets)
        if target_id is not None and not taken:
            raise UsageError(
                f"{source!r} sent a message of type {type(message).__name__} to {target_id!r}, but no edge from "
                f"{source!r} to {target_id!r} takes it; add the edge or send without target_id"
            )
        if groups and not taken:
            reach = ", ".join(f"{t} takes {_accepted(executors[t])}" for g in groups for t in g.targets)
            raise UsageError(
                f"{source!r} sent a message of type {type(message).__name__}, but none of its edges leads to an "
                f"executor that takes it ({reach}); send a type a target accepts, or add an edge to one that does"
            )
        return Sent(message, tuple(delivered))

    # -- the run --------------------------------------------------------------------

    async def execute(self, inputs: tuple[Any, ...]) -> RunResult:
        with holding() as writes:  # the agents' history writes reach their stores only if the run completes
            self._writes = writes
            return await self._execute(inputs, writes)

    async def _execute(self, inputs: tuple[Any, ...], writes: HistoryWrites) -> RunResult:
        workflow = self.workflow
        saved = {eid: ex.snapshot_state() for eid, ex in workflow.executors.items()}
        self._t0, self.began = time.perf_counter(), time.time()
        self.emit(WorkflowStarted())
        self._next = [(workflow.start_executor_id, m) for m in inputs]
        answers = self._claims()
        try:
            if self.restored is not None:
                self._put_back(self.restored)
                self._hold_again(self.restored, writes)
                for request_id, asked in self.pending.items():  # still waiting: a streaming reader sees them again
                    if request_id not in self._responses:
                        self.emit(RequestInfoEvent(request_id, asked.executor_id, asked.data, asked.response_type))
            answers.claim()
            for request_id, value in self._responses.items():
                if request_id not in self.pending:  # answered by a run that ended after this one was asked for
                    earlier = workflow.answered(request_id) or {}
                    raise RequestError(answered_again(workflow.name, request_id, earlier), answered=earlier)
                asked = self.pending.pop(request_id)
                self._next.append((asked.executor_id, RequestResponse(request_id, asked.data, value)))
            first = self.superstep
            if self.restored is not None and self.restored.finished and not self._next:
                self.emit(WorkflowWarning(_finished(self.restored.checkpoint.id, workflow.name)))
            elif self.restored is None and self.checkpointer is not None:
                self._checkpoint()
            answers.delivered = bool(self._responses)  # the first superstep hands the answers over
            while self._next:
                if self.superstep - first >= self.max_supersteps:
                    active = tuple(dict.fromkeys(t for t, _ in self._next))
                    raise SuperstepLimitExceeded(
                        f"workflow {workflow.name!r} was still delivering messages after {self.max_supersteps} "
                        f"supersteps (to {', '.join(active)}): a cycle that does not end. Add a condition that "
                        "stops it, or raise max_supersteps if the work really is that long.",
                        limit=self.max_supersteps,
                        active=active,
                    )
                await self._superstep()
                if self.checkpointer is not None:
                    self._checkpoint()
            if not writes.empty:  # (most runs hold nothing: agents that keep no history)
                await self._commit(writes)
        except BaseException as exc:
            for eid, ex in workflow.executors.items():
                ex.restore_state(saved[eid])
            error = self._as_run_error(exc)
            if error is exc and isinstance(exc, AgentNbError) and not writes.written and hasattr(exc, "add_note"):
                exc.add_note(self.kept())  # a checkpoint that could not be written, a limit: say what is left
            answers.failed(error)
            if answers.delivered:
                workflow._answered.update(dict.fromkeys(self._responses, answers.record))
            self.emit(WorkflowFailed(error))
            if isinstance(error, RunError):
                error.result = self.result("failed")
            if error is exc:
                raise
            raise error from (exc.error if isinstance(exc, _Failure) else exc)
        workflow._pending, workflow._request_seq = self.pending, self.request_seq
        workflow._answered.update(dict.fromkeys(self._responses, answers.record))
        workflow._waiting_at = None
        if self.pending and self.checkpointer is not None and self.last_checkpoint is not None:
            workflow._waiting_at = (self.last_checkpoint, self.checkpointer.storage)
        workflow._pending_kwargs = self._run_kwargs if self.pending else {}  # for the answers, never stored
        workflow._fan_in_waiting = self._fan_in if self.pending else {}
        self.emit(WorkflowCompleted(self.superstep))
        return self.result("waiting" if self.pending else "completed")

    def _put_back(self, restored: Restored) -> None:
        """Give every executor the state the checkpoint holds, and the run its messages in flight."""
        for eid, ex in self.workflow.executors.items():
            if eid in restored.executors:
                ex.restore_state(restored.executors[eid])
        self._next = list(restored.in_flight) + self._next
        self._fan_in = {i: dict(buffer) for i, buffer in restored.fan_in.items()}
        self.superstep = restored.checkpoint.superstep
        if self.checkpointer is not None:
            self.checkpointer.last_id = restored.checkpoint.id

    def _claims(self) -> AnswerClaims:
        """The requests this run answers, to claim before anything runs (refused if answered before)."""
        waiting: str | None = None
        storage: Any = None
        if self.restored is not None and self.checkpointer is not None:
            waiting, storage = self.restored.checkpoint.id, self.checkpointer.storage
        elif self.workflow._waiting_at is not None:
            waiting, storage = self.workflow._waiting_at
        return AnswerClaims(self.workflow.name, storage, waiting, self._responses)

    def _hold_again(self, restored: Restored, writes: HistoryWrites) -> None:
        """The history the checkpointed run had not written: this run writes it, if it completes."""
        executors = self.workflow.executors
        for eid, sid, messages in restored.held:
            ex = executors[eid]
            sessions = [getattr(x, "session", None) for x in (ex, *executors.values())]
            session = next((s for s in sessions if s is not None and s.session_id == sid), None)
            writes.hold(ex.agent.history, session or AgentSession(sid), messages)  # type: ignore[attr-defined]

    def _checkpoint(self) -> None:
        checkpointer = self.checkpointer
        if checkpointer is None:
            return
        if self.last_checkpoint is None:
            for warning in _unsaved_history(self.workflow):
                self.emit(WorkflowWarning(warning))
        status = "running" if self._next or self._fan_in else ("waiting" if self.pending else "completed")
        checkpoint = checkpointer.take(self, status)
        for key, warning in checkpointer.unkept.items():
            if key not in self._warned:  # once a run for each session
                self._warned.add(key)
                self.emit(WorkflowWarning(warning))
        self.touched = set()
        self.last_checkpoint = checkpoint.id
        self.emit(CheckpointSaved(checkpoint.id, checkpoint.superstep, status))

    def _as_run_error(self, exc: BaseException) -> BaseException:
        if not isinstance(exc, _Failure):
            return exc  # already a RunError (a limit), or a cancellation that must stay one
        original = exc.error
        return StepFailed(
            f"executor {exc.executor_id!r} failed in superstep {exc.superstep} of workflow "
            f"{self.workflow.name!r}: {type(original).__name__}: {original}. {self.kept()} "
            "Fix the cause and run again.",
            executor_id=exc.executor_id,
            superstep=exc.superstep,
        )

    async def _commit(self, writes: HistoryWrites) -> None:
        """Write the run's held history; a store that refuses fails the run, naming the store's own error."""
        try:
            await writes.commit()
        except Exception as exc:
            said = (
                f"workflow {self.workflow.name!r} ran to the end, but its history could not be written: "
                f"{type(exc).__name__}: {exc}"
            )
            if writes.written:
                said += (
                    f". Some of it was written before the failure ({'; '.join(writes.written)}) and stays written; "
                    "the rest was not. The executors are back as they were before the run: running it again would "
                    "write those sessions' turns a second time"
                )
            else:
                said += (
                    ". Nothing of it was written, and the executors are back as they were before the run; run it "
                    "again once the store can be written"
                )
            raise RunError(said) from exc

    def kept(self) -> str:
        """What a failed or cancelled run leaves behind, in words."""
        said = (
            "Nothing of this run was kept: every executor, session, history and the shared state are as "
            "they were before it"
        )
        if self.last_checkpoint is None:
            return said + "."
        return (
            f"{said}; its checkpoints are kept (the last, {self.last_checkpoint!r}, after superstep "
            f"{self.superstep}): run(checkpoint_id=...) resumes from one."
        )

    def result(self, status: str) -> RunResult:
        snapshots = sorted(self._snapshots, key=_by_index)
        restored_from: str | None = None
        restored: tuple[str, ...] = ()
        if self.restored is not None:  # what was put back from the checkpoint and did not run now
            ran = {s.executor_id for s in snapshots}
            restored_from = self.restored.checkpoint.id
            restored = tuple(e for e in self.workflow.executors if e in self.restored.executors and e not in ran)
        trace = Trace(
            snapshots,
            tuple(self.workflow.executors),
            restored_from=restored_from,
            restored=restored,
            name=self.workflow.name,
        )
        failed = status == "failed"
        state = self._initial if failed else MappingProxyType(self.state)  # a failed run keeps nothing
        pending = tuple(self.workflow._pending.values())  # a failed run never changed them
        return RunResult(tuple(self.events), trace, status, self.workflow, state, pending, self.last_checkpoint)

    async def _superstep(self) -> None:
        self.superstep += 1
        step = self.superstep
        deliveries, self._next = self._next, []
        by_target: dict[str, list[Any]] = {}
        for target, message in deliveries:
            by_target.setdefault(target, []).append(message)
        self.emit(SuperstepStarted(step))
        executors = self.workflow.executors
        if len(by_target) == 1:
            ((target, messages),) = by_target.items()
            await self._invoke(executors[target], messages, step, 0)
        else:
            await gather_or_cancel(
                [self._invoke(executors[t], ms, step, rank) for rank, (t, ms) in enumerate(by_target.items())]
            )
        outbox, self._outbox = self._outbox, []
        if len(outbox) > 1:
            outbox.sort(key=_sent_order)
        self._next += [(target, message) for _, _, target, message in outbox]
        if self._fan_in:
            self._release_fan_in()
        if self._updates:
            for _, updates in sorted(self._updates, key=_first):  # executor by executor, in the order they started
                self.state.update(updates)
            self._updates = []
        self.emit(SuperstepCompleted(step))

    def _release_fan_in(self) -> None:
        for group in self.workflow.fan_in_groups:
            buffer = self._fan_in.get(group.index)
            if buffer and all(buffer.get(s) for s in group.sources):
                merged = [m for s in group.sources for m in buffer[s]]
                target = self.workflow.executors[group.targets[0]]
                if not target.can_handle(merged):
                    kinds = ", ".join(sorted({type(m).__name__ for m in merged}))
                    raise StepFailed(
                        f"the fan-in from {', '.join(group.sources)} into {target.id!r} collected a list of "
                        f"{kinds}, which {target.id!r} cannot take (it takes {_accepted(target)}); "
                        "make the sources send what it takes, or give it a handler for that list",
                        executor_id=target.id,
                        superstep=self.superstep,
                    )
                self._next.append((target.id, merged))
                del self._fan_in[group.index]

    async def _invoke(self, executor: Executor, messages: list[Any], step: int, rank: int) -> None:
        """One executor's messages of a superstep, in order; the turns its agents save are its own (``rank``)."""
        assert self._writes is not None, "a superstep runs inside execute()"
        eid = executor.id
        if self.touched is not None:
            self.touched.add(eid)
        token = self._writes.writer(step, rank)
        try:
            for number, message in enumerate(messages):
                index = self._count
                self._count += 1
                self.emit(ExecutorInvoked(eid, step))
                record = OpenSnapshot(eid, step, index, message, executor.kind)
                ctx: WorkflowContext[Any, Any] = WorkflowContext(self, record, (rank, number))
                start = time.perf_counter()
                try:
                    handler = executor._find_handler(message)
                    if handler is None:
                        raise executor.type_error(message)
                    await handler(message, ctx)
                except Exception as exc:
                    self._record(ctx, start, error=f"{type(exc).__name__}: {exc}")
                    self.emit(ExecutorFailed(eid, step, exc))
                    raise _Failure(eid, step, exc) from exc
                except BaseException as exc:  # cancelled (CancelledError, KeyboardInterrupt): not a failure of its own
                    self._record(ctx, start, error=f"cancelled ({type(exc).__name__})")
                    raise
                snapshot = self._record(ctx, start)
                if ctx._updates is not None:
                    self._updates.append((ctx._order, ctx._updates))
                self.emit(ExecutorCompleted(eid, step, snapshot))
        finally:
            reset_writer(token)

    def _record(self, ctx: WorkflowContext[Any, Any], start: float, error: str | None = None) -> ContextSnapshot:
        """The invocation's trace record, finished (what it sent, yielded, asked; when; how it ended) and frozen."""
        record = ctx._record  # what the executor recorded; the invocation's own fields added to it
        record.sent = tuple(ctx._sent)
        record.outputs = tuple(ctx._outputs)
        record.started = started = start - self._t0
        record.at = self.began + started
        record.duration = time.perf_counter() - start
        record.error = error
        record.requested = ctx._requested
        snapshot = freeze(record)
        self._snapshots.append(snapshot)
        return snapshot


def _finished(checkpoint_id: str, name: str) -> str:
    return (
        f"checkpoint {checkpoint_id!r} is of a run of {name!r} that had finished: nothing was left to resume. "
        "The executors now hold the conversation it saved; run the workflow with a new input to go on from it"
    )


_first = operator.itemgetter(0)
_sent_order = operator.itemgetter(0, 1)
"""A message of the outbox by its sender's place, then by when it was sent."""
_by_index = operator.attrgetter("index")


def _unsaved_history(workflow: Workflow) -> list[str]:
    """Agents whose conversation lives where a checkpoint cannot capture it."""
    from ..clients.base import history_mode_of
    from ..history import InMemoryHistoryProvider

    out = []
    for eid, ex in workflow.executors.items():
        agent = getattr(ex, "agent", None)
        client = getattr(agent, "client", None)
        if client is not None and history_mode_of(client) == "service":
            out.append(
                f"executor {eid!r}: its agent's history lives on the service ({type(client).__name__}), so the "
                "checkpoints do not capture it and it may change underneath them; resuming may not reproduce the run"
            )
        history = getattr(agent, "history", None)
        if history is not None and not isinstance(history, InMemoryHistoryProvider):
            out.append(
                f"executor {eid!r}: its agent keeps its history in {type(history).__name__}, outside the "
                "checkpoints; resuming an older checkpoint does not roll that history back"
            )
    return out


def _accepted(executor: Executor) -> str:
    return " | ".join(type_name(t) for t in executor.accepted_types()) or "nothing"


def _call(condition: Callable[[Any], bool], message: Any, group: EdgeGroup, source: str) -> bool:
    try:
        return bool(condition(message))
    except Exception as exc:
        label = group.label or getattr(condition, "__name__", "condition")
        raise RuntimeError(
            f"the condition {label!r} on the edge {source} → {', '.join(group.targets)} raised {exc!r}"
        ) from exc


def _select(group: EdgeGroup, message: Any, source: str) -> list[str]:
    assert group.selection is not None
    picked = group.selection(message, list(group.targets))
    if isinstance(picked, (str, bytes)) or not isinstance(picked, Iterable):
        name = getattr(group.selection, "__name__", "selection")
        raise RuntimeError(
            f"the fan-out selection {name!r} of {source!r} returned {picked!r:.60}, not a list of target ids; "
            f"return some of {list(group.targets)} (an empty list sends to none)"
        )
    chosen = list(picked)
    unknown = [t for t in chosen if t not in group.targets]
    if unknown:
        raise RuntimeError(
            f"the fan-out selection of {source!r} chose {unknown}, "
            f"which are not among its targets {list(group.targets)}"
        )
    return chosen
