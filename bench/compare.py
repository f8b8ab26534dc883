"""agent_nb and Microsoft Agent Framework side by side on the reference workload, interleaved in one run.

    .venv-bench/bin/python bench/compare.py [--quick] [--write] [--sections hop,stream,...]

Both libraries run the same echo agent (bench/CONTRACT.md of the shared folder) on the same
inputs, one configuration at a time, in alternating blocks so that the machine's slow spells
hit both alike. Each figure is the median over runs; the spread is the range of the blocks'
medians. Counts (messages received, message objects alive, checkpoint bytes) are exact.
``make bench`` installs the peer in ``.venv-bench`` and runs this with ``--write``, which
writes bench/RESULTS.md and bench/scaling.png.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import agent_framework as maf  # noqa: E402
import agent_nb_bench as ours  # noqa: E402
from agent_framework.orchestrations import ConcurrentBuilder as MafConcurrentBuilder  # noqa: E402
from agent_framework.orchestrations import GroupChatBuilder as MafGroupChatBuilder  # noqa: E402
from agent_framework.orchestrations import SequentialBuilder as MafSequentialBuilder  # noqa: E402

import agent_nb  # noqa: E402
from agent_nb.workflow import FileCheckpointStorage, InMemoryCheckpointStorage  # noqa: E402

INPUT = ours.INPUT
MODES = ("full", "last_agent")
SECTIONS = ("agent", "hop", "stream", "growth", "longconv", "ckpt", "seq", "group", "concurrent", "import", "ours")
ROUNDS = 20  # the group chat: 4 participants, each in turn, for 20 rounds


# -- the peer's side of the workload (the contract's agent, word for word in behaviour) -------------


class MafEchoAgent(maf.BaseAgent):
    """One assistant message ``f"{last.text[:20]}|{name}"``; records how many messages it was given."""

    def __init__(self, name: str) -> None:
        super().__init__(id=name, name=name, description="echo")
        self.received: list[int] = []

    def run(self, messages: Any = None, *, stream: bool = False, session: Any = None, **kwargs: Any) -> Any:
        self.received.append(len(messages))
        text = f"{messages[-1].text[:20]}|{self.name}"
        if stream:

            async def updates() -> Any:
                yield maf.AgentResponseUpdate(
                    contents=[maf.Content.from_text(text)], role="assistant", author_name=self.name
                )

            return maf.ResponseStream(updates(), finalizer=maf.AgentResponse.from_updates)
        return self._respond(text)

    async def _respond(self, text: str) -> Any:
        return maf.AgentResponse(messages=[maf.Message("assistant", [text], author_name=self.name)])


@dataclass
class Library:
    """What a section needs of a library: agents, chains, runs, storages, resuming."""

    name: str
    message: type
    make_agents: Callable[[int], list[Any]]
    chain: Callable[..., Any]
    sequential: Callable[[list[Any], bool], Any]
    run: Callable[..., Awaitable[Any]]
    storage: Callable[[str, Path], Any]
    resume: Callable[[Any, str, Any], Awaitable[Any]]
    checkpoint_ids: Callable[[Any, Any], Awaitable[list[str]]]
    load: Callable[[Any, str], Awaitable[Any]]
    latest: Callable[[Any, Any], Awaitable[Any]]
    events: Callable[[Any], int]
    import_line: str
    prior: Callable[[int], list[Any]]


def _ours_chain(agents: list[Any], mode: str, storage: Any = None) -> Any:
    workflow = ours.build_chain(agents, mode)  # type: ignore[arg-type]
    workflow.checkpoint_storage = storage
    return workflow


def _maf_chain(agents: list[Any], mode: str, storage: Any = None) -> Any:
    executors = [maf.AgentExecutor(a, context_mode=mode) for a in agents]
    extra = {"checkpoint_storage": storage} if storage is not None else {}
    builder = maf.WorkflowBuilder(  # a fixed name, as agent_nb's default: checkpoints are listed by workflow name
        start_executor=executors[0], name="workflow", max_iterations=max(100, len(agents) + 2), **extra
    )
    for a, b in itertools.pairwise(executors):
        builder.add_edge(a, b)
    return builder.build()


async def _ours_run(workflow: Any, inputs: Any, *, stream: bool = False) -> Any:
    if not stream:
        return await workflow.run(inputs)
    return [e async for e in workflow.run(inputs, stream=True)]


async def _maf_run(workflow: Any, inputs: Any, *, stream: bool = False) -> Any:
    if not stream:
        return await workflow.run(inputs)
    return [e async for e in workflow.run(inputs, stream=True)]


def _ours_storage(kind: str, directory: Path) -> Any:
    return {"memory": InMemoryCheckpointStorage, "file": lambda: FileCheckpointStorage(directory)}[kind]()


def _maf_storage(kind: str, directory: Path) -> Any:
    return {"memory": maf.InMemoryCheckpointStorage, "file": lambda: maf.FileCheckpointStorage(str(directory))}[kind]()


async def _ours_ids(storage: Any, workflow: Any) -> list[str]:
    return [i.id for i in storage.list(workflow.name)]


async def _maf_ids(storage: Any, workflow: Any) -> list[str]:
    checkpoints = await storage.list_checkpoints(workflow_name=workflow.name)
    return [c.checkpoint_id for c in sorted(checkpoints, key=lambda c: c.timestamp)]


def _ours_prior(m: int) -> list[Any]:
    return ours.prior_messages(m)


def _maf_prior(m: int) -> list[Any]:
    text = "prior message {:05d}: lorem ipsum dolor sit amet, consectetur"
    return [maf.Message("user" if (m - 1 - i) % 2 == 0 else "assistant", [text.format(i)]) for i in range(m)]


async def _maf_latest(storage: Any, workflow: Any) -> Any:
    return await storage.get_latest(workflow_name=workflow.name)


async def _ours_latest(storage: Any, workflow: Any) -> Any:
    return storage.latest(workflow.name)


async def _ours_load(storage: Any, cid: str) -> Any:
    return storage.load(cid)


async def _maf_load(storage: Any, cid: str) -> Any:
    return await storage.load(cid)


LIBS = (
    Library(
        name="agent_nb",
        message=agent_nb.Message,
        make_agents=ours.make_agents,
        chain=_ours_chain,
        sequential=lambda agents, only: agent_nb.SequentialBuilder(
            participants=agents, chain_only_agent_responses=only
        ).build(),
        run=_ours_run,
        storage=_ours_storage,
        resume=lambda wf, cid, st: wf.run(checkpoint_id=cid, checkpoint_storage=st),
        checkpoint_ids=_ours_ids,
        load=_ours_load,
        latest=_ours_latest,
        events=lambda result: len(result.events) if hasattr(result, "events") else len(result),
        import_line="from agent_nb import WorkflowBuilder, AgentExecutor",
        prior=_ours_prior,
    ),
    Library(
        name="peer",
        message=maf.Message,
        make_agents=lambda n: [MafEchoAgent(f"agent_{i:02d}") for i in range(n)],
        chain=_maf_chain,
        sequential=lambda agents, only: MafSequentialBuilder(
            participants=agents, chain_only_agent_responses=only
        ).build(),
        run=_maf_run,
        storage=_maf_storage,
        resume=lambda wf, cid, st: wf.run(checkpoint_id=cid, checkpoint_storage=st),
        checkpoint_ids=_maf_ids,
        load=_maf_load,
        latest=_maf_latest,
        events=len,
        import_line=(
            "from agent_framework import WorkflowBuilder, AgentExecutor, BaseAgent, "
            "FileCheckpointStorage, InMemoryCheckpointStorage"
        ),
        prior=_maf_prior,
    ),
)


# -- measuring --------------------------------------------------------------------------------------


@dataclass
class Figure:
    """One row of the table: a figure for both libraries (or agent_nb alone)."""

    section: str
    what: str
    unit: str
    values: dict[str, float]
    spread: dict[str, tuple[float, float]] = field(default_factory=dict)
    exact: bool = False

    @property
    def ratio(self) -> float | None:
        a, b = self.values.get("agent_nb"), self.values.get("peer")
        return None if a is None or not b else a / b


FIGURES: list[Figure] = []


def record(section: str, what: str, unit: str, values: dict[str, float], **kw: Any) -> Figure:
    figure = Figure(section, what, unit, values, **kw)
    FIGURES.append(figure)
    ratio = f" ratio {figure.ratio:.3g}" if figure.ratio is not None else ""
    shown = ", ".join(f"{k} {_fmt(v)}" for k, v in values.items())
    print(f"{section:10} {what:46} {shown} {unit}{ratio}", flush=True)
    return figure


@dataclass
class Budget:
    """How long each library may spend on one configuration, and how many runs it gets at least."""

    seconds: float
    min_runs: int
    rounds: int


async def interleaved(
    make_once: Callable[[Library], Callable[[], Awaitable[Any]]], budget: Budget, libs: tuple[Library, ...] = LIBS
) -> dict[str, tuple[list[float], list[float]]]:
    """Per library: the seconds of every timed run, and the median of each block; blocks alternate.

    A run that returns a float has timed itself (what it set up around the timed part is not counted).
    """
    onces = {lib.name: make_once(lib) for lib in libs}
    for once in onces.values():  # one untimed run each: caches, first-use imports
        await once()
    # What earlier configurations left alive (of either library) is set aside, so that the garbage
    # collector, still on, walks only what this configuration makes.
    gc.collect()
    gc.freeze()
    per_round = budget.seconds / budget.rounds
    out: dict[str, tuple[list[float], list[float]]] = {lib.name: ([], []) for lib in libs}
    for r in range(budget.rounds):
        order = libs if r % 2 == 0 else tuple(reversed(libs))
        for lib in order:
            times: list[float] = []
            end = time.perf_counter() + per_round
            while len(times) < budget.min_runs or time.perf_counter() < end:
                t0 = time.perf_counter()
                inner = await onces[lib.name]()
                times.append(inner if isinstance(inner, float) else time.perf_counter() - t0)
                if len(times) >= 2000:
                    break
            out[lib.name][0].extend(times)
            out[lib.name][1].append(statistics.median(times))
    gc.unfreeze()
    return out


def timed_figure(
    section: str, what: str, unit: str, timings: dict[str, tuple[list[float], list[float]]], scale: float
) -> Figure:
    values = {k: statistics.median(t) * scale for k, (t, _) in timings.items()}
    spread = {k: (min(b) * scale, max(b) * scale) for k, (_, b) in timings.items()}
    return record(section, what, unit, values, spread=spread)


# -- sections ---------------------------------------------------------------------------------------


async def section_agent(budget: Budget) -> None:
    for stream in (False, True):

        def make(lib: Library, stream: bool = stream) -> Callable[[], Awaitable[Any]]:
            agent = lib.make_agents(1)[0]
            msgs = [lib.message("user", [INPUT]) if lib.name == "peer" else agent_nb.Message("user", INPUT)]

            async def once() -> None:
                for _ in range(50):
                    if stream:
                        result = agent.run(msgs, stream=True)
                        async for _ in result:
                            pass
                    else:
                        await agent.run(msgs)
                agent.received.clear()

            return once

        timings = await interleaved(make, budget)
        kind = "stream" if stream else "non-stream"
        timed_figure("agent", f"echo agent called directly ({kind})", "µs/call", timings, 1e6 / 50)


async def section_chains(budget: Budget, sizes: tuple[int, ...], *, stream: bool) -> dict[tuple[str, int, str], float]:
    """Sections a and b: one built workflow per library, reused for every run (the contract)."""
    per_hop: dict[tuple[str, int, str], float] = {}
    section = "stream" if stream else "hop"
    for n in sizes:
        for mode in MODES:
            events: dict[str, int] = {}
            received: dict[str, int] = {}

            def make(
                lib: Library,
                n: int = n,
                mode: str = mode,
                events: dict[str, int] = events,
                received: dict[str, int] = received,
            ) -> Callable[[], Awaitable[Any]]:
                agents = lib.make_agents(n)
                workflow = lib.chain(agents, mode)

                async def once() -> None:
                    result = await lib.run(workflow, INPUT, stream=stream)
                    events[lib.name] = lib.events(result)
                    received[lib.name] = agents[-1].received[-1]
                    for a in agents:
                        a.received.clear()

                return once

            timings = await interleaved(make, budget)
            fig = timed_figure(section, f"N={n} {mode}: per hop", "µs", timings, 1e6 / n)
            for lib, value in fig.values.items():
                per_hop[(lib, n, mode)] = value
            record(section, f"N={n} {mode}: events per run", "", dict(events), exact=True)
            record(section, f"N={n} {mode}: messages the last agent received", "", dict(received), exact=True)
    return per_hop


async def section_growth(sizes: tuple[int, ...]) -> None:
    for n in sizes:
        for mode in MODES:
            rows: dict[str, dict[str, int]] = {}
            for lib in LIBS:
                warm = lib.chain(lib.make_agents(2), mode)
                await lib.run(warm, INPUT)
                agents = lib.make_agents(n)
                workflow = lib.chain(agents, mode)
                result, mem = await ours.measure_memory(
                    lambda lib=lib, workflow=workflow: lib.run(workflow, INPUT), lib.message
                )
                received = [a.received[0] for a in agents]
                rows[lib.name] = {
                    "peak": mem["peak_bytes"],
                    "retained": mem["retained_with_result_bytes"],
                    "live": mem["live_message_objs_with_result"],
                    "last": received[-1],
                    "sum": sum(received),
                }
                del result
            for key, what, unit in (
                ("last", "messages the last agent received", ""),
                ("sum", "messages received, all agents", ""),
                ("live", "message objects alive with the result", ""),
                ("peak", "peak memory of the run", "bytes"),
                ("retained", "memory still held by the result", "bytes"),
            ):
                values = {name: float(r[key]) for name, r in rows.items()}
                record("growth", f"N={n} {mode}: {what}", unit, values, exact=key in ("last", "sum", "live"))


async def section_longconv(budget: Budget, sizes: tuple[int, ...]) -> dict[tuple[str, int], float]:
    runs: dict[tuple[str, int], float] = {}
    for m in sizes:
        received: dict[str, int] = {}

        def make(lib: Library, m: int = m, received: dict[str, int] = received) -> Callable[[], Awaitable[Any]]:
            agents = lib.make_agents(4)
            workflow = lib.chain(agents, "full")
            prior = lib.prior(m)

            async def once() -> None:
                await lib.run(workflow, prior)
                received[lib.name] = agents[-1].received[-1]
                for a in agents:
                    a.received.clear()

            return once

        timings = await interleaved(make, budget)
        fig = timed_figure("longconv", f"M={m}: per prior message per hop", "ns", timings, 1e9 / (4 * m))
        for lib, value in fig.values.items():
            runs[(lib, m)] = value * 4 * m / 1e3  # µs per run
        record("longconv", f"M={m}: messages the last agent received", "", dict(received), exact=True)
    return runs


async def section_ckpt(budget: Budget, sizes: tuple[int, ...], root: Path) -> dict[str, Any]:
    """Section e: a fresh workflow and a fresh storage per run (build not timed), as the contract says."""
    found: dict[str, Any] = {}
    for m in sizes:
        base: dict[str, float] = {}
        for kind in ("none", "memory", "file"):
            counts: dict[str, int] = {}
            sizes_on_disk: dict[str, int] = {}
            last_storage: dict[str, tuple[Any, Path]] = {}

            def make(
                lib: Library,
                m: int = m,
                kind: str = kind,
                counts: dict[str, int] = counts,
                sizes_on_disk: dict[str, int] = sizes_on_disk,
                last_storage: dict[str, tuple[Any, Path]] = last_storage,
            ) -> Callable[[], Awaitable[Any]]:
                serial = [0]

                async def once() -> float:
                    serial[0] += 1
                    directory = root / f"{lib.name}-m{m}-{kind}-{serial[0]}"
                    storage = None if kind == "none" else lib.storage(kind, directory)
                    agents = lib.make_agents(8)
                    workflow = lib.chain(agents, "full", storage)
                    inputs = lib.prior(m) if m else INPUT
                    t0 = time.perf_counter()
                    await lib.run(workflow, inputs)
                    elapsed = time.perf_counter() - t0
                    if storage is not None:
                        counts[lib.name] = len(await lib.checkpoint_ids(storage, workflow))
                    if kind == "file":
                        previous = last_storage.get(lib.name)
                        if previous is not None:
                            shutil.rmtree(previous[1], ignore_errors=True)
                        last_storage[lib.name] = (storage, directory)
                        sizes_on_disk[lib.name] = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
                    return elapsed

                return once

            timings = await interleaved(make, budget)
            fig = timed_figure("ckpt", f"M={m} storage={kind}: run", "µs", timings, 1e6)
            if kind == "none":
                base = fig.values
            else:
                record("ckpt", f"M={m} storage={kind}: checkpoints per run", "", dict(counts), exact=True)
                overhead = {k: v / base[k] for k, v in fig.values.items()}
                record("ckpt", f"M={m} storage={kind}: run / run without checkpoints", "×", overhead)
            if kind == "file":
                record("ckpt", f"M={m} storage=file: bytes on disk", "bytes", dict(sizes_on_disk), exact=True)
                found[f"file{m}"] = last_storage
    return found


async def section_restore(budget: Budget, stores: dict[str, Any], root: Path) -> None:
    """On the file storage of the last timed run of each library: read it, and resume from it."""
    for key, per_lib in stores.items():
        m = int(key.removeprefix("file"))
        for what in ("load one", "list", "latest", "resume from the last", "resume from the middle"):

            def make(lib: Library, what: str = what, per_lib: dict[str, Any] = per_lib) -> Callable[[], Awaitable[Any]]:
                _, directory = per_lib[lib.name]
                probe = lib.chain(lib.make_agents(8), "full")

                async def once() -> float:
                    copy = root / f"{lib.name}-copy"
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(directory, copy)  # a new process's view: nothing cached; resuming writes too
                    ids = await lib.checkpoint_ids(lib.storage("file", copy), probe)
                    agents = lib.make_agents(8)
                    workflow = lib.chain(agents, "full")
                    t0 = time.perf_counter()
                    storage = lib.storage("file", copy)
                    if what == "load one":
                        await lib.load(storage, ids[len(ids) // 2])
                    elif what == "list":
                        await lib.checkpoint_ids(storage, probe)
                    elif what == "latest":
                        await lib.latest(storage, probe)
                    else:
                        target = ids[-1] if what.endswith("last") else ids[len(ids) // 2]
                        await lib.resume(workflow, target, storage)
                    return time.perf_counter() - t0

                return once

            timings = await interleaved(make, budget)
            timed_figure("restore", f"M={m}: {what}", "µs", timings, 1e6)


async def section_scale(budget: Budget, sizes: tuple[int, ...]) -> dict[tuple[str, int], tuple[float, float]]:
    out: dict[tuple[str, int], tuple[float, float]] = {}
    for n in sizes:
        values: dict[str, dict[str, float]] = {}
        for kind in ("none", "memory"):

            def make(lib: Library, n: int = n, kind: str = kind) -> Callable[[], Awaitable[Any]]:
                async def once() -> float:
                    storage = None if kind == "none" else lib.storage("memory", Path("."))
                    workflow = lib.chain(lib.make_agents(n), "full", storage)
                    t0 = time.perf_counter()
                    await lib.run(workflow, INPUT)
                    return time.perf_counter() - t0

                return once

            timings = await interleaved(make, budget)
            values[kind] = {k: statistics.median(t) for k, (t, _) in timings.items()}
        for lib in values["none"]:
            out[(lib, n)] = (values["none"][lib], values["memory"][lib])
        record(
            "ckpt_scale",
            f"N={n}: in-memory checkpoints, run / run without",
            "×",
            {k: values["memory"][k] / values["none"][k] for k in values["none"]},
        )
    return out


async def section_seq(budget: Budget) -> None:
    for only in (False, True):

        def make(lib: Library, only: bool = only) -> Callable[[], Awaitable[Any]]:
            workflow = lib.sequential(lib.make_agents(8), only)

            async def once() -> None:
                await lib.run(workflow, INPUT)

            return once

        timings = await interleaved(make, budget)
        timed_figure("seq", f"SequentialBuilder N=8 chain_only_agent_responses={only}: per hop", "µs", timings, 1e6 / 8)


def _group_chat(lib: Library, agents: list[Any]) -> Any:
    """Four participants, each in turn (round robin), for ``ROUNDS`` rounds."""
    if lib.name == "peer":
        names = [a.name for a in agents]
        return MafGroupChatBuilder(
            participants=agents, selection_func=lambda state: names[state.current_round % len(names)], max_rounds=ROUNDS
        ).build()
    return agent_nb.GroupChatBuilder(agents, max_rounds=ROUNDS).build()


async def section_group(budget: Budget) -> None:
    def make(lib: Library) -> Callable[[], Awaitable[Any]]:
        agents = lib.make_agents(4)

        async def once() -> None:
            await lib.run(_group_chat(lib, agents), INPUT)  # a new chat each run: the same 20 rounds

        return once

    timings = await interleaved(make, budget)
    timed_figure("group", f"GroupChatBuilder 4 participants x {ROUNDS} rounds: per round", "µs", timings, 1e6 / ROUNDS)


async def section_concurrent(budget: Budget) -> None:
    def make(lib: Library) -> Callable[[], Awaitable[Any]]:
        agents = lib.make_agents(4)
        build = MafConcurrentBuilder if lib.name == "peer" else agent_nb.ConcurrentBuilder
        workflow = build(participants=agents).build()

        async def once() -> None:
            await lib.run(workflow, INPUT)

        return once

    timings = await interleaved(make, budget)
    timed_figure("concurrent", "ConcurrentBuilder 4 participants: per participant", "µs", timings, 1e6 / 4)


def section_import(reps: int) -> None:
    def wall(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        return time.perf_counter() - t0

    codes = {"startup": "pass", **{lib.name: lib.import_line for lib in LIBS}}
    for code in codes.values():
        wall(code)  # .pyc files written
    walls: dict[str, list[float]] = {k: [] for k in codes}
    for _ in range(reps):
        for key, code in codes.items():
            walls[key].append(wall(code))
    startup = statistics.median(walls["startup"])
    values = {lib.name: (statistics.median(walls[lib.name]) - startup) * 1e3 for lib in LIBS}
    spread = {
        lib.name: ((min(walls[lib.name]) - startup) * 1e3, (max(walls[lib.name]) - startup) * 1e3) for lib in LIBS
    }
    record("import", "the workflow API, wall time minus interpreter startup", "ms", values, spread=spread)


async def section_ours(quick: bool) -> None:
    """agent_nb alone: routing, SQLite history, a display, a real local model turn (when one is at hand)."""
    import display_bench
    import routing_bench

    from agent_nb.display import run_view

    await routing_bench.bench_routing(200 if quick else 2000, rounds=3 if quick else 7)
    await routing_bench.bench_history(20 if quick else 200, 1000 if quick else 10_000)
    for rec in routing_bench.RECORDS:
        fields = {k: v for k, v in rec.items() if k != "bench" and isinstance(v, (int, float))}
        label = ", ".join(f"{k}={v}" for k, v in rec.items() if k != "bench" and not isinstance(v, float))
        for key, value in fields.items():
            if isinstance(value, float):
                record("agent_nb", f"{rec['bench']} {label}: {key}", "", {"agent_nb": value})
    result = await display_bench.sample_run()
    times = []
    for _ in range(2 if quick else 5):
        t0 = time.perf_counter()
        html = run_view(result)  # type: ignore[arg-type]
        times.append((time.perf_counter() - t0) * 1e3)
    record(
        "agent_nb", "run view of 32 executors × 1,000 messages: render", "ms", {"agent_nb": statistics.median(times)}
    )
    record(
        "agent_nb",
        "run view of 32 executors × 1,000 messages: size",
        "bytes",
        {"agent_nb": float(len(html))},
        exact=True,
    )
    if not quick:  # starting the server alone takes seconds
        await real_model_turn()


async def real_model_turn() -> None:
    """The share of a real turn spent outside the model: agent_nb's turn against the same request sent raw."""
    venv = HERE.parent / ".venv"
    model = venv / "share" / "agent_nb" / "gemma-3-270m-q4_k_m.gguf"
    serve = HERE.parent / "tests" / "real_model" / "serve.py"
    if not (model.exists() and (venv / "bin" / "python").exists()):
        print("agent_nb   real local model turn: skipped (run `make test` once: it assembles the model)")
        return
    import socket

    import openai

    from agent_nb import ChatAgent
    from agent_nb.clients.openai import OpenAIChatClient

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [str(venv / "bin" / "python"), str(serve), "--model", str(model), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}/v1"
        raw = openai.AsyncOpenAI(base_url=base, api_key="not-needed")
        for _ in range(240):
            try:
                await raw.models.list()
                break
            except Exception:
                await asyncio.sleep(0.5)
        agent = ChatAgent(OpenAIChatClient("gemma", base_url=base, api_key="not-needed"), name="a")
        options = {"max_tokens": 8, "temperature": 0, "seed": 1}
        question = "Say hello."
        ours_t, raw_t = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            await agent.run(question, client_kwargs=options)
            ours_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await raw.chat.completions.create(
                model="gemma", messages=[{"role": "user", "content": question}], **options
            )
            raw_t.append(time.perf_counter() - t0)
        a, b = statistics.median(ours_t), statistics.median(raw_t)
        record("agent_nb", "real local model turn (Gemma 3 270M, 8 tokens)", "ms", {"agent_nb": a * 1e3})
        record("agent_nb", "the same request sent raw with the OpenAI SDK", "ms", {"agent_nb": b * 1e3})
        record(
            "agent_nb", "share of the turn outside the model and the SDK", "%", {"agent_nb": max(a - b, 0) / a * 100}
        )
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- targets, table, files ------------------------------------------------------------------------


