"""The Dask engine: cells in batches on a ``distributed`` cluster (an embedded ``LocalCluster`` by default).

The experiment's definition (build function, ready workflow, inputs, scorers) is checked for
pickling before anything is submitted, then scattered once to every worker; each task is a batch
of cells, run on the worker with the local engine, and its cells come back as plain data as soon
as the batch ends. Clients are made on the worker by the build function, so no open connection
travels. A worker that cannot import agent_nb, or has another version of it, is named before any
cell runs. ``distributed`` is imported here only (the optional extra ``agent_nb[dask]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from .cells import Cell
from .local import run_local
from .runner import ExperimentError, ReadyWorkflow, Spec

__all__ = ["run_dask"]

_READY_LOCK = threading.Lock()
"""A ready workflow is one object per worker process: its batches take turns."""


def _quiet() -> None:
    """Runs on each worker of the embedded cluster before it closes: its shutdown is not logged as errors."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def _version() -> str:
    """Runs on each worker: the agent_nb it imports (a worker without it cannot even unpickle this)."""
    import agent_nb

    return str(getattr(agent_nb, "__version__", "?"))


_SPECS: dict[str, Spec] = {}
"""On a worker: the experiments it has unpickled, by the digest of their bytes (each is read once)."""


def _spec_of(shipped: bytes) -> Spec:
    import cloudpickle

    digest = hashlib.sha256(shipped).hexdigest()
    spec = _SPECS.get(digest)
    if spec is None:
        if len(_SPECS) >= 4:  # a worker that served many experiments keeps the last few
            _SPECS.pop(next(iter(_SPECS)))
        spec = _SPECS[digest] = cloudpickle.loads(shipped)
    return spec


def _run_batch(
    shipped: bytes, batch: Sequence[tuple[int, int, str, int]], max_concurrency: int
) -> list[tuple[dict[str, Any], str | None]]:
    """Runs on a worker: one batch of cells, given as (place, configuration, input id, repeat)."""
    spec = _spec_of(shipped)
    cells = [Cell(k, spec.configs[c], input_id, repeat) for k, c, input_id, repeat in batch]
    finished: list[Cell] = []
    lock = _READY_LOCK if spec.ready is not None else contextlib.nullcontext()
    with lock:
        ready = ReadyWorkflow(spec.ready) if spec.ready is not None else None
        try:
            asyncio.run(run_local(spec, cells, finished.append, max_concurrency=max_concurrency, ready=ready))
        finally:
            if ready is not None:
                ready.restore()
    return [(c.summary(), c.detail) for c in finished]


def _batches(
    cells: Iterable[Cell], spec: Spec, workers: int, size: int | None
) -> list[list[tuple[int, int, str, int]]]:
    """Cells in batches: about four per worker, so the cluster stays busy to the end, at most 256 cells each."""
    index = {id(c): n for n, c in enumerate(spec.configs)}
    keys = {_key(c): n for n, c in enumerate(spec.configs)}
    rows = [(c.k, index.get(id(c.config), keys[_key(c.config)]), c.input_id, c.repeat) for c in cells]
    size = size or max(1, min(256, math.ceil(len(rows) / (4 * max(1, workers)))))
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def _key(config: Any) -> str:
    from .configs import config_key

    return config_key(config)


def _by_value() -> None:
    """Ship the code of the user's own modules (a script's helpers, a test file) by value, not by name.

    A worker imports installed packages and agent_nb itself; a module only this process can import
    (one beside a notebook, a test module) would fail to unpickle there. A notebook's own functions
    live in ``__main__``, which cloudpickle ships by value already.
    """
    import cloudpickle

    paths = sysconfig.get_paths()
    installed = {Path(paths[k]).resolve() for k in ("purelib", "platlib", "stdlib")}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file is None or name == "__main__" or name.split(".")[0] in ("agent_nb", "cloudpickle"):
            continue
        where = Path(file).resolve()
        if not any(p in where.parents for p in installed) and where.suffix == ".py":
            cloudpickle.register_pickle_by_value(module)


