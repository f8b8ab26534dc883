"""``gather_or_cancel``: together, in order, and a failure stops the others at once."""

from __future__ import annotations

import asyncio
import contextvars
import sys

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


# -- Python 3.11+: an eager start ----------------------------------------------------------------

eager = pytest.mark.skipif(sys.version_info < (3, 11), reason="the eager start needs Python 3.11")


def _counting_tasks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    loop = asyncio.get_running_loop()
    made: list[object] = []
    create = loop.create_task

    def counted(coro, **kwargs):  # type: ignore[no-untyped-def]
        made.append(coro)
        return create(coro, **kwargs)

    monkeypatch.setattr(loop, "create_task", counted)
    return made


@eager
async def test_coroutines_that_do_not_wait_cost_no_task(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting_tasks(monkeypatch)

    async def at_once(i: int) -> int:
        return i * 10

    assert await gather_or_cancel([at_once(1), at_once(2), at_once(3)]) == [10, 20, 30]
    assert made == []


@eager
async def test_the_first_that_waits_goes_on_in_the_callers_task_and_the_later_ones_become_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = _counting_tasks(monkeypatch)
    caller = asyncio.current_task()
    seen: dict[str, object] = {}
    second_ran = asyncio.Event()

    async def waits() -> str:
        seen["before"] = asyncio.current_task()
        await second_ran.wait()  # the later one runs meanwhile: they are together
        seen["after"] = asyncio.current_task()
        return "waited"

    async def later() -> str:
        seen["later"] = asyncio.current_task()
        second_ran.set()
        return "later"

    async with asyncio.timeout(5):  # (not wait_for: it would run the call in a task of its own)
        assert await gather_or_cancel([waits(), later()]) == ["waited", "later"]
    assert len(made) == 1  # the later one's
    assert seen["before"] is seen["after"] is caller
    assert seen["later"] is not caller


@eager
async def test_a_timeout_inside_the_driven_one_is_its_own_and_leaves_the_caller_uncancelled() -> None:
    async def times_out() -> str:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(30)
        except TimeoutError:
            return "timed out"
        return "not timed out"

    async def quick() -> str:
        return "quick"

    assert await asyncio.wait_for(gather_or_cancel([times_out(), quick()]), 5) == ["timed out", "quick"]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


@eager
async def test_a_later_failure_stops_the_driven_one_at_once_and_leaves_the_caller_uncancelled() -> None:
    stopped = asyncio.Event()

    async def waits_long() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise

    async def fails() -> None:
        await asyncio.sleep(0)
        raise LookupError("later failed")

    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(LookupError, match="later failed"):
        await gather_or_cancel([waits_long(), fails()])
    assert loop.time() - start < 5 and stopped.is_set()
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    await asyncio.sleep(0)  # the caller can go on awaiting: no cancellation left pending on it


@eager
async def test_each_runs_in_a_context_of_its_own() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")
    seen: dict[str, str] = {}

    async def sets_and_waits() -> None:
        var.set("first")  # never reset: it must not leak to the others, nor to the caller
        await asyncio.sleep(0)
        seen["first after its wait"] = var.get()

    async def reads() -> None:
        seen["second"] = var.get()
        var.set("second")

    async def reads_too() -> None:
        seen["third"] = var.get()

    await gather_or_cancel([sets_and_waits(), reads(), reads_too()])
    assert seen == {"first after its wait": "first", "second": "caller", "third": "caller"}
    assert var.get() == "caller"


@eager
async def test_a_failure_before_any_wait_leaves_the_later_ones_unstarted_and_closed() -> None:
    ran: list[str] = []

    async def fails() -> None:
        raise KeyError("at once")

    async def later() -> None:
        ran.append("later")

    never = later()
    with pytest.raises(KeyError):
        await gather_or_cancel([fails(), never])
    assert ran == [] and never.cr_frame is None
