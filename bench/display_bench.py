"""What a display costs: the run view of 32 executors with 1,000 messages each.

    python bench/display_bench.py [--quick]

Targets: rendered in at most 200 ms, at most 2 MB of HTML. One JSON line, then the targets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

from agent_nb import AgentExecutor, ChatAgent, EchoChatClient, Message, WorkflowBuilder
from agent_nb.display import run_view, timeline_html
from agent_nb.display.graph import graph_of, graph_svg


async def sample_run() -> object:
    prior = [Message("user" if i % 2 else "assistant", f"message {i:04d} " + "lorem ipsum " * 8) for i in range(1000)]
    executors = [AgentExecutor(ChatAgent(EchoChatClient(), name=f"agent_{i:02d}")) for i in range(32)]
    return await WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build().run(prior)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    result = asyncio.run(sample_run())
    given = sum(len(s.given or ()) for s in result.trace)  # type: ignore[attr-defined]
    rounds = 3 if args.quick else 9
    times, html = [], ""
    for _ in range(rounds):
        t0 = time.perf_counter()
        html = run_view(result)  # type: ignore[arg-type]
        times.append((time.perf_counter() - t0) * 1000)
    graph_ms = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        graph_svg(graph_of(result.workflow, result.trace))  # type: ignore[attr-defined]
        graph_ms.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    timeline_html(result.trace)  # type: ignore[attr-defined]
    timeline_ms = (time.perf_counter() - t0) * 1000
    record = {
        "bench": "display",
        "executors": 32,
        "messages_given": given,
        "run_view_ms_median": round(statistics.median(times), 1),
        "run_view_ms_min": round(min(times), 1),
        "run_view_bytes": len(html.encode()),
        "graph_ms_median": round(statistics.median(graph_ms), 2),
        "timeline_ms": round(timeline_ms, 2),
    }
    print(json.dumps(record))
    print("# targets")
    for label, value, target in (("run view render (ms, median)", record["run_view_ms_median"], 200),
                                 ("run view size (bytes)", record["run_view_bytes"], 2_000_000)):  # fmt: skip
        print(f"# {'PASS' if value <= target else 'FAIL'}  {label} = {value:,}  (target <= {target:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
