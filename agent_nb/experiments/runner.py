"""One cell from start to score: make (or isolate) the target, play the input's turns, measure, score.

A target is what ``build(config)`` (or ``build(config, case)``) returns — a ``Workflow``, an agent
(run as a one-executor workflow) or a ``Harness`` — or one ready ``Workflow``, given with its
configuration keys: ``route``, ``<executor>.context_mode``, ``<executor>.context_filter`` and
``<executor>.options.<name>`` (sent with the request, like ``client_kwargs``). A ready workflow is
one object, so its cells run one after another; before each, it forgets the last cell (its caches,
and fresh sessions in place of the old ones), and after the experiment it is put back as it was.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ArgumentError, StepFailed, UsageError, did_you_mean
from ..messages import Message
from ..routing import RoutingChatClient
from ..trace import Trace
from ..trace.codec import dump_trace
from ..watchers import watched_cell
from ..workflow import CONTEXT_MODES, AgentExecutor, Workflow, WorkflowAgent, WorkflowBuilder
from .cells import Cell, measure
from .configs import config_label
from .inputs import Case
from .scorers import name_of

__all__ = ["ExperimentError", "ReadyWorkflow", "Spec", "Watched", "check_keys", "run_cell"]


class ExperimentError(UsageError):
    """An experiment that cannot run as defined: an unknown key, a changed definition, a part a cluster cannot take."""


@dataclasses.dataclass(frozen=True)
class Spec:
    """Everything a cell needs, shipped once per worker on a cluster."""

    build: Callable[..., Any] | None
    ready: Workflow | None
    configs: tuple[dict[str, Any], ...]
    cases: tuple[Case, ...]
    scorers: tuple[Any, ...]
    timeout: float | None
    retries: int
    with_case: bool
    keep_traces: bool = True
    retry_wait: float = 0.5
    """The first wait before a retry, in seconds (then doubling, with jitter)."""

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """Input id -> its place in ``cases``."""
        return {c.id: i for i, c in enumerate(self.cases)}

    @functools.cached_property
    def named_scorers(self) -> tuple[tuple[str, Any], ...]:
        return tuple((name_of(s), s) for s in self.scorers)


def _agent_executors(workflow: Workflow) -> dict[str, AgentExecutor]:
    return {eid: ex for eid, ex in workflow.executors.items() if isinstance(ex, AgentExecutor)}


def _routers(workflow: Workflow) -> list[tuple[AgentExecutor, RoutingChatClient]]:
    found = []
    for ex in _agent_executors(workflow).values():
        client = getattr(ex.agent, "client", None)
        if isinstance(client, RoutingChatClient):
            found.append((ex, client))
    return found


def check_keys(workflow: Workflow, configs: Sequence[Mapping[str, Any]]) -> None:
    """Refuse, before anything runs, a configuration a ready workflow cannot take (with a "did you mean")."""
    agents = _agent_executors(workflow)
    routes = {name for _, router in _routers(workflow) for name in router.routes}
    for config in configs:
        where = f"Experiment over workflow {workflow.name!r}, configuration {config_label(config)}"
        for key, value in config.items():
            if key == "route":
                if not routes:
                    raise ExperimentError(
                        f"{where}: 'route' needs an agent whose client is a RoutingChatClient, and no agent of the "
                        "workflow has one; give the agents a RoutingChatClient, or build the workflow per "
                        "configuration (Experiment(build, ...))"
                    )
                if value not in routes:
                    raise ExperimentError(
                        f"{where}: route {value!r} is not a route of the workflow's routers "
                        f"(routes: {', '.join(sorted(routes))}){did_you_mean(str(value), routes)}"
                    )
                continue
            executor, _, setting = key.partition(".")
            if executor not in agents or not setting:
                known = ["route", *(f"{e}.context_mode" for e in agents), *(f"{e}.context_filter" for e in agents)]
                raise ExperimentError(
                    f"{where}: unknown key {key!r}{did_you_mean(key, known)}; the keys a ready workflow takes are "
                    "'route', '<executor>.context_mode', '<executor>.context_filter' and '<executor>.options.<name>' "
                    f"(agent executors: {', '.join(agents) or 'none'})"
                )
            if setting == "context_mode":
                if value not in CONTEXT_MODES:
                    raise ExperimentError(
                        f"{where}: {key}={value!r} is not a context mode (modes: {', '.join(CONTEXT_MODES)})"
                        + did_you_mean(str(value), CONTEXT_MODES)
                    )
                if (
                    value == "custom"
                    and f"{executor}.context_filter" not in config
                    and agents[executor].context_filter is None
                ):
                    raise ExperimentError(f"{where}: {key}='custom' needs a '{executor}.context_filter' as well")
            elif setting == "context_filter":
                if value is not None and not callable(value):
                    raise ExperimentError(f"{where}: {key}={value!r} is not a function list[Message] -> list[Message]")
                mode = config.get(f"{executor}.context_mode", "custom")
                if value is not None and mode != "custom":
                    raise ExperimentError(
                        f"{where}: {key} is used only with {executor}.context_mode='custom', not {mode!r}"
                    )
            elif not (setting.startswith("options.") and setting[len("options.") :].isidentifier()):
                settings = ("context_mode", "context_filter", "options.<name>")
                raise ExperimentError(
                    f"{where}: unknown key {key!r}{did_you_mean(key, [f'{executor}.{s}' for s in settings[:2]])}; "
                    "an executor takes " + ", ".join(f"'{executor}.{s}'" for s in settings)
                )


class Watched(dict[str, Any]):
    """A configuration that notes the keys a build reads: a key no build reads is likely misspelt."""

    def __init__(self, config: Mapping[str, Any], read: set[str]) -> None:
        super().__init__(config)
        self.read = read

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)

    def _all(self) -> None:
        self.read.update(super().keys())

    def keys(self) -> Any:  # a build that takes them all (``**config``, ``dict(config)``) reads them all
        self._all()
        return super().keys()

    def items(self) -> Any:
        self._all()
        return super().items()

    def values(self) -> Any:
        self._all()
        return super().values()

    def __iter__(self) -> Any:
        self._all()
        return super().__iter__()

    def copy(self) -> dict[str, Any]:
        self._all()
        return dict(super().items())


class ReadyWorkflow:
    """A ready workflow lent to an experiment: isolated for each cell, put back as it was afterwards."""

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        self.lock = asyncio.Lock()
        self._agents = _agent_executors(workflow)
        self._saved = {eid: (ex.session, ex.context_mode, ex.context_filter) for eid, ex in self._agents.items()}
        self._routers = _routers(workflow)

    def prepare(self, config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Forget the last cell, apply ``config``; the ``client_kwargs`` for the run."""
        self.workflow.reset()
        fresh: dict[int, Any] = {}
        for eid, ex in self._agents.items():
            session, mode, context_filter = self._saved[eid]
            ex.session = None if session is None else fresh.setdefault(id(session), ex.agent.create_session())
            mode = config.get(f"{eid}.context_mode", mode)
            context_filter = config.get(f"{eid}.context_filter", context_filter if mode == "custom" else None)
            ex.set_context_mode("custom" if f"{eid}.context_filter" in config else mode, context_filter)
        route = config.get("route")
        if route is not None:
            for ex, router in self._routers:
                if route in router.routes:
                    if ex.session is None:
                        ex.session = ex.agent.create_session()
                    router.set_active_route(ex.session, route)
        options: dict[str, dict[str, Any]] = {}
        for key, value in config.items():
            executor, _, setting = key.partition(".")
            if setting.startswith("options."):
                options.setdefault(executor, {})[setting[len("options.") :]] = value
        return options

    def restore(self) -> None:
        self.workflow.reset()
        for eid, ex in self._agents.items():
            session, mode, context_filter = self._saved[eid]
            ex.session = session
            ex.set_context_mode(mode, context_filter)


