"""Reading a streamed response to its end: ``_Reader`` (in a task of its own) and ``_close_stream``.

However a stream ends (done, failed, or left early by the caller), its response is closed and the
SDK's generators run to their end, never left for the event loop to close at shutdown.
"""

from __future__ import annotations

from typing import Any

_END: Any = object()
_FAILED: Any = object()


class _Reader:
    """Reads a streamed response in a task of its own, at most one event ahead of the caller.

    Read in the caller's task, the SDK's generators (and httpx's under them) stay suspended
    whenever the caller stops early; the event loop closes such generators when it shuts down,
    all at once, and they collide ("aclose(): asynchronous generator is already running"). A
    task is cancelled before that, and its generators run to their end inside it. The task
    never ends with an error of its own (an error is handed to the caller), so no "Task
    exception was never retrieved" either.
    """

    def __init__(self, source: Any) -> None:
        import asyncio

        self._queue: asyncio.Queue[tuple[Any, Any]] = asyncio.Queue(maxsize=1)
        self._task = asyncio.get_running_loop().create_task(self._read(source))
        self._over = False
        """Whether the last event (or the error) was handed over: the task then ends by itself."""

    async def _read(self, source: Any) -> None:
        events = None
        try:
            events = source.__aiter__()
            async for event in events:
                await self._queue.put((event, None))
            await self._queue.put((_END, None))
        except Exception as exc:
            await self._queue.put((_FAILED, exc))
        finally:
            await _close_stream(source, events)

    async def next(self) -> Any:
        """The next event, ``_END`` after the last; the stream's own error is raised here."""
        event, error = await self._queue.get()
        self._over = event is _END or event is _FAILED
        if event is _FAILED:
            raise error
        return event

    async def close(self) -> None:
        """Stop reading (if it has not stopped) and wait until the response is closed."""
        import asyncio

        if not self._task.done():
            if not self._over:
                self._task.cancel()  # else it is closing the response now: let it finish
            await asyncio.wait({self._task})  # raises only if the caller itself is cancelled
        if not self._task.cancelled():
            self._task.exception()  # retrieved: never reported as lost


async def _close_stream(source: Any, events: Any) -> None:
    """Close a streamed response, then run the SDK's generators to their end (at once: the response is closed).

    Left suspended, they would be closed by the event loop's finalizer, possibly as the loop
    shuts down and all at once ("aclose(): asynchronous generator is already running").
    """
    if source is None:
        return
    try:
        response = getattr(source, "response", None)
        if response is not None and hasattr(response, "aclose"):
            await response.aclose()
        elif hasattr(source, "close"):
            await source.close()
    except Exception:  # closing is best effort: the caller's own error matters more
        pass
    if events is not None:
        try:
            async for _ in events:
                pass
        except Exception:  # a closed response ends its stream with an error: expected
            pass
