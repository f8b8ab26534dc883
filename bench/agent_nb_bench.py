"""Benchmark of agent_nb's workflow engine on the workload of Agent Framework's reference benchmark.

Every agent is an in-process echo agent doing O(1) work, so what is timed is agent_nb's
orchestration: handler dispatch, context modes, supersteps, events and the trace.

    python bench/agent_nb_bench.py [--quick] [--sections hop,stream,...] [--repeat R] [--profile]

One JSON line per configuration goes to stdout, then a summary of the targets (lines
starting with '#'). The checkpoint sections of the contract (ckpt, ckpt_restore,
ckpt_scale) are in bench/checkpoint_bench.py.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import pstats
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import Any

from agent_nb import (
    AgentExecutor,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    Message,
    SequentialBuilder,
    Workflow,
    WorkflowBuilder,
)
from agent_nb.workflow import ContextMode

INPUT = "benchmark input: the quick brown fox jumps over the lazy dog"
MODES: tuple[ContextMode, ...] = ("full", "last_agent")
SECTIONS = ("agent", "hop", "stream", "growth", "longconv", "seq", "import")
NOT_BUILT = ("ckpt", "ckpt_restore", "ckpt_scale")
RECORDS: list[dict[str, Any]] = []

Once = Callable[[], Awaitable[int]]  # one workflow run; returns the number of events seen


@dataclass
class Config:
    runs: int = 200  # timed runs per hop / stream / seq configuration
    warmup: int = 20
    agent_calls: int = 20_000  # direct agent calls, in batches of AGENT_BATCH
    growth_runs: int = 20
    long_runs: dict[int, int] = field(default_factory=lambda: {10: 200, 100: 200, 1000: 50, 5000: 20})
    import_reps: int = 7

    @classmethod
    def quick(cls) -> Config:
        return cls(20, 3, 2_000, 3, {10: 20, 100: 20, 1000: 5, 5000: 3}, 2)


AGENT_BATCH = 100


class EchoAgent:
    """The contract's agent: one assistant message ``f"{last.text[:20]}|{name}"``, O(1) work."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.received: list[int] = []

    def create_session(self) -> AgentSession:
        return AgentSession()

    # A plain ``def``: it returns a coroutine, or (stream=True) an async generator of one update.
    def run(self, messages: Any = None, *, session: AgentSession | None = None, stream: bool = False) -> Any:
        self.received.append(len(messages))
        text = f"{messages[-1].text[:20]}|{self.name}"
        return self._stream(text) if stream else self._respond(text)

    async def _respond(self, text: str) -> AgentResponse:
        return AgentResponse([Message("assistant", [text], author_name=self.name)])

    async def _stream(self, text: str) -> AsyncIterator[AgentResponseUpdate]:
        yield AgentResponseUpdate([text], role="assistant", author_name=self.name)


# -- helpers -----------------------------------------------------------------------


def emit(bench: str, **fields: Any) -> None:
    rec = {"bench": bench, **{k: round(v, 1) if isinstance(v, float) else v for k, v in fields.items()}}
    RECORDS.append(rec)
    print(json.dumps(rec), flush=True)


def make_agents(n: int) -> list[EchoAgent]:
    return [EchoAgent(f"agent_{i:02d}") for i in range(n)]


def build_chain(agents: Sequence[EchoAgent], mode: ContextMode) -> Workflow:
    execs = [AgentExecutor(a, context_mode=mode) for a in agents]
    builder = WorkflowBuilder(start_executor=execs[0])
    for a, b in pairwise(execs):
        builder.add_edge(a, b)
    return builder.build()


def expected_received(n: int, mode: str, first: int = 1) -> list[int]:
    """``full``: agent i sees the input plus i replies; ``last_agent``: only its predecessor's reply."""
    return [first + i for i in range(n)] if mode == "full" else [first] + [1] * (n - 1)


def check_received(agents: Sequence[EchoAgent], expected: list[int], calls: int) -> None:
    """Every agent was called once per run and received the same count every run."""
    for agent, want in zip(agents, expected, strict=True):
        if agent.received != [want] * calls:
            raise AssertionError(f"{agent.name}: expected {calls} calls of {want} messages, got {agent.received[:8]}")
        agent.received.clear()


def runner(wf: Workflow, inputs: Any, *, stream: bool) -> Once:
    async def once_stream() -> int:
        n = 0
        async for _ in wf.run(inputs, stream=True):
            n += 1
        return n

    async def once() -> int:
        return len((await wf.run(inputs)).events)

    return once_stream if stream else once


