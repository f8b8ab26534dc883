"""``WorkflowRunStream``: the events of one streaming run, and what happens when it is left early.

A streamed run goes on in its own task and hands its events over as they happen. Leaving it
early stops the run and rolls it back — every executor, session and history as before —
and frees the workflow:

- ``await stream.aclose()``, or the end of ``async with workflow.run(..., stream=True) as stream``;
- dropping the stream (``async for event in workflow.run(...): ... break`` drops it at once);
- ``break`` out of ``async for`` over a stream kept in a variable, then asking the same
  workflow for a new run from the same task: the new run stops the old one first.

Inside ``async with`` the block is the stream's life: a new run of the workflow there is
refused as busy, since the stream may still be read.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .events import WorkflowEvent
from .runner import _Run

if TYPE_CHECKING:
    import asyncio

    from .result import RunResult
    from .workflow import Workflow

__all__ = ["WorkflowRunStream"]

_END = object()


class _Producer:
    """The task that runs the workflow and the queue of its events; it holds no reference to the stream."""

    def __init__(self, run: _Run, execute: Coroutine[Any, Any, RunResult]) -> None:
        import asyncio  # on use: importing agent_nb does not import asyncio

        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        run.also_emit_to(self.queue.put_nowait)
        self.task: asyncio.Task[RunResult] = asyncio.ensure_future(self._produce(execute))

    async def _produce(self, execute: Coroutine[Any, Any, RunResult]) -> RunResult:
        try:
            return await execute
        finally:
            self.queue.put_nowait(_END)

    def cancel(self) -> None:
        """Cancel the run's task (from any thread: a stream may be collected anywhere)."""
        import asyncio

        if self.task.done():
            return
        loop = self.task.get_loop()
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            self.task.cancel()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self.task.cancel)


class WorkflowRunStream:
    """The events of one streaming run, as they happen; ``result`` is set after the last event.

    The run starts with the first ``anext``. See the module's docs for leaving it early.
    """

    def __init__(self, workflow: Workflow, inputs: tuple[Any, ...], plan: dict[str, Any]) -> None:
        self._workflow = workflow
        self._inputs = inputs
        self._plan = plan
        self._producer: _Producer | None = None
        self._consumer: asyncio.Task[Any] | None = None
        self._reading = False
        self._scoped = False
        self._done = False
        self.result: RunResult | None = None

    def __aiter__(self) -> WorkflowRunStream:
        return self

    async def __anext__(self) -> WorkflowEvent:
        import asyncio

        if self._done:
            raise StopAsyncIteration
        if self._producer is None:
            await self._workflow._enter(self)
            run = _Run(self._workflow, streaming=True, emit=None, **self._plan)
            self._producer = _Producer(run, run.execute(self._inputs))
        producer = self._producer
        self._consumer = asyncio.current_task()
        self._reading = True
        try:
            event = await producer.queue.get()
        except BaseException:
            self._reading = False
            await self.aclose()  # the reader was cancelled: so is the run
            raise
        self._reading = False
        if event is not _END:
            return event  # type: ignore[no-any-return]
        self._done = True
        try:
            self.result = await producer.task
        finally:
            self._workflow._leave(self)
        raise StopAsyncIteration

    def left_by(self, task: asyncio.Task[Any] | None) -> bool:
        """Whether ``task``, asking for a new run, has left this stream.

        It has when it is the task that read the stream and is not reading it now (outside
        ``async with``), or when the task that read it has ended.
        """
        if self._scoped or self._reading or self._consumer is None:
            return False
        return task is self._consumer or self._consumer.done()

    async def aclose(self) -> None:
        """Stop the run if it is still going (its executors, sessions and histories go back to before it)."""
        import asyncio

        producer = self._producer
        if producer is None or self._done:
            self._done = True
            return
        self._done = True
        producer.cancel()
        await asyncio.gather(producer.task, return_exceptions=True)
        self._workflow._leave(self)

    def abandon(self) -> asyncio.Task[Any] | None:
        """Stop the run without waiting for it; the task that rolls it back, for the next run to wait on."""
        producer = self._producer
        if producer is None or self._done:
            return None
        self._done = True
        producer.cancel()
        self._workflow._leave(self)
        return producer.task

    async def __aenter__(self) -> WorkflowRunStream:
        self._scoped = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._scoped = False
        await self.aclose()

    def __del__(self) -> None:
        if self._producer is not None and not self._done:
            self._workflow._forget(self.abandon())
