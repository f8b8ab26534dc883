"""What telemetry costs: a run with it off as fast as before it existed, and with it on.

    python bench/telemetry_bench.py [--quick]

The 8-agent ``full`` chain of the contract's echo agents, runs interleaved round by round:
``before`` is a run whose event emission has no observer check at all (the runner as it was),
``off`` the runner as shipped with nothing observing, ``on`` with ``telemetry.instrument`` writing
to an SDK tracer provider with no exporter (the cost of making the spans, not of sending them).
Targets: off / before within 1.02 (a run started unwatched appends its events to its list), and
``import agent_nb`` plus a run loading nothing of OpenTelemetry, and ``import agent_nb`` loading the same
modules, in the same time, as if the telemetry package did not exist.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from agent_nb_bench import INPUT, build_chain, make_agents

from agent_nb.workflow import runner as runner_module


def _without_the_check(self: Any, event: Any) -> None:
    """The runner's emit as it was before runs could be observed."""
    self.events.append(event)
    if self._emit_extra is not None:
        self._emit_extra(event)


_shipped_init = runner_module._Run.__init__


def _init_before(self: Any, *args: Any, **kwargs: Any) -> None:
    _shipped_init(self, *args, **kwargs)
    self.emit = types.MethodType(_without_the_check, self)


async def _run_once(kind: str) -> float:
    workflow = build_chain(make_agents(8), "full")
    if kind == "before":
        runner_module._Run.__init__ = _init_before  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        await workflow.run(INPUT)
        return time.perf_counter() - start
    finally:
        runner_module._Run.__init__ = _shipped_init  # type: ignore[method-assign]


async def main(quick: bool) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from agent_nb import telemetry

    rounds = 60 if quick else 400
    times: dict[str, list[float]] = {"before": [], "off": [], "on": []}
    provider = TracerProvider()
    for _ in range(20):  # warm-up
        for kind in ("before", "off"):
            await _run_once(kind)
    for _ in range(rounds):
        for kind in ("before", "off"):
            times[kind].append(await _run_once(kind))
        with telemetry.instrument(provider):
            times["on"].append(await _run_once("on"))
    medians = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    for kind, value in medians.items():
        print(json.dumps({"bench": "telemetry", "case": kind, "run_us": round(value, 1), "runs": rounds}))
    ratio = medians["off"] / medians["before"]
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, json; from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder; "
            "SequentialBuilder([ChatAgent(MirrorChatClient(), name='a')]).build().run_sync('hi'); "
            "print(json.dumps([m for m in sys.modules if m.split('.')[0] == 'opentelemetry']))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = json.loads(loaded.stdout)
    print(f"off / before: {ratio:.3f} (target <= 1.02): {'PASS' if ratio <= 1.02 else 'FAIL'}")
    print(f"on / off: {medians['on'] / medians['off']:.2f} (spans made, none sent; no target)")
    verdict = "PASS" if not modules else "FAIL"
    print(f"OpenTelemetry modules loaded by import agent_nb and a run: {len(modules)}: {verdict}")
    with_it, without, same = _import_cost(9 if quick else 25)
    print(f"import agent_nb: {with_it:.0f} ms, and {without:.0f} ms as if agent_nb.telemetry did not exist; "
          f"the same modules loaded: {'PASS' if same else 'FAIL'}")  # fmt: skip


_IMPORT = (
    "import sys, time, json\n"
    "if sys.argv[1] == 'hidden':\n"
    "    sys.modules['agent_nb.telemetry'] = None  # as before the package existed: importing it would fail\n"
    "t0 = time.perf_counter(); import agent_nb; t1 = time.perf_counter()\n"
    "loaded = sorted(m for m, module in sys.modules.items() if m.startswith('agent_nb') and module is not None)\n"
    "print(json.dumps([(t1 - t0) * 1e3, loaded]))\n"
)


def _import_cost(rounds: int) -> tuple[float, float, bool]:
    """``import agent_nb`` in fresh interpreters, with the telemetry package and with it hidden, interleaved."""
    times: dict[str, list[float]] = {"present": [], "hidden": []}
    loaded: dict[str, list[str]] = {}
    for _ in range(rounds):
        for case in times:
            out = subprocess.run([sys.executable, "-c", _IMPORT, case], capture_output=True, text=True, check=True)
            ms, modules = json.loads(out.stdout)
            times[case].append(ms)
            loaded[case] = modules
    same = loaded["present"] == loaded["hidden"]
    return statistics.median(times["present"]), statistics.median(times["hidden"]), same


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