async def timed(once: Once, warmup: int, runs: int) -> tuple[list[float], int]:
    """Seconds of each timed run (after ``warmup`` untimed runs) and the events of the last one."""
    for _ in range(warmup):
        await once()
    times, events = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        events = await once()
        times.append(time.perf_counter() - t0)
    return times, events


def hop_fields(times: list[float], n: int, agent_us: float) -> dict[str, Any]:
    per_hop, median = sum(times) / (len(times) * n) * 1e6, statistics.median(times) / n * 1e6
    return {
        "runs": len(times),
        "us_per_hop": per_hop,
        "us_per_hop_median": median,
        "us_per_hop_min": min(times) / n * 1e6,
        "agent_us": agent_us,
        "us_per_hop_minus_agent": per_hop - agent_us,
        "us_per_hop_median_minus_agent": median - agent_us,
    }


async def measure_memory(
    start: Callable[[], Coroutine[Any, Any, Any]], message_type: type = Message
) -> tuple[Any, dict[str, int]]:
    """Run once under tracemalloc; count the message objects created and still alive with the result."""
    gc.collect()
    old = [o for o in gc.get_objects() if isinstance(o, message_type)]  # held, so their ids are not reused
    old_ids = {id(o) for o in old}
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = await start()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    live = sum(1 for o in gc.get_objects() if isinstance(o, message_type) and id(o) not in old_ids)
    return result, {
        "peak_bytes": peak - base,
        "retained_with_result_bytes": current - base,
        "live_message_objs_with_result": live,
    }


# -- sections ----------------------------------------------------------------------


async def agent_call_us(stream: bool, batches: int) -> list[float]:
    """Microseconds per direct call of a fresh echo agent, per batch of AGENT_BATCH (warm-up batch dropped)."""
    agent, msgs = EchoAgent("agent_00"), [Message("user", INPUT)]
    out = []
    for _ in range(batches + 1):
        t0 = time.perf_counter()
        for _ in range(AGENT_BATCH):
            if stream:
                async for _ in agent.run(msgs, stream=True):
                    pass
            else:
                await agent.run(msgs)
        out.append((time.perf_counter() - t0) / AGENT_BATCH * 1e6)
    return out[1:]


