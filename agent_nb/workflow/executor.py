"""Executors: the nodes of a workflow graph, and the context they run in.

A handler is an ``async def`` method marked with ``@handler``; the type hint of its
message parameter decides which messages it takes, and the hint of its context
(``WorkflowContext[SentType, OutputType]``) declares what it sends, so ``build()``
can reject edges whose types cannot match.

```python
class Upper(Executor):
    @handler
    async def shout(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())
```
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, get_args, get_origin

from typing_extensions import TypeVar

from ..errors import ArgumentError, InputTypeError, bad_argument
from ..trace import ContextSnapshot
from ._types import TypeTest, compile_type, flatten, is_never, type_name
from .events import WorkflowWarning

if TYPE_CHECKING:
    from .runner import _Run

__all__ = ["Executor", "FunctionExecutor", "WorkflowContext", "executor", "handler"]

SendT = TypeVar("SendT", default=Any)
OutT = TypeVar("OutT", default=Any)
_HANDLER_MARK = "_agent_nb_handler"


RECORDED = frozenset(f for f in ContextSnapshot.__dataclass_fields__) - {
    "executor_id",
    "superstep",
    "index",
    "received",
    "sent",
    "outputs",
    "started",
    "at",
    "duration",
    "error",
    "requested",
}
"""The fields of its trace record an executor writes (``record_context``); the runner writes the others."""


class WorkflowContext(Generic[SendT, OutT]):
    """What a handler may do during its invocation: send messages on, yield outputs, read run settings.

    One context is made per invocation. Its type parameters declare what the handler
    sends (``SendT``) and yields as workflow output (``OutT``).
    """

    __slots__ = (
        "_order",
        "_outputs",
        "_record",
        "_requested",
        "_run",
        "_sent",
        "_updates",
        "executor_id",
        "superstep",
    )

    def __init__(self, run: _Run, record: Any, order: tuple[int, int] = (0, 0)) -> None:
        self._run = run
        self._record = record
        """This invocation's ``OpenSnapshot``: what it records goes straight into its trace record."""
        self.executor_id: str = record.executor_id
        self.superstep: int = record.superstep
        self._order = order
        """(the executor's rank in the superstep, this invocation's number): where what it sends goes."""
        self._sent: list[Any] = []
        self._outputs: list[Any] = []
        self._updates: dict[str, Any] | None = None  # made by the first set_state (most invocations set none)
        self._requested: tuple[str, ...] = ()

    async def send_message(self, message: Any, target_id: str | None = None) -> None:
        """Deliver ``message`` in the next superstep along this executor's edges (or to ``target_id`` only)."""
        self._send(message, target_id)

    async def yield_output(self, value: Any) -> None:
        """Make ``value`` an output of the workflow run."""
        self._output(value)

    def _send(self, message: Any, target_id: str | None = None) -> None:
        """``send_message`` without a coroutine: agent_nb's own executors call it once or more per invocation."""
        self._sent.append(self._run.route(self.executor_id, message, target_id, self._order))

    def _output(self, value: Any) -> None:
        """``yield_output`` without a coroutine."""
        self._outputs.append(value)
        self._run.output(self.executor_id, value)

    def get_state(self, key: str, default: Any = None) -> Any:
        """A value of the run's shared state: this invocation's own updates first, then the state as it stood."""
        updates = self._updates
        if updates is not None and key in updates:
            return updates[key]
        return self._run.state.get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        """Set a value of the run's shared state.

        The other executors see it from the next superstep on; a failed run keeps none of it.
        Store immutable values (tuples, frozen models): the state is shared, never copied.
        """
        if self._updates is None:
            self._updates = {}
        self._updates[key] = value

    def request_info(self, data: Any, response_type: Any = Any) -> str:
        """Ask for input; returns the request's id.

        The run goes on with the other executors and ends ``"waiting"``; its
        ``pending_requests`` list the request. ``workflow.run(responses={id: value})``
        then delivers ``RequestResponse(id, data, value)`` to this executor, once ``value``
        is checked against ``response_type``. Pending requests are kept in checkpoints.
        """
        request_id = self._run.request(self.executor_id, data, response_type)
        self._requested += (request_id,)
        return request_id

    def is_streaming(self) -> bool:
        """Whether the run was started with ``stream=True``."""
        return self._run.streaming

    @property
    def client_kwargs(self) -> dict[str, Any]:
        """The run's ``client_kwargs`` for this executor (the ``"*"`` entry merged under its own)."""
        return self._run.kwargs_for("client_kwargs", self.executor_id)

    @property
    def function_invocation_kwargs(self) -> dict[str, Any]:
        """The run's ``function_invocation_kwargs`` for this executor."""
        return self._run.kwargs_for("function_invocation_kwargs", self.executor_id)

    def warn(self, message: str) -> None:
        """Say that this invocation went less well than asked: a ``warning`` event now, and on its record."""
        record = self._record
        record.warnings = (*record.warnings, message)
        self._run.emit(WorkflowWarning(message))

    def record_context(self, fields: dict[str, Any] | None = None, /, **more: Any) -> None:
        """Record what this invocation had in its active context, for the trace.

        Fields are those of ``ContextSnapshot``: ``kind``, ``context_mode``, ``kept``,
        ``dropped``, ``given``, ``cached``, ``response``; pass them as a dict, as keywords, or both.
        """
        record = self._record
        for values in (fields, more) if fields else (more,):
            for name, value in values.items():
                if name not in RECORDED:
                    raise bad_argument(
                        f"executor {self.executor_id!r}: record_context()",
                        name,
                        value,
                        f"record one of the fields of ContextSnapshot: {', '.join(sorted(RECORDED))}",
                    )
                setattr(record, name, value)


