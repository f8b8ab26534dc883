"""A real Dask cluster on loopback: one scheduler and two workers, each its own OS process, started once per session.

The processes are started with the venv's own interpreter, in their own process groups, so teardown can stop each
one (and anything it spawned) by PID; their output goes to log files whose tails explain a failed start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from distributed import Client

ROOT = Path(__file__).parents[2]
START_TIMEOUT = 60.0  # seconds, for the whole cluster
STOP_TIMEOUT = 10.0  # seconds between SIGTERM and SIGKILL


@dataclass(frozen=True)
class DaskCluster:
    address: str
    pids: dict[str, int]  # "scheduler", "worker-1", "worker-2" -> the PID of the process the fixture started


def _require_distributed() -> None:
    """A missing dev dependency is a broken setup, not a reason to skip."""
    try:
        import distributed  # noqa: F401
    except ImportError as error:
        missing = str(error)
    else:
        return
    pytest.fail(f"{missing}: `make test` installs it (pip install -e '.[dev]')", pytrace=False)


def _spawn(name: str, args: list[str], logs: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    # The child keeps its own copy of the log's descriptor, so ours is closed at once.
    with open(logs / f"{name}.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=logs,
            start_new_session=True,  # its own process group: killpg(pid) reaches it and its children only
        )


def _stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    """Stop the workers, then the scheduler: each by SIGTERM to its group, then SIGKILL after STOP_TIMEOUT.

    In that order each exits in a fraction of a second; a worker told to close by a scheduler that is closing
    while it handles its own SIGTERM hangs until killed.
    """
    for proc in reversed(procs.values()):
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
    procs.clear()  # reaped: their PIDs may be reused, so a second call must signal nothing


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group has exited already
        os.killpg(proc.pid, sig)  # start_new_session=True: the group id is the PID


def _check_alive(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for name, proc in procs.items():
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}")


def _read_address(scheduler_file: Path, procs: dict[str, subprocess.Popen[bytes]], deadline: float) -> str:
    while time.monotonic() < deadline:
        _check_alive(procs)
        try:
            return str(json.loads(scheduler_file.read_text())["address"])
        except (OSError, ValueError, KeyError):  # not written yet, or half written
            time.sleep(0.1)
    raise TimeoutError(f"no scheduler file {scheduler_file} after {START_TIMEOUT} s")


def _wait_for_workers(address: str, procs: dict[str, subprocess.Popen[bytes]], deadline: float) -> None:
    """Wait in short steps, so that a worker that died fails the start now rather than at the deadline."""
    from distributed import Client

    with Client(address, timeout=max(1.0, deadline - time.monotonic())) as client:
        while True:
            _check_alive(procs)
            try:
                client.wait_for_workers(2, timeout=0.5)
                return
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise


def _tails(logs: Path, chars: int = 3000) -> str:
    return "\n".join(
        f"--- {log.name} ---\n{log.read_text(errors='replace')[-chars:]}" for log in sorted(logs.glob("*.log"))
    )


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    """Start the scheduler and both workers together (the workers wait for the scheduler file), then wait for both."""
    _require_distributed()
    tmp = tmp_path_factory.mktemp("dask")
    scheduler_file = tmp / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # --no-dashboard still serves /health and /metrics, by default on :8787 of every interface: hence the address.
    loopback = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    loopback += ["--scheduler-file", str(scheduler_file)]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    started = time.monotonic()
    try:
        try:
            procs["scheduler"] = _spawn(
                "scheduler", ["distributed.cli.dask_scheduler", "--port", "0", *loopback], tmp, env
            )
            for name in ("worker-1", "worker-2"):
                (tmp / name).mkdir()
                # --no-nanny: the worker runs in the process started here, so its PID is the one in `pids`.
                worker = ["--name", name, "--nthreads", "1", "--nworkers", "1", "--no-nanny"]
                worker += ["--local-directory", str(tmp / name), "--death-timeout", "60"]
                procs[name] = _spawn(name, ["distributed.cli.dask_worker", *worker, *loopback], tmp, env)
            deadline = started + START_TIMEOUT
            address = _read_address(scheduler_file, procs, deadline)
            _wait_for_workers(address, procs, deadline)
        except Exception as error:
            _stop(procs)  # before reading the logs, so they are complete
            raise RuntimeError(f"the Dask cluster did not start: {error!r}\n{_tails(tmp)}") from error
        yield DaskCluster(address, {name: proc.pid for name, proc in procs.items()})
    finally:
        _stop(procs)


@pytest.fixture(scope="session")
def dask_scheduler(dask_cluster: DaskCluster) -> str:
    """The scheduler's address, ``tcp://127.0.0.1:<port>``."""
    return dask_cluster.address


@pytest.fixture(scope="session")
def dask_processes(dask_cluster: DaskCluster) -> dict[str, int]:
    """The PIDs the fixture started: ``scheduler``, ``worker-1``, ``worker-2``."""
    return dask_cluster.pids


@pytest.fixture
def dask_client(dask_scheduler: str) -> Iterator[Client]:
    """A client of the session's cluster, closed after the test."""
    from distributed import Client

    with Client(dask_scheduler, timeout=30) as client:
        yield client