async def bench_agent(cfg: Config) -> None:
    """The echo agent called directly, no workflow: the per-hop cost that is the agent's own."""
    fields: dict[str, float] = {}
    for key in ("nonstream", "stream"):
        batches = await agent_call_us(key == "stream", max(cfg.agent_calls // AGENT_BATCH, 2))
        fields[f"us_per_call_{key}"] = statistics.median(batches)
        fields[f"us_per_call_{key}_min"] = min(batches)
    emit("agent", **fields)


async def bench_config(
    cfg: Config, bench: str, agents: list[EchoAgent], build: Callable[[], Workflow], **keys: Any
) -> None:
    """One hop / stream / seq configuration: a single built workflow reused for every run."""
    stream, mode, n, msg = bench == "stream", keys["context_mode"], len(agents), Message("user", INPUT)
    t0 = time.perf_counter()
    wf = build()
    build_us = (time.perf_counter() - t0) * 1e6
    if not stream:  # one checked run: every agent answered, in chain order
        outputs = (await wf.run(msg)).get_outputs()
        assert [o.messages[0].author_name for o in outputs] == [a.name for a in agents], outputs
        check_received(agents, expected_received(n, mode), 1)
    # The machine is shared and has ~2x slow spells lasting seconds: the agent's cost to subtract is
    # probed right before the timed runs (fastest batch), so both figures come from the same spell.
    agent_us = min(await agent_call_us(stream, 6))
    times, events = await timed(runner(wf, msg, stream=stream), cfg.warmup, cfg.runs)
    check_received(agents, expected_received(n, mode), cfg.warmup + cfg.runs)
    emit(bench, n_agents=n, **keys, **hop_fields(times, n, agent_us), events_per_run=events, build_us=build_us)


async def bench_chains(cfg: Config, *, stream: bool) -> None:
    """Sections a (hop) and b (stream): chains of N=2, 8, 32 in both context modes."""
    for n in (2, 8, 32):
        for mode in MODES:
            agents = make_agents(n)
            await bench_config(
                cfg, "stream" if stream else "hop", agents, partial(build_chain, agents, mode), context_mode=mode
            )


async def bench_seq(cfg: Config) -> None:
    """Section g: ``SequentialBuilder`` with N=8, both values of ``chain_only_agent_responses``."""
    for only in (False, True):
        agents = make_agents(8)
        build = SequentialBuilder(participants=agents, chain_only_agent_responses=only).build
        mode = "last_agent" if only else "full"
        await bench_config(cfg, "seq", agents, build, context_mode=mode, chain_only_agent_responses=only)


async def bench_growth(cfg: Config) -> None:
    """Section c: what a run receives and keeps alive, on a fresh workflow per configuration."""
    msg = Message("user", INPUT)
    for mode in MODES:  # warm agent_nb's class-level caches outside the measured runs
        await build_chain(make_agents(2), mode).run(msg)
    for n in (32, 128):
        for mode in MODES:
            agents = make_agents(n)
            wf = build_chain(agents, mode)
            result, mem = await measure_memory(partial(wf.run, msg))
            received = [a.received[0] for a in agents]
            del result
            times, _ = await timed(runner(wf, msg, stream=False), 2, cfg.growth_runs)
            check_received(agents, expected_received(n, mode), 1 + 2 + cfg.growth_runs)
            emit(
                "growth",
                n_agents=n,
                context_mode=mode,
                last_agent_received=received[-1],
                sum_received_all_agents=sum(received),
                **mem,
                us_per_hop=statistics.median(times) / n * 1e6,
            )


def prior_messages(m: int) -> list[Message]:
    """M messages, roles alternating and ending with ``user``."""
    text = "prior message {:05d}: lorem ipsum dolor sit amet, consectetur"
    return [Message("user" if (m - 1 - i) % 2 == 0 else "assistant", text.format(i)) for i in range(m)]


async def bench_longconv(cfg: Config) -> None:
    """Section d: M prior messages into a 4-agent ``full`` chain; the cost per message per hop."""
    previous: tuple[int, float] | None = None
    for m, runs in cfg.long_runs.items():
        prior, agents = prior_messages(m), make_agents(4)
        wf = build_chain(agents, "full")
        times, _ = await timed(runner(wf, prior, stream=False), 3, runs)
        _, mem = await measure_memory(partial(wf.run, prior))
        last_received = agents[-1].received[-1]
        check_received(agents, expected_received(4, "full", first=m), 3 + runs + 1)
        median = statistics.median(times)
        # The slope from the previous M: the cost one more prior message adds, without fixed costs.
        marginal = None if previous is None else (median - previous[1]) / (4 * (m - previous[0])) * 1e9
        previous = (m, median)
        emit(
            "longconv",
            prior_messages=m,
            runs=runs,
            run_us_median=median * 1e6,
            ns_per_msg_per_hop=median / (4 * m) * 1e9,
            ns_per_msg_per_hop_marginal=marginal,
            peak_bytes=mem["peak_bytes"],
            last_agent_received=last_received,
        )


IMPORTS = {
    "python_startup": "pass",
    "import_agent_nb": "import agent_nb",
    "import_workflow_api": "from agent_nb import WorkflowBuilder, AgentExecutor",
}


def python_run(code: str, *, importtime: bool) -> tuple[float, int, float]:
    """Wall seconds, modules loaded, and the depth-0 ``-X importtime`` cumulative sum (ms) of a fresh interpreter."""
    flags = ["-X", "importtime"] if importtime else []
    cmd = [sys.executable, *flags, "-c", f"{code}\nimport sys; print(len(sys.modules))"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    total_us = 0
    for line in proc.stderr.splitlines():  # "import time: <self> | <cumulative> | <2 spaces per depth><name>"
        parts = line.split("|")
        depth0 = len(parts) == 3 and not parts[2][1:].startswith(" ")
        if line.startswith("import time:") and depth0 and parts[1].strip().isdigit():
            total_us += int(parts[1])
    return wall, int(proc.stdout.split()[-1]), total_us / 1000


def bench_import(cfg: Config) -> None:
    """Section f: fresh interpreters, round-robin so machine load hits every case alike."""
    for code in IMPORTS.values():  # write the .pyc files first
        python_run(code, importtime=False)
    walls: dict[str, list[float]] = {k: [] for k in IMPORTS}
    itimes: dict[str, list[float]] = {k: [] for k in IMPORTS}
    modules: dict[str, int] = {}
    for _ in range(cfg.import_reps):
        for what, code in IMPORTS.items():
            wall, modules[what], _ = python_run(code, importtime=False)
            walls[what].append(wall * 1000)
            itimes[what].append(python_run(code, importtime=True)[2])
    base_wall, base_it = statistics.median(walls["python_startup"]), statistics.median(itimes["python_startup"])
    emit("import", what="python_startup", wall_ms_median=base_wall, modules=modules["python_startup"])
    for what in ("import_agent_nb", "import_workflow_api"):
        wall = statistics.median(walls[what])
        emit(
            "import",
            what=what,
            wall_ms_median=wall,
            wall_ms_minus_startup=wall - base_wall,
            importtime_ms_minus_startup=statistics.median(itimes[what]) - base_it,
            modules_added=modules[what] - modules["python_startup"],
        )


# -- driver --------------------------------------------------------------------------


async def run_async(cfg: Config, sections: list[str]) -> None:
    for name, section in (
        ("agent", bench_agent),
        ("hop", partial(bench_chains, stream=False)),
        ("stream", partial(bench_chains, stream=True)),
        ("growth", bench_growth),
        ("longconv", bench_longconv),
        ("seq", bench_seq),
    ):
        if name in sections:
            await section(cfg)


def find(bench: str, **keys: Any) -> dict[str, Any] | None:
    return next((r for r in RECORDS if r["bench"] == bench and all(r.get(k) == v for k, v in keys.items())), None)


def summary() -> None:
    rows: list[tuple[str, float, str, bool]] = []
    for n in (8, 32):
        for mode in MODES:
            if r := find("hop", n_agents=n, context_mode=mode):
                # judged on the median: a mean over a shared machine mostly measures its slow spells
                v = r["us_per_hop_median_minus_agent"]
                label = f"hop N={n} {mode} us_per_hop_median_minus_agent (mean {r['us_per_hop_minus_agent']})"
                rows.append((label, v, "<= 50 us", v <= 50))
    if r := find("longconv", prior_messages=5000):
        # At M=5000 fixed per-hop costs are a few % of the figure; the marginal slope (from M=1000) has none.
        for key in ("ns_per_msg_per_hop", "ns_per_msg_per_hop_marginal"):
            rows.append((f"longconv M=5000 {key}", r[key], "< 100 ns", r[key] < 100))
    if r := find("growth", n_agents=128, context_mode="full"):
        v = r["live_message_objs_with_result"]
        r32 = find("growth", n_agents=32, context_mode="full") or {}
        label = f"growth N=128 full live_message_objs_with_result (N=32: {r32.get('live_message_objs_with_result')})"
        rows.append((label, v, "O(N): <= 4N = 512; peer 8,383", v <= 4 * 128))
    if r := find("import", what="import_workflow_api"):
        v = r["wall_ms_minus_startup"]
        label = f"import workflow API wall_ms_minus_startup (importtime {r['importtime_ms_minus_startup']})"
        rows.append((label, v, "< 250 ms", v < 250))
    print("# targets")
    for label, value, target, ok in rows:
        print(f"# {'PASS' if ok else 'FAIL'}  {label} = {value:,.1f}  (target {target})")
    if probes := [r["agent_us"] for r in RECORDS if "agent_us" in r]:
        # The same O(1) agent call, probed before each configuration: its spread is the machine's.
        print(f"# machine speed: agent probe {min(probes)}..{max(probes)} us ({max(probes) / min(probes):.2f}x spread)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs: finishes in a few seconds")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of: {', '.join(SECTIONS)}")
    parser.add_argument("--repeat", type=int, help="timed runs per hop/stream/seq configuration")
    parser.add_argument("--profile", action="store_true", help="cProfile the in-process sections; stats to stderr")
    args = parser.parse_args(argv)
    cfg = Config.quick() if args.quick else Config()
    if args.repeat:
        cfg.runs = args.repeat
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    for s in sections:
        if s in NOT_BUILT:
            print(f"# section {s!r} is in bench/checkpoint_bench.py", file=sys.stderr)
        elif s not in SECTIONS:
            parser.error(f"unknown section {s!r}; choose from {', '.join(SECTIONS)}")
    t0 = time.perf_counter()
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    asyncio.run(run_async(cfg, sections))
    if profiler:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    if "import" in sections:
        bench_import(cfg)
    summary()
    print(f"# total {time.perf_counter() - t0:.1f} s ({'quick' if args.quick else 'full'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