def make_target(spec: Spec, config: Mapping[str, Any], case: Case, *, given: dict[str, Any] | None = None) -> Any:
    """What ``build`` makes for this cell: a Workflow or a Harness (an agent becomes a one-executor workflow).

    ``build`` gets a copy of the configuration (or ``given``: the check before a run watches what it reads).
    """
    assert spec.build is not None
    config = dict(config) if given is None else given
    made = spec.build(config, case) if spec.with_case else spec.build(config)
    if isinstance(made, WorkflowAgent):  # a workflow used as an agent: its own trace, agent by agent
        return made.workflow
    if isinstance(made, Workflow) or _is_harness(made):
        return made
    if callable(getattr(made, "run", None)) and callable(getattr(made, "create_session", None)):
        return WorkflowBuilder(start_executor=AgentExecutor(made)).build()
    raise ExperimentError(
        f"Experiment: build({config_label(config)}) returned {type(made).__name__}; it must return a Workflow, "
        "an agent (ChatAgent) or a Harness"
    )


def takes_case(build: Callable[..., Any]) -> bool:
    """Whether ``build`` takes ``(config, case)``: a second positional parameter without a default."""
    try:
        parameters = inspect.signature(build).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].default is inspect.Parameter.empty


def _is_harness(value: Any) -> bool:
    return isinstance(value, _harness_type())


@functools.cache
def _harness_type() -> type:
    from ..harness import Harness  # the harness layer is imported only by experiments over harnesses

    return Harness


