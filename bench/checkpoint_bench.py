"""Section e of the contract: checkpoints on the 8-agent ``full`` chain, restoring, and chain length.

    python bench/checkpoint_bench.py [--quick]

Each timed run builds a fresh workflow and a fresh storage (not timed), as the contract says.
Prints one JSON line per configuration, then the targets: a run with file checkpoints at most
2x a run without, and checkpoint bytes growing linearly with the conversation. The peer's
figures are its reference ones (bench/peer-maf-1.23.0-summary.md of the shared folder).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from agent_nb_bench import INPUT, RECORDS, build_chain, emit, find, make_agents, prior_messages

from agent_nb.workflow import FileCheckpointStorage, InMemoryCheckpointStorage

# The peer's reference figures (median run, us) for the same workload, and its bytes on disk.
PEER_RUN_US = {(0, "none"): 6_404, (0, "memory"): 158_597, (0, "file"): 176_977,
               (100, "none"): 40_979, (100, "memory"): 3_412_531, (100, "file"): 3_682_672}  # fmt: skip
PEER_BYTES = {0: 303_786, 100: 5_888_970}
STORAGES = ("none", "memory", "file")


def inputs(m: int) -> Any:
    return prior_messages(m) if m else INPUT


def make_storage(kind: str, root: Path, i: int) -> Any:
    if kind == "memory":
        return InMemoryCheckpointStorage()
    if kind == "file":
        return FileCheckpointStorage(root / f"run{i}")
    return None


async def one_run(n: int, m: int, kind: str, root: Path, i: int) -> tuple[float, int, Any]:
    """Seconds of one run on a fresh workflow and storage, its checkpoint count, and the storage."""
    agents = make_agents(n)
    workflow = build_chain(agents, "full")
    storage = make_storage(kind, root, i)
    t0 = time.perf_counter()
    result = await workflow.run(inputs(m), checkpoint_storage=storage)
    elapsed = time.perf_counter() - t0
    count = sum(e.type == "checkpoint" for e in result.events)
    expected = (m or 1) + n - 1  # the input (or the M prior messages) and the replies before it
    if agents[-1].received != [expected]:
        raise AssertionError(f"the last agent received {agents[-1].received}, expected [{expected}]")
    return elapsed, count, storage


def dir_bytes(directory: Path) -> tuple[int, int]:
    files = [p for p in directory.iterdir() if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


async def bench_ckpt(runs: int, warmup: int, root: Path, sizes: tuple[int, ...]) -> dict[int, Any]:
    """Section e: none / memory / file storage, interleaved run by run so machine load hits all alike."""
    last_file: dict[int, Any] = {}
    for m in sizes:
        times: dict[str, list[float]] = {k: [] for k in STORAGES}
        counts: dict[str, int] = {}
        for i in range(warmup + runs):
            for kind in STORAGES:
                elapsed, counts[kind], storage = await one_run(8, m, kind, root / f"m{m}-{kind}", i)
                if i >= warmup:
                    times[kind].append(elapsed)
                if kind == "file":
                    last_file[m] = storage
                    if i < warmup + runs - 1:
                        shutil.rmtree(storage.directory)
        none = statistics.median(times["none"])
        for kind in STORAGES:
            median = statistics.median(times[kind])
            fields: dict[str, Any] = {
                "run_us_median": median * 1e6,
                "overhead_vs_none": median / none,
                "checkpoints_per_run": float(counts[kind]),
            }
            if kind != "none":
                fields["us_per_checkpoint"] = (median - none) / counts[kind] * 1e6
            if kind == "file":
                fields["files"], fields["total_bytes"] = dir_bytes(last_file[m].directory)
            if (m, kind) in PEER_RUN_US:
                fields["peer_run_us"] = PEER_RUN_US[(m, kind)]
                fields["ratio_vs_peer"] = median * 1e6 / PEER_RUN_US[(m, kind)]
            emit("ckpt", prior_messages=m, storage=kind, runs=runs, **fields)
    return last_file


def _us(fn: Any, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def reading_us(directory: Path, checkpoint_id: str, reps: int) -> dict[str, float]:
    """Load one, list, and latest, each from a storage opened afresh (a new process's view: nothing cached)."""
    return {
        "load_one_us": _us(lambda: FileCheckpointStorage(directory).load(checkpoint_id), reps),
        "list_checkpoints_us": _us(lambda: FileCheckpointStorage(directory).list(), reps),
        "get_latest_us": _us(lambda: FileCheckpointStorage(directory).latest(), reps),
    }


async def resume(directory: Path, checkpoint_id: str) -> tuple[float, list[Any]]:
    """Seconds to resume in a fresh workflow, from a copy of ``directory`` (resuming writes checkpoints too)."""
    copy = directory.with_name(f"{directory.name}-copy")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(directory, copy)
    agents = make_agents(8)
    workflow = build_chain(agents, "full")
    t0 = time.perf_counter()
    await workflow.run(checkpoint_id=checkpoint_id, checkpoint_storage=FileCheckpointStorage(copy))
    return time.perf_counter() - t0, agents


async def bench_restore(storages: dict[int, Any], reps: int) -> None:
    """On the file storage of the last timed run: load, list, latest, and resuming from the last and the middle."""
    for m, used in storages.items():
        infos = FileCheckpointStorage(used.directory).list()
        mid = next(i for i in infos if i.superstep == 4)  # after agent_03: agents 4..7 are left
        reading = reading_us(used.directory, mid.id, reps)
        last_times, mid_times = [], []
        for _ in range(reps):
            last_times.append((await resume(used.directory, infos[-1].id))[0])
            elapsed, agents = await resume(used.directory, mid.id)
            mid_times.append(elapsed)
        emit(
            "ckpt_restore",
            prior_messages=m,
            **reading,
            resume_from_last_us=statistics.median(last_times) * 1e6,
            resume_from_mid_us=statistics.median(mid_times) * 1e6,
            resume_from_mid_agents_run=float(sum(bool(a.received) for a in agents)),
            resume_from_mid_last_agent_received=float(agents[-1].received[0]),
        )


async def bench_scale(runs: int, root: Path) -> None:
    """In-memory checkpoints against chain length."""
    for n in (2, 4, 8, 16):
        with_ckpt, without, count = [], [], 0
        for i in range(runs + 2):
            a, count, _ = await one_run(n, 0, "memory", root, i)
            b, _, _ = await one_run(n, 0, "none", root, i)
            if i >= 2:
                with_ckpt.append(a)
                without.append(b)
        t, t0 = statistics.median(with_ckpt), statistics.median(without)
        emit(
            "ckpt_scale",
            n_agents=n,
            run_ms_median=t * 1e3,
            run_ms_median_no_ckpt=t0 * 1e3,
            checkpoints_per_run=float(count),
            us_per_checkpoint=(t - t0) / count * 1e6,
        )


def summary(sizes: tuple[int, ...]) -> None:
    print("# targets (checkpoints)")
    for m in (0, 100):
        if r := find("ckpt", prior_messages=m, storage="file"):
            ok = r["overhead_vs_none"] <= 2.0
            peer = PEER_RUN_US[(m, "file")] / PEER_RUN_US[(m, "none")]
            print(
                f"# {'PASS' if ok else 'FAIL'}  ckpt M={m} file overhead_vs_none = {r['overhead_vs_none']:.2f}"
                f"  (target <= 2.0; peer {peer:.1f})"
            )
    by_m = {m: r["total_bytes"] for m in sizes if (r := find("ckpt", prior_messages=m, storage="file"))}
    if {0, 100, 1000} <= set(by_m):
        per_100 = by_m[100] - by_m[0]
        per_900 = (by_m[1000] - by_m[100]) / 9
        ok = abs(per_900 - per_100) <= 0.1 * per_100
        print(
            f"# {'PASS' if ok else 'FAIL'}  ckpt file bytes per 100 prior messages: M 0->100 {per_100:,}, "
            f"M 100->1000 {per_900:,.0f} per 100  (target: linear, within 10%)"
        )
        for m in (0, 100):
            ratio = PEER_BYTES[m] / by_m[m]
            print(f"#       M={m}: {by_m[m]:,} bytes on disk; peer {PEER_BYTES[m]:,} ({ratio:.0f}x more)")


async def run_all(quick: bool) -> None:
    runs, warmup = (5, 1) if quick else (40, 5)
    sizes = (0, 100, 1000)
    root = Path(tempfile.mkdtemp(prefix="agent-nb-ckpt-bench-"))
    try:
        storages = await bench_ckpt(runs, warmup, root, sizes)
        await bench_restore({m: storages[m] for m in (0, 100)}, 3 if quick else 20)
        await bench_scale(runs, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary(sizes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs: finishes in a few seconds")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    asyncio.run(run_all(args.quick))
    print(f"# total {time.perf_counter() - t0:.1f} s ({'quick' if args.quick else 'full'}); {len(RECORDS)} records")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
