"""What the context-distribution harness costs: turns of a long conversation, and reading it back.

    python bench/harness_bench.py [--quick]

The airline scenario (every kind of component) for 200 turns in each harness: the mean time
per turn over the last 50 turns, then ``find_gaps``, ``who_has`` and the harness view of the
last turn over the whole conversation. One JSON line per harness, then the targets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

from agent_nb.harness import CentralizedHarness, Harness, StandardHarness
from agent_nb.harness.scenarios import tour

REQUESTS = (
    "Is flight AB123 on time?",
    "Where is the lounge?",
    "How many loyalty points does a flight earn?",
    "Book a flight to Paris.",
)


def timed(fn: object, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


async def conversation(kind: type[Harness], turns: int) -> tuple[Harness, float]:
    h = kind(tour().build())
    tail = []
    for i in range(turns):
        t0 = time.perf_counter()
        await h.send(REQUESTS[i % len(REQUESTS)])
        if i >= turns - 50:
            tail.append((time.perf_counter() - t0) * 1000)
    return h, statistics.mean(tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    turns, rounds = (60, 3) if args.quick else (200, 5)
    records = []
    for kind in (StandardHarness, CentralizedHarness):
        h, per_turn = asyncio.run(conversation(kind, turns))
        record = {
            "bench": "harness",
            "harness": kind.__name__,
            "turns": turns,
            "chat_messages": len(h.transcript),
            "snapshots": len(h.trace),
            "turn_ms_last_50": round(per_turn, 2),
            "find_gaps_ms": timed(h.gaps, rounds),
            "who_has_ms": timed(lambda h=h: h.who_has("gate 12"), rounds),  # type: ignore[misc]
            "view_ms": timed(lambda h=h: h.view().html(), rounds),  # type: ignore[misc]
            "gaps_found": len(h.gaps()),
        }
        records.append(record)
        print(json.dumps(record))
    print("# targets")
    for r in records:
        for label, value, target in (
            (f"{r['harness']}: a turn at {turns} turns (ms)", r["turn_ms_last_50"], 10),
            (f"{r['harness']}: find_gaps over the conversation (ms)", r["find_gaps_ms"], 200),
            (f"{r['harness']}: view of the last turn (ms)", r["view_ms"], 200),
        ):
            print(f"# {'PASS' if value <= target else 'FAIL'}  {label} = {value:,}  (target <= {target:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