def find(section: str, what: str) -> Figure | None:
    return next((f for f in FIGURES if f.section == section and f.what == what), None)


def targets() -> list[tuple[str, str, bool | None]]:
    rows: list[tuple[str, str, bool | None]] = []
    for section in ("hop", "stream"):
        for n in (8, 32):
            for mode in MODES:
                f = find(section, f"N={n} {mode}: per hop")
                if f and f.ratio is not None:
                    rows.append((f"{section} N={n} {mode}: agent_nb/peer ≤ 0.1", f"{f.ratio:.3f}", f.ratio <= 0.1))
    for section, what in (
        ("group", f"GroupChatBuilder 4 participants x {ROUNDS} rounds: per round"),
        ("concurrent", "ConcurrentBuilder 4 participants: per participant"),
    ):
        f = find(section, what)
        if f and f.ratio is not None:
            rows.append((f"{what}: agent_nb/peer ≤ 0.1", f"{f.ratio:.3f}", f.ratio <= 0.1))
    f = find("longconv", "M=5000: per prior message per hop")
    if f and f.ratio is not None:
        rows.append(("long conversation M=5,000: agent_nb/peer ≤ 0.05", f"{f.ratio:.4f}", f.ratio <= 0.05))
    f = find("growth", "N=128 full: message objects alive with the result")
    if f:
        v = f.values["agent_nb"]
        rows.append(
            (
                "message objects alive, N=128 full: ≤ 2N + input = 257",
                f"{v:.0f} (peer {f.values.get('peer', 0):,.0f})",
                v <= 257,
            )
        )
    for m in (0, 100):
        f = find("ckpt", f"M={m} storage=file: run / run without checkpoints")
        if f:
            v = f.values["agent_nb"]
            rows.append(
                (
                    f"checkpointed run M={m} (file): ≤ 2× agent_nb without",
                    f"{v:.2f}× (peer {f.values.get('peer', 0):.1f}×)",
                    v <= 2,
                )
            )
        f = find("ckpt", f"M={m} storage=file: bytes on disk")
        if f and f.ratio is not None:
            rows.append((f"checkpoint bytes M={m}: agent_nb/peer ≤ 0.1", f"{f.ratio:.4f}", f.ratio <= 0.1))
    f = find("import", "the workflow API, wall time minus interpreter startup")
    if f and f.ratio is not None:
        v = f.values["agent_nb"]
        rows.append(
            ("import: agent_nb/peer ≤ 0.6 and < 250 ms", f"{f.ratio:.2f} ({v:.0f} ms)", f.ratio <= 0.6 and v < 250)
        )
    return rows


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def table() -> str:
    lines = ["| section | figure | agent_nb | peer | agent_nb / peer |", "|---|---|---:|---:|---:|"]
    for f in FIGURES:
        cells = []
        for lib in ("agent_nb", "peer"):
            if lib not in f.values:
                cells.append("")
                continue
            cell = _fmt(f.values[lib]) + (f" {f.unit}" if f.unit else "")
            if lib in f.spread:
                lo, hi = f.spread[lib]
                cell += f" ({_fmt(lo)}–{_fmt(hi)})"
            cells.append(cell)
        ratio = "" if f.ratio is None else f"{f.ratio:.3g}"
        lines.append(f"| {f.section} | {f.what} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines)


def scaling_chart(
    per_hop: dict[tuple[str, int, str], float], long_runs: dict[tuple[str, int], float], path: Path
) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for lib, colour in (("agent_nb", "#1f6feb"), ("peer", "#cf222e")):
        for mode, style in (("full", "-"), ("last_agent", "--")):
            ns = sorted(n for (name, n, m) in per_hop if name == lib and m == mode)
            if ns:
                left.plot(
                    ns,
                    [per_hop[(lib, n, mode)] * n / 1e3 for n in ns],
                    style,
                    color=colour,
                    marker="o",
                    label=f"{lib} {mode}",
                )
        ms = sorted(m for (name, m) in long_runs if name == lib)
        if ms:
            right.plot(ms, [long_runs[(lib, m)] / 1e3 for m in ms], "-", color=colour, marker="o", label=lib)
    left.set(
        title="time per run against chain length",
        xlabel="agents in the chain",
        ylabel="ms per run",
        xscale="log",
        yscale="log",
    )
    ns = sorted({n for (_, n, _) in per_hop})
    left.set_xticks(ns, labels=[str(n) for n in ns])
    left.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    right.set(
        title="time per run against conversation length (4 agents, full)",
        xlabel="prior messages",
        ylabel="ms per run",
        xscale="log",
        yscale="log",
    )
    for axes in (left, right):
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(quick: bool, started: float) -> None:
    import importlib.metadata as md

    rows = targets()
    versions = ", ".join(
        f"{p} {md.version(p)}"
        for p in ("agent_nb", "agent-framework-core", "agent-framework-orchestrations", "pydantic")
    )
    lines = [
        "# agent_nb and Agent Framework, side by side",
        "",
        f"Written by `bench/compare.py{' --quick' if quick else ''} --write` on "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, in {time.perf_counter() - started:.0f} s.",
        f"Machine: {platform.machine()}, {_cpus()} CPUs, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}.",
        f"Versions: {versions}.",
        "",
        "Both libraries ran the same echo agent on the same inputs, interleaved block by block in one process.",
        "A figure is the median over runs; in brackets the range of the blocks' medians. Counts are exact.",
        "",
        "## Targets",
        "",
        "| target | measured | |",
        "|---|---|---|",
        *(f"| {label} | {value} | {'PASS' if ok else 'FAIL'} |" for label, value, ok in rows),
        "",
        "## Every figure",
        "",
        table(),
        "",
        "![time per run against chain length and conversation length](scaling.png)",
        "",
    ]
    notes = HERE / "RESULTS_NOTES.md"
    if notes.exists():
        lines += [notes.read_text().strip(), ""]
    (HERE / "RESULTS.md").write_text("\n".join(lines), encoding="utf-8")


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


async def run_all(args: argparse.Namespace) -> tuple[dict[Any, float], dict[Any, float]]:
    quick = args.quick
    sections = set(args.sections.split(","))
    b = Budget(0.25, 3, 2) if quick else Budget(1.5, 5, 4)
    slow = Budget(0.3, 1, 1) if quick else Budget(3.0, 3, 2)  # the peer's checkpointed runs take seconds
    per_hop: dict[Any, float] = {}
    long_runs: dict[Any, float] = {}
    root = Path(tempfile.mkdtemp(prefix="agent-nb-compare-"))
    try:
        if "agent" in sections:
            await section_agent(b)
        if "hop" in sections:
            per_hop = await section_chains(b, (8,) if quick else (2, 8, 32), stream=False)
        if "stream" in sections:
            await section_chains(b, (8,) if quick else (2, 8, 32), stream=True)
        if "growth" in sections:
            await section_growth((32,) if quick else (32, 128))
        if "longconv" in sections:
            long_runs = await section_longconv(b, (10, 100) if quick else (10, 100, 1000, 5000))
        if "ckpt" in sections:
            stores = await section_ckpt(slow, (0,) if quick else (0, 100), root)
            await section_restore(slow, stores, root)
            await section_scale(slow, (2, 8) if quick else (2, 4, 8, 16))
        if "seq" in sections:
            await section_seq(b)
        if "group" in sections:
            await section_group(b)
        if "concurrent" in sections:
            await section_concurrent(b)
        if "import" in sections:
            section_import(2 if quick else 7)
        if "ours" in sections:
            await section_ours(quick)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return per_hop, long_runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and runs: under 30 s")
    parser.add_argument("--write", action="store_true", help="write bench/RESULTS.md and bench/scaling.png")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of: {', '.join(SECTIONS)}")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    per_hop, long_runs = asyncio.run(run_all(args))
    print()
    print(table())
    print()
    for label, value, ok in targets():
        print(f"# {'PASS' if ok else 'FAIL'}  {label}: {value}")
    if args.write:
        scaling_chart(per_hop, long_runs, HERE / "scaling.png")
        write_results(args.quick, started)
        print("# wrote bench/RESULTS.md and bench/scaling.png")
    print(f"# total {time.perf_counter() - started:.1f} s ({'quick' if args.quick else 'full'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
