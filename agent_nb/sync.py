"""Running coroutines: to completion from synchronous code (a script, a Jupyter cell), and together.

``gather_or_cancel`` runs several at once and, when one fails, cancels the others and waits
for them, so nothing a failed step started runs on behind it (an executor of a superstep,
a tool call of a round).
"""

from __future__ import annotations

import contextvars
import sys
import threading
import types
from collections.abc import Awaitable, Coroutine, Generator, Iterable
from types import CoroutineType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

__all__ = ["gather_or_cancel", "run_sync"]

_lock = threading.Lock()
_background: asyncio.AbstractEventLoop | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """One loop, in a daemon thread, for every ``run_sync`` made inside a running loop."""
    import asyncio

    global _background
    with _lock:
        if _background is None or _background.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="agent_nb.run_sync", daemon=True).start()
            _background = loop
        return _background


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` and return its result.

    With no event loop running (a script) this is ``asyncio.run``. Inside a running loop (a
    Jupyter cell) the coroutine runs on agent_nb's own loop in a background thread while the
    caller waits; it is the same loop every time, so a client keeps its connections from one
    call to the next. (Re-entering the kernel's loop instead, as nest_asyncio does, lets the
    kernel start the next queued cell in the middle of this one, which breaks "Run All".)
    In a notebook ``await`` is still the better call; use one or the other with a given client.
    """
    import asyncio  # imported on use, as everywhere in agent_nb: `import agent_nb` stays light

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    future = asyncio.run_coroutine_threadsafe(coro, _loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()  # interrupted (Ctrl-C, a kernel interrupt): do not leave it running
        raise


async def gather_or_cancel(coros: Iterable[Awaitable[T]]) -> list[T]:
    """Their results, run concurrently; on the first failure the others are cancelled and awaited, then it is raised.

    On Python 3.11+ coroutines start eagerly, each in a context of its own: those that finish
    without waiting cost no task at all. The first that waits goes on in the caller's task (it
    began there, so ``asyncio.current_task()``, a timeout or a cancel scope it entered stay
    right), and those after it start then, each as a task. A task that fails cancels the others,
    and the caller's task while it drives the waiting one, so a failure is acted on at once.
    Otherwise (Python 3.10, awaitables that are not coroutines) each runs as a task.
    """
    import asyncio

    awaitables: list[Any] = list(coros)
    if _EAGER and all(type(a) is CoroutineType for a in awaitables):
        base = contextvars.copy_context()  # as it is before any of them ran: each gets a copy of its own
        results: list[T] = []
        for i, coro in enumerate(awaitables):
            context = base.copy()
            try:
                waiting = context.run(coro.send, None)
            except StopIteration as done:
                results.append(done.value)
                continue
            except BaseException:
                for later in awaitables[i + 1 :]:
                    later.close()  # never started: the others are not run
                raise
            return [*results, *await _Together().go_on(coro, waiting, context, awaitables[i + 1 :], base)]
        return results
    loop = asyncio.get_running_loop()
    together = _Together()
    tasks = together.tasks = [loop.create_task(together.run(c)) for c in awaitables]
    try:
        return [await task for task in tasks]
    except BaseException as exc:
        await together.stop(exc, awaitables)
        error = together.error
        if error is None:
            raise
    raise error  # the first failure as it was (raised out here, its __context__ is left alone)


_EAGER = sys.version_info >= (3, 11)  # create_task(context=), Task.cancelling() and Task.uncancel()


class _Together:
    """Coroutines run together: the first to fail (or be cancelled from elsewhere) cancels the others."""

    __slots__ = ("caller", "cancelled_caller", "driving", "error", "tasks")

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.tasks: list[asyncio.Task[Any]] = []
        self.caller: asyncio.Task[Any] | None = None
        self.driving = False
        """Whether the caller's task is driving a coroutine on (then a failing task cancels it too)."""
        self.cancelled_caller = False

    async def run(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        except BaseException as exc:
            if self.error is None:
                self.error = exc
                import asyncio

                me = asyncio.current_task()
                for task in self.tasks:
                    if task is not me:  # cancelling itself would turn its own error into a cancellation
                        task.cancel()
                if self.driving and self.caller is not None:
                    self.cancelled_caller = True
                    self.caller.cancel()
            raise

    async def go_on(
        self, coro: Coroutine[Any, Any, T], waiting: Any, context: contextvars.Context, rest: list[Any], base: Any
    ) -> list[T]:
        """``coro`` waits: it goes on in this task, and ``rest`` start now, each as a task (in a copy of ``base``)."""
        import asyncio

        loop = asyncio.get_running_loop()
        self.caller = asyncio.current_task()
        self.tasks = [loop.create_task(self.run(c), context=base.copy()) for c in rest]  # type: ignore[call-arg]
        self.driving = True
        try:
            first = await _drive(coro, waiting, context)
            self.driving = False
            return [first, *[await task for task in self.tasks]]
        except BaseException as exc:
            self.driving = False
            if self.error is None:
                self.error = exc  # the driven coroutine failed first: its error, not the cancellations it causes
            await self.stop(exc, rest)
            error = self.error
            if error is exc:
                raise
        raise error

    async def stop(self, exc: BaseException, awaitables: list[Any]) -> None:
        """Cancel and await the tasks; raise a cancellation if the caller was cancelled from outside."""
        import asyncio

        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for awaitable in awaitables:  # a task cancelled before it began never awaited its coroutine
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()  # (every task is over: a coroutine is done or never started, so this only closes it)
        caller = asyncio.current_task()
        if self.cancelled_caller and caller is not None:
            self.cancelled_caller = False
            caller.uncancel()  # type: ignore[attr-defined]  # ours (to stop the coroutine it drove), not the caller's
        cancelling = getattr(caller, "cancelling", None)  # Python 3.11+
        if cancelling is not None and cancelling():  # cancelled from outside: a cancellation, whatever the tasks did
            if isinstance(exc, asyncio.CancelledError):
                raise exc
            raise asyncio.CancelledError from exc


@types.coroutine
def _drive(coro: Coroutine[Any, Any, T], waiting: Any, context: contextvars.Context) -> Generator[Any, Any, T]:
    """Drive ``coro`` on from where it waits, each step in its own ``context``, in the task that awaits this."""
    while True:
        try:
            sent = yield waiting
        except BaseException as exc:  # thrown in by the task: a cancellation
            try:
                waiting = context.run(coro.throw, exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        else:
            try:
                waiting = context.run(coro.send, sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