async def _play(
    target: Any, case: Case, client_kwargs: Mapping[str, Mapping[str, Any]] | None
) -> tuple[Trace, str, dict[str, int]]:
    """Run every turn of ``case``: the trace of all of them, the last output, a harness's gaps by kind."""
    if _is_harness(target):
        turn = None
        for t in case.turns:
            if isinstance(t, tuple):
                turn = await (target.click(t[1]) if t[0] == "click" else target.send(t[1]))
            else:
                turn = await target.send(t.text if isinstance(t, Message) else t)
        output = "\n".join(m.text for m in turn.shown if m.text) if turn is not None else ""
        findings: dict[str, int] = {}
        for f in target.gaps():
            findings[f.kind] = findings.get(f.kind, 0) + 1
        return target.trace, output, findings
    snapshots: list[Any] = []
    output = ""
    for n, t in enumerate(case.turns, 1):
        if isinstance(t, tuple):
            if t[0] == "click":
                raise ExperimentError(
                    f"input {case.id!r}: ('click', {t[1]!r}) is a harness turn; a workflow takes texts and messages"
                )
            t = t[1]
        result = await target.run(t, client_kwargs=client_kwargs)
        if result.status == "waiting":
            ids = ", ".join(r.request_id for r in result.pending_requests)
            raise ExperimentError(
                f"input {case.id!r}, turn {n}: the run waits for answers to requests ({ids}) and an experiment "
                "cannot give them; answer them in the build (a tool without approval), or run it by hand"
            )
        if len(case.turns) == 1:
            return result.trace, result.text, {}
        trace = result.trace
        snapshots.extend(dataclasses.replace(s, turn=n) for s in trace)
        output = result.text
    return Trace(snapshots, trace.executor_ids, name=trace.name), output, {}


@watched_cell  # telemetry's span around the cell, when it watches
async def run_cell(spec: Spec, cell: Cell, ready: ReadyWorkflow | None) -> Cell:
    """Run, measure and score one cell; its failure is recorded in it, never raised (but a cancellation is)."""
    case = spec.cases[spec.index[cell.input_id]]
    cell.case = case
    started = time.perf_counter()
    try:
        try:
            trace, cell.output, cell.findings = await _attempt(spec, cell, case, ready)
        except Exception as exc:  # most cells succeed at once: no retry machinery for them
            if spec.retries == 0 or not retryable(exc):
                raise
            trace, cell.output, cell.findings = await _retried(spec, cell, case, ready)
    except asyncio.TimeoutError:
        cell.status, cell.error_type = "timeout", "TimeoutError"
        cell.error = f"the cell took longer than timeout={spec.timeout} s and was stopped"
    except Exception as exc:  # the cell failed: recorded, and the others go on
        cause = exc.__cause__ if isinstance(exc, StepFailed) and exc.__cause__ is not None else exc
        cell.status, cell.error_type = "failed", type(cause).__name__  # what failed, not the step that carried it
        cell.error = str(exc) or repr(exc)
    else:
        cell._trace = trace
        measure(cell, trace)
    cell.latency_s = time.perf_counter() - started
    if cell.status == "ok":
        await _score(spec, cell)
        if spec.keep_traces:
            cell.detail = dump_trace(trace)
        cell._trace = None  # the live trace is let go: a finished cell holds numbers and its JSON only
    return cell


async def _attempt(
    spec: Spec, cell: Cell, case: Case, ready: ReadyWorkflow | None
) -> tuple[Trace, str, dict[str, int]]:
    """One try of the cell, within its ``timeout``: a target built for it, or the ready workflow prepared."""
    if ready is None:
        play = _play(make_target(spec, cell.config, case), case, None)
        return await (play if spec.timeout is None else asyncio.wait_for(play, spec.timeout))
    async with ready.lock:
        options = ready.prepare(cell.config)
        play = _play(ready.workflow, case, options or None)
        return await (play if spec.timeout is None else asyncio.wait_for(play, spec.timeout))


async def _retried(
    spec: Spec, cell: Cell, case: Case, ready: ReadyWorkflow | None
) -> tuple[Trace, str, dict[str, int]]:
    """The cell tried again with exponential backoff (tenacity), after a first try failed retryably."""
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

    await asyncio.sleep(spec.retry_wait)  # the first wait; tenacity doubles the next ones, with jitter

    retrying = AsyncRetrying(
        stop=stop_after_attempt(spec.retries),  # the first attempt was made before
        wait=wait_exponential_jitter(multiplier=spec.retry_wait, jitter=spec.retry_wait, max=30.0),
        retry=retry_if_exception(retryable),
        reraise=True,
    )
    async for trying in retrying:
        with trying:
            cell.attempts = trying.retry_state.attempt_number + 1
            return await _attempt(spec, cell, case, ready)
    raise AssertionError("unreachable: tenacity returns or raises")


def retryable(exc: BaseException) -> bool:
    """Whether ``exc``, or an error it was raised from (a step failed as its model did), may pass if tried again."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        if getattr(error, "retryable", False):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


async def _score(spec: Spec, cell: Cell) -> None:
    for name, scorer in spec.named_scorers:
        try:
            value = scorer(cell)
            if value is None or type(value) is bool:  # a pass or a fail, the common case
                cell.scores[name] = value
                continue
            if inspect.isawaitable(value):
                value = await value
            scores = {f"{name}.{k}": _plain_score(v) for k, v in value.items()} if isinstance(value, Mapping) else {}
            scores = scores or {name: _plain_score(value)}
        except Exception as exc:  # a scorer that raised: no score for this cell, and why
            cell.scores[name] = None
            cell.score_errors[name] = f"{type(exc).__name__}: {exc}"
        else:
            cell.scores.update(scores)


def _plain_score(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    raise ArgumentError(
        f"a score must be a bool, a number, a dict of those, or None; got {type(value).__name__}", argument="scorer"
    )
