"""What a display costs: the run view, the timeline against chain length, the text against conversation size.

    python bench/display_bench.py [--quick]

Three parts, one JSON line per measurement, then the targets (PASS/FAIL):

- the run view of 32 executors with 1,000 messages each: rendered in at most 200 ms, at most 2 MB of HTML;
- ``timeline_html`` for chains of 10, 100 and 1,000 executors: the time grows linearly (at most 20x
  per 10x more executors; about 10 is linear, 1,000 would be cubic), the 1,000-executor timeline in at
  most 100 ms, and the chain's ``RunResult`` text (its notebook ``text/plain``) at most 100,000 bytes;
- a 3-agent ``full`` chain given 1,000, 10,000 and 100,000 messages: ``RunResult.to_text()`` (the
  notebook's ``text/plain``) at most 100,000 bytes and 50 ms, the run view at most 2 MB and 200 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from agent_nb import AgentExecutor, ChatAgent, EchoChatClient, Message, WorkflowBuilder
from agent_nb.display import run_view, timeline_html
from agent_nb.display.graph import graph_of, graph_svg

CHAINS = (10, 100, 1000)
CONVERSATIONS = (1000, 10_000, 100_000)
TEXT_BYTES = 100_000


async def sample_run() -> object:
    prior = [Message("user" if i % 2 else "assistant", f"message {i:04d} " + "lorem ipsum " * 8) for i in range(1000)]
    executors = [AgentExecutor(ChatAgent(EchoChatClient(), name=f"agent_{i:02d}")) for i in range(32)]
    return await WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build().run(prior)


async def chain_run(n: int, messages: int = 0) -> Any:
    """A ``full`` chain of ``n`` echo agents, given one question or ``messages`` prior messages."""
    prior = [
        Message("user" if (messages - 1 - i) % 2 == 0 else "assistant", f"message {i:06d} " + "lorem ipsum " * 8)
        for i in range(messages)
    ]
    executors = [AgentExecutor(ChatAgent(EchoChatClient(), name=f"agent_{i:04d}")) for i in range(n)]
    workflow = WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build()
    return await workflow.run(prior or "Plan a rainy Sunday")


def timed_ms(fn: Callable[[], Any], rounds: int, budget_s: float = 2.0) -> tuple[float, Any]:
    """The median milliseconds of up to ``rounds`` calls (fewer once ``budget_s`` is spent), and the last value."""
    times: list[float] = []
    value: Any = None
    spent = 0.0
    while len(times) < rounds and (not times or spent < budget_s):
        t0 = time.perf_counter()
        value = fn()
        times.append((time.perf_counter() - t0) * 1000)
        spent += times[-1] / 1000
    return statistics.median(times), value


def emit(record: dict[str, Any]) -> dict[str, Any]:
    print(json.dumps(record), flush=True)
    return record


def check(label: str, value: float, target: float, unit: str = "") -> bool:
    ok = value <= target
    shown = f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"
    print(f"# {'PASS' if ok else 'FAIL'}  {label} = {shown}{unit}  (target <= {target:,}{unit})")
    return ok


def run_view_part(rounds: int) -> dict[str, Any]:
    result: Any = asyncio.run(sample_run())
    given = sum(len(s.given or ()) for s in result.trace)
    view_ms, html = timed_ms(lambda: run_view(result), rounds, budget_s=10)
    graph_ms, _ = timed_ms(lambda: graph_svg(graph_of(result.workflow, result.trace)), rounds)
    timeline_ms, _ = timed_ms(lambda: timeline_html(result.trace), rounds)
    return emit(
        {
            "bench": "display",
            "executors": 32,
            "messages_given": given,
            "run_view_ms_median": round(view_ms, 1),
            "run_view_bytes": len(html.encode()),
            "graph_ms_median": round(graph_ms, 2),
            "timeline_ms": round(timeline_ms, 2),
        }
    )


def timeline_part(rounds: int) -> list[dict[str, Any]]:
    records = []
    for n in CHAINS:
        result = asyncio.run(chain_run(n))
        ms, html = timed_ms(lambda r=result: timeline_html(r.trace), rounds * 4)
        text_ms, text = timed_ms(result.to_text, rounds)
        records.append(
            emit(
                {
                    "bench": "display_timeline",
                    "executors": n,
                    "snapshots": len(result.trace),
                    "timeline_ms_median": round(ms, 3),
                    "timeline_bytes": len(html.encode()),
                    "text_plain_ms_median": round(text_ms, 2),
                    "text_plain_bytes": len(text.encode()),
                }
            )
        )
    return records


def size_part(rounds: int) -> list[dict[str, Any]]:
    records = []
    for m in CONVERSATIONS:
        result = asyncio.run(chain_run(3, m))
        text_ms, text = timed_ms(result.to_text, rounds)
        html_ms, html = timed_ms(lambda r=result: run_view(r), rounds)
        records.append(
            emit(
                {
                    "bench": "display_size",
                    "executors": 3,
                    "messages": m,
                    "messages_given": sum(len(s.given or ()) for s in result.trace),
                    "text_plain_ms_median": round(text_ms, 2),
                    "text_plain_bytes": len(text.encode()),
                    "run_view_ms_median": round(html_ms, 2),
                    "run_view_bytes": len(html.encode()),
                }
            )
        )
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 9
    view = run_view_part(rounds)
    chains = timeline_part(rounds)
    sizes = size_part(rounds)

    print("# targets (display)")
    check("run view of 32 executors x 1,000 messages: render (ms, median)", view["run_view_ms_median"], 200)
    check("run view of 32 executors x 1,000 messages: size (bytes)", view["run_view_bytes"], 2_000_000)
    for small, large in itertools.pairwise(chains):
        ratio = large["timeline_ms_median"] / max(small["timeline_ms_median"], 1e-6)
        check(
            f"timeline_html {small['executors']:,} -> {large['executors']:,} executors: time ratio "
            f"({small['timeline_ms_median']:,.3f} -> {large['timeline_ms_median']:,.3f} ms; 10 is linear)",
            ratio,
            20,
        )
    last = chains[-1]
    check(f"timeline_html of {last['executors']:,} executors (ms, median)", last["timeline_ms_median"], 100)
    for r in chains:
        check(f"text/plain of a {r['executors']:,}-executor chain (bytes)", r["text_plain_bytes"], TEXT_BYTES)
    for r in sizes:
        m = f"{r['messages']:,} messages"
        check(f"text/plain of {m} (bytes)", r["text_plain_bytes"], TEXT_BYTES)
        check(f"text/plain of {m} (ms, median)", r["text_plain_ms_median"], 50)
        check(f"run view of {m} (bytes)", r["run_view_bytes"], 2_000_000)
        check(f"run view of {m} (ms, median)", r["run_view_ms_median"], 200)
    return 0


if __name__ == "__main__":
    sys.exit(main())