@dataclass(frozen=True, slots=True)
class _HandlerSpec:
    name: str
    accepts: Any
    test: TypeTest
    sends: tuple[Any, ...] | None
    """Declared types of sent messages; ``None`` when undeclared."""
    yields: tuple[Any, ...] | None


def handler(fn: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """Mark an ``async def`` method of an ``Executor`` as a message handler."""
    if not inspect.iscoroutinefunction(fn):
        raise ArgumentError(f"@handler {fn.__qualname__} must be an 'async def' function", argument="fn")
    setattr(fn, _HANDLER_MARK, True)
    return fn


def _context_types(hint: Any) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
    if get_origin(hint) is not WorkflowContext:
        return None, None
    args = get_args(hint)

    def declared(i: int) -> tuple[Any, ...] | None:
        if len(args) <= i or args[i] is Any:
            return None
        return () if is_never(args[i]) else flatten(args[i])

    return declared(0), declared(1)


def _spec_of(fn: Callable[..., Any], *, owner: str, skip_self: bool) -> _HandlerSpec:
    params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0 :]
    if len(params) != 2:
        raise ArgumentError(
            f"handler {owner} must take (message, ctx); it takes {len(params)} parameters", argument="fn"
        )
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:
        raise ArgumentError(f"handler {owner}: cannot resolve its type hints ({exc})", argument="fn") from exc
    message, ctx = params
    if message.name not in hints:
        raise ArgumentError(
            f"handler {owner}: annotate the type of {message.name!r} so messages can be routed to it", argument="fn"
        )
    sends, yields = _context_types(hints.get(ctx.name))
    return _HandlerSpec(fn.__name__, hints[message.name], compile_type(hints[message.name]), sends, yields)


