"""Routing and history costs: what a routed turn adds, and what a stored turn costs.

    python bench/routing_bench.py [--quick]

Targets: routing adds at most 10 µs per request; a SQLite turn save takes at most 2 ms;
loading a 10,000-message conversation takes at most 50 ms. One JSON line per figure,
then a summary of the targets (lines starting with '#').
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from agent_nb import (
    AgentSession,
    Capabilities,
    ChatResponse,
    InMemoryHistoryProvider,
    Message,
    RoutingChatClient,
    SQLiteHistoryProvider,
)

RECORDS: list[dict[str, Any]] = []


class ConstantClient:
    """A chat client doing O(1) work: what is timed around it is the router.

    Like every agent_nb client it declares its history mode and capabilities.
    """

    history_mode = "caller"
    capabilities = Capabilities()

    def __init__(self) -> None:
        self.answer = ChatResponse([Message("assistant", "ok")])

    async def get_response(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None, *, session: Any = None
    ) -> ChatResponse:
        return self.answer


def emit(bench: str, **fields: Any) -> None:
    rec = {"bench": bench, **{k: round(v, 2) if isinstance(v, float) else v for k, v in fields.items()}}
    RECORDS.append(rec)
    print(json.dumps(rec), flush=True)


def conversation(n: int) -> list[Message]:
    roles = ("user", "assistant")
    return [Message(roles[i % 2], f"message {i:05d}: lorem ipsum dolor sit amet", author_name=None) for i in range(n)]


async def per_call_us(call: Callable[[], Awaitable[Any]], calls: int, rounds: int = 7) -> float:
    """Median over rounds of the mean microseconds per call."""
    for _ in range(calls // 10 + 1):
        await call()
    results = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            await call()
        results.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(results)


async def _turns_us(client: Any, base: list[Message], extra: list[Message], calls: int) -> float:
    """Mean microseconds per request of a conversation that grows by a question and an answer a turn."""
    session = AgentSession()
    grown, requests = list(base), []
    for i in range(calls + 20):
        grown = [*grown, extra[2 * i], extra[2 * i + 1]]
        requests.append(grown)
    for r in requests[:20]:  # warm-up (a router learns the conversation)
        await client.get_response(r, None, session=session)
    t0 = time.perf_counter()
    for r in requests[20:]:
        await client.get_response(r, None, session=session)
    return (time.perf_counter() - t0) / calls * 1e6


async def bench_routing(calls: int, rounds: int = 7) -> None:
    """A turn's overhead: each request is the previous one plus the new question and answer.

    Direct and routed rounds alternate, so a slow spell of the machine hits both; the figure
    is the median over rounds of routed minus direct. ``cold_check_us`` is the first check
    of a conversation the router has not seen (its whole length).
    """
    inner = ConstantClient()
    router = RoutingChatClient({"a": inner})
    for n in (10, 100, 1000):
        base, extra = conversation(n), conversation(2 * calls + 40)
        overheads = []
        for _ in range(rounds):
            direct = await _turns_us(inner, base, extra, calls)
            routed = await _turns_us(router, base, extra, calls)
            overheads.append(routed - direct)
        cold = await per_call_us(partial(router.get_response, base, None, session=None), 50)
        emit("routing", messages=n, overhead_us=statistics.median(overheads), overhead_us_min=min(overheads),
             cold_check_us=cold)  # fmt: skip


async def bench_history(turns: int, load_size: int) -> None:
    turn = [Message("user", "a question of a few words"), Message("assistant", "an answer of a few more words")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.sqlite"
        provider = SQLiteHistoryProvider(path)
        session = AgentSession("long")
        await provider.save(session, conversation(load_size))
        saves = []
        for _ in range(turns):
            t0 = time.perf_counter()
            await provider.save(session, turn)
            saves.append((time.perf_counter() - t0) * 1000)
        emit("history", store="sqlite", what="save_turn", prior_messages=load_size, ms_median=statistics.median(saves),
             ms_max=max(saves))  # fmt: skip
        loads = []
        for _ in range(9):
            fresh = SQLiteHistoryProvider(path)  # as after a restart: nothing cached
            t0 = time.perf_counter()
            loaded = await fresh.load(session)
            loads.append((time.perf_counter() - t0) * 1000)
            fresh.close()
        assert len(loaded) == load_size + 2 * turns
        emit("history", store="sqlite", what="load", messages=len(loaded), ms_median=statistics.median(loads),
             ms_min=min(loads))  # fmt: skip
        emit("history", store="sqlite", what="file_bytes", messages=len(loaded), bytes=path.stat().st_size
             + Path(f"{path}-wal").stat().st_size if Path(f"{path}-wal").exists() else path.stat().st_size)  # fmt: skip
        provider.close()
    memory, s = InMemoryHistoryProvider(), AgentSession()
    await memory.save(s, conversation(load_size))
    t0 = time.perf_counter()
    await InMemoryHistoryProvider().load(s)
    emit("history", store="memory", what="load_uncached", messages=load_size, ms=(time.perf_counter() - t0) * 1000)


def machine_ns_per_loop() -> float:
    """A fixed pure-Python loop: the machine's speed at the time (shared machines have slow spells)."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200_000):
            pass
        best = min(best, (time.perf_counter() - t0) / 200_000 * 1e9)
    return best


def summary() -> None:
    rows = []
    for r in RECORDS:
        if r["bench"] == "routing":
            label = f"routing overhead, {r['messages']} messages (us, median; min {r['overhead_us_min']})"
            rows.append((label, r["overhead_us"], 10.0))
        elif r.get("what") == "save_turn":
            rows.append((f"sqlite turn save after {r['prior_messages']} messages (ms, median)", r["ms_median"], 2.0))
        elif r.get("what") == "load" and r["store"] == "sqlite":
            rows.append((f"sqlite load of {r['messages']} messages (ms, median)", r["ms_median"], 50.0))
    print(f"# machine speed: an empty loop iteration takes {machine_ns_per_loop():.1f} ns")
    print("# targets")
    for label, value, target in rows:
        print(f"# {'PASS' if value <= target else 'FAIL'}  {label} = {value:,.2f}  (target <= {target})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    asyncio.run(bench_routing(50 if args.quick else 200))
    asyncio.run(bench_history(20 if args.quick else 100, 10_000))
    summary()
    print(f"# total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