def shippable(spec: Spec) -> bytes:
    """The experiment pickled for the cluster; a part that cannot be is refused, named, before anything is sent.

    It is pickled here with cloudpickle (``distributed`` would pickle functions by name, and a worker
    cannot import a notebook or a test file), and unpickled once per worker.
    """
    import cloudpickle

    _by_value()
    try:
        return cast(bytes, cloudpickle.dumps(spec))
    except Exception:
        pass  # find the part that cannot be pickled, to name it
    parts: list[tuple[str, Any]] = [("the build function", spec.build), ("the workflow", spec.ready)]
    parts += [(f"the scorer {getattr(s, 'name', getattr(s, '__name__', repr(s)))!r}", s) for s in spec.scorers]
    parts += [(f"the value of {k!r} in configuration {n}", v) for n, c in enumerate(spec.configs) for k, v in c.items()]
    parts += [(f"input {case.id!r}", case) for case in spec.cases]
    for what, value in parts:
        try:
            cloudpickle.dumps(value)
        except Exception as exc:
            raise ExperimentError(
                f"Experiment: {what} cannot be sent to the cluster ({type(exc).__name__}: {exc}); nothing was "
                "submitted. Make clients inside the build function (they are made on the worker, never shipped "
                "with open connections), give ModelJudge a function that makes its client, and keep live objects "
                "(widgets, open files) out of the experiment"
            ) from exc
    raise ExperimentError(
        "Experiment: it cannot be sent to the cluster (cloudpickle refused it); nothing was submitted"
    )


def check_workers(client: Any) -> int:
    """The number of workers, once each is known to import this version of agent_nb."""
    from .. import __version__

    try:
        versions = client.run(_version)
    except Exception as exc:
        raise ExperimentError(
            f"Experiment: a worker of {client.scheduler.address} cannot run agent_nb ({type(exc).__name__}: {exc}); "
            f"install agent_nb {__version__} on every worker (pip install -e '.[dask]' in this checkout)"
        ) from exc
    wrong = {address: v for address, v in versions.items() if v != __version__}
    if wrong:
        listed = ", ".join(f"{a} has {v}" for a, v in sorted(wrong.items()))
        raise ExperimentError(
            f"Experiment: the workers must run agent_nb {__version__}, as this process does: {listed}; "
            "install the same version on every worker"
        )
    if not versions:
        raise ExperimentError(f"Experiment: the cluster at {client.scheduler.address} has no workers; start some")
    return len(versions)


@contextlib.contextmanager
def _client(engine: Any) -> Iterator[Any]:
    """The given ``distributed.Client``, or an embedded ``LocalCluster`` of two worker processes, closed after."""
    if engine != "dask":
        yield engine
        return
    from distributed import Client, LocalCluster

    cluster = LocalCluster(  # on loopback only; its status page on a free port, never a fixed one
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )
    try:
        with Client(cluster) as client:
            yield client
            client.run(_quiet)  # every cell is back: a heartbeat cut off by the closing cluster is no error
    finally:
        cluster.close()


def run_dask(
    engine: Any,
    spec: Spec,
    cells: Iterable[Cell],
    done: Callable[[Cell], Any],
    stop: threading.Event,
    *,
    tick: Callable[[], Any] = lambda: None,
    max_concurrency: int,
    batch_size: int | None = None,
    fail_fast: bool = False,
) -> None:
    """Run ``cells`` on the cluster (called in a thread); ``done`` sees each as its batch returns.

    ``stop`` (set when the run is cancelled) is looked at every few hundredths of a second: the
    batches not finished yet are cancelled on the cluster, and nothing more is taken from it.
    ``tick`` is called as often, while batches run (the store's writer writes what waits).
    """
    pickled = shippable(spec)
    from distributed import as_completed

    with _client(engine) as client:
        workers = check_workers(client)
        [shipped] = client.scatter([pickled], broadcast=True, hash=False)
        futures = [
            client.submit(_run_batch, shipped, batch, max_concurrency, pure=False)
            for batch in _batches(cells, spec, workers, batch_size)
        ]
        arriving = as_completed(futures)
        try:
            while not arriving.is_empty() and not stop.is_set():
                if not arriving.has_ready():
                    tick()
                    stop.wait(0.02)
                    continue
                for future in arriving.next_batch(block=False):
                    for summary, detail in future.result():  # a batch's error (a worker that died) is raised
                        cell = _cell(spec, summary, detail)
                        done(cell)
                        if fail_fast and cell.status != "ok":
                            stop.set()
        finally:
            client.cancel(futures)


def _cell(spec: Spec, summary: dict[str, Any], detail: str | None) -> Cell:
    cell = Cell(**summary, detail=detail)
    cell.case = spec.cases[spec.index[cell.input_id]]
    return cell