class Executor:
    """A node of a workflow graph: it receives typed messages and may send and yield.

    Subclasses add ``@handler`` methods. An executor that keeps state between runs
    overrides ``snapshot_state`` and ``restore_state``, so that a failed run leaves
    nothing behind.
    """

    kind = "executor"
    _specs_cache: tuple[_HandlerSpec, ...] | None = None

    def __init__(self, id: str) -> None:
        if not isinstance(id, str) or not id:
            raise bad_argument(type(self).__name__, "id", id, "give a non-empty str")
        self.id = id

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._specs_cache = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (an experiment sent to a cluster) without the link to its workflow, which is made again."""
        state = dict(self.__dict__)
        state.pop("_workflow", None)
        return state

    @property
    def handler_specs(self) -> tuple[_HandlerSpec, ...]:
        """The handlers: a subclass's first, each class's in definition order; an override replaces."""
        cls = type(self)
        if cls._specs_cache is None:
            specs, seen = [], set()
            for klass in cls.__mro__:
                for name, fn in vars(klass).items():
                    if name in seen:
                        continue
                    seen.add(name)
                    if getattr(fn, _HANDLER_MARK, False):
                        specs.append(_spec_of(fn, owner=f"{cls.__name__}.{name}", skip_self=True))
            cls._specs_cache = tuple(specs)
        return cls._specs_cache

    def accepted_types(self) -> tuple[Any, ...]:
        return tuple(s.accepts for s in self.handler_specs)

    def sent_types(self) -> tuple[Any, ...] | None:
        """What the handlers declare they send, or ``None`` if any handler does not declare it."""
        out: tuple[Any, ...] = ()
        for spec in self.handler_specs:
            if spec.sends is None:
                return None
            out += spec.sends
        return tuple(dict.fromkeys(out))

    def _find_spec(self, message: Any) -> _HandlerSpec | None:
        """The first handler that takes ``message``; the candidates are planned once per message type.

        When the first candidate takes the whole type (no look at the items of a list), the plan is
        that handler itself: the type alone answers.
        """
        kind = type(message)
        plans: dict[type, _HandlerSpec | tuple[_HandlerSpec, ...]] | None = self.__dict__.get("_plans")
        if plans is None:
            plans = self.__dict__["_plans"] = {}  # here, not in __init__: subclasses need not call it
        plan = plans.get(kind)
        if plan is None:
            candidates = tuple(s for s in self.handler_specs if issubclass(kind, s.test.covers))
            plan = plans[kind] = candidates[0] if candidates and candidates[0].test.exact else candidates
        if isinstance(plan, _HandlerSpec):
            return plan
        for spec in plan:
            if spec.test.exact or spec.test.check(message):
                return spec
        return None

    def _find_handler(self, message: Any) -> Callable[[Any, WorkflowContext[Any, Any]], Awaitable[None]] | None:
        spec = self._find_spec(message)
        return None if spec is None else getattr(self, spec.name)

    def can_handle(self, message: Any) -> bool:
        return self._find_spec(message) is not None

    def type_error(self, message: Any) -> InputTypeError:
        accepted = tuple(type_name(t) for t in self.accepted_types())
        return InputTypeError(
            f"executor {self.id!r} cannot take a {type(message).__name__} ({message!r:.60}); "
            f"it accepts: {', '.join(accepted) or 'nothing (it has no handlers)'}",
            executor_id=self.id,
            accepted=accepted,
        )

    def snapshot_state(self) -> dict[str, Any]:
        """What this executor holds between runs (immutable values; cheap to take)."""
        return {}

    def restore_state(self, state: dict[str, Any]) -> None:
        """Go back to a state taken with ``snapshot_state`` (or with ``checkpoint_state``, from a checkpoint)."""

    def checkpoint_state(self) -> dict[str, Any]:
        """What a checkpoint stores of this executor: ``snapshot_state()``, unless a subclass needs less."""
        return self.snapshot_state()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"


class FunctionExecutor(Executor):
    """An executor made of one ``async def fn(message, ctx)`` function."""

    kind = "function"

    def __init__(
        self, fn: Callable[[Any, WorkflowContext[Any, Any]], Awaitable[None]], *, id: str | None = None
    ) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise bad_argument("FunctionExecutor", "fn", fn, "give an 'async def' function of (message, ctx)")
        super().__init__(id or fn.__name__)
        self.fn = fn
        self._spec = _spec_of(fn, owner=f"function {fn.__name__!r}", skip_self=False)

    @property
    def handler_specs(self) -> tuple[_HandlerSpec, ...]:
        return (self._spec,)

    def _find_handler(self, message: Any) -> Callable[[Any, WorkflowContext[Any, Any]], Awaitable[None]] | None:
        return self.fn if self._find_spec(message) is not None else None


def executor(
    fn: Callable[[Any, WorkflowContext[Any, Any]], Awaitable[None]] | None = None, *, id: str | None = None
) -> Any:
    """Turn an ``async def fn(message, ctx)`` into a ``FunctionExecutor``: ``@executor`` or ``@executor(id=...)``."""
    if fn is None:
        return lambda f: FunctionExecutor(f, id=id)
    return FunctionExecutor(fn, id=id)
