"""``gather_or_cancel``: together, in order, and a failure stops the others at once."""

from __future__ import annotations

import asyncio

import pytest

from agent_nb.sync import gather_or_cancel


async def test_they_run_together_and_their_results_come_in_the_order_given() -> None:
    first_waits = asyncio.Event()

    async def first() -> str:
        await first_waits.wait()  # only the second can set it: run one after the other, this never ends
        return "first"

    async def second() -> str:
        first_waits.set()
        return "second"

    assert await asyncio.wait_for(gather_or_cancel([first(), second()]), 5) == ["first", "second"]


async def test_a_failure_cancels_an_earlier_one_still_waiting_at_once_and_is_raised_as_it_was() -> None:
    cancelled = asyncio.Event()
    cause = KeyError("the cause")

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def fails() -> None:
        await asyncio.sleep(0)
        try:
            raise cause
        except KeyError as exc:
            raise ValueError("refused") from exc

    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(ValueError, match="refused") as raised:
        await gather_or_cancel([slow(), fails()])
    assert loop.time() - start < 5  # not after the slow one's 30 seconds
    assert cancelled.is_set()
    assert raised.value.__cause__ is cause
    assert raised.value.__context__ is cause  # not replaced by the cancellation it caused


async def test_the_first_failure_is_raised_not_the_cancellations_it_caused() -> None:
    async def fails_first() -> None:
        raise RuntimeError("first")

    async def fails_later() -> None:
        await asyncio.sleep(0.05)
        raise RuntimeError("later")

    with pytest.raises(RuntimeError, match="first"):
        await gather_or_cancel([fails_later(), fails_first()])


async def test_cancelling_the_caller_cancels_every_one_and_stays_a_cancellation() -> None:
    started, cancelled = [], []

    async def waits(i: int) -> None:
        started.append(i)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    caller = asyncio.ensure_future(gather_or_cancel([waits(0), waits(1), waits(2)]))
    while len(started) < 3:
        await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert sorted(cancelled) == [0, 1, 2]


async def test_a_caller_cancelled_stays_cancelled_even_when_a_task_fails_as_it_is_stopped() -> None:
    started = asyncio.Event()

    async def fails_when_stopped() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise RuntimeError("its clean-up failed") from None

    caller = asyncio.ensure_future(gather_or_cancel([fails_when_stopped()]))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller


async def test_a_coroutine_whose_task_was_cancelled_before_it_began_is_closed_not_left_unawaited() -> None:
    async def fails() -> None:
        raise RuntimeError("at once")

    async def never_begins() -> None:
        await asyncio.sleep(0)

    coroutine = never_begins()
    with pytest.raises(RuntimeError):
        await gather_or_cancel([fails(), coroutine])
    assert coroutine.cr_frame is None  # closed: no "was never awaited" warning when it is collected
