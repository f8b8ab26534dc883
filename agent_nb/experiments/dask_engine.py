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
import functools
import hashlib
import io
import itertools
import logging
import math
import sys
import sysconfig
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..clients.redaction import is_secret_key
from .cells import Cell
from .local import run_local
from .runner import ExperimentError, ReadyWorkflow, Spec

__all__ = ["run_dask"]

_READY_LOCK = threading.Lock()
"""A ready workflow is one object per worker process: its batches take turns."""


def _quiet() -> None:
    """Runs on each worker of the embedded cluster before it closes: its shutdown is not logged as errors."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def _version() -> tuple[str, str]:
    """Runs on each worker: the agent_nb it imports, its version and a hash of its code.

    Two checkouts of one version may differ (an editable install): the code's hash tells them apart.
    A worker without agent_nb cannot even unpickle this.
    """
    import agent_nb

    return str(getattr(agent_nb, "__version__", "?")), _code_hash()


@functools.cache
def _code_hash() -> str:
    """A hash of agent_nb's own Python files, read once per process."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


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
    shipped: bytes, batch: Sequence[tuple[int, int, str, int]], max_concurrency: int, stop_name: str
) -> list[tuple[dict[str, Any], str | None]]:
    """Runs on a worker: one batch of cells, given as (place, configuration, input id, repeat).

    The run's stop event (``stop_name``) is looked at while the batch runs: once it is set, the
    cells under way are cancelled and no other starts (``client.cancel`` cannot stop a task that runs).
    """
    spec = _spec_of(shipped)
    cells = [Cell(k, spec.configs[c], input_id, repeat) for k, c, input_id, repeat in batch]
    finished: list[Cell] = []
    lock = _READY_LOCK if spec.ready is not None else contextlib.nullcontext()
    from distributed import Event, get_client

    stop = Event(stop_name, client=get_client())  # bound here: it is looked at from another thread

    async def batch_run() -> None:
        job = asyncio.ensure_future(
            run_local(spec, cells, finished.append, max_concurrency=max_concurrency, ready=ready)
        )
        loop = asyncio.get_running_loop()
        while not job.done():
            await asyncio.wait([job], timeout=_LOOK)
            if not job.done() and await loop.run_in_executor(None, stop.is_set):
                job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job

    with lock:
        ready = ReadyWorkflow(spec.ready) if spec.ready is not None else None
        try:
            asyncio.run(batch_run())
        finally:
            if ready is not None:
                ready.restore()
    return [(c.summary(), c.detail) for c in finished]


_LOOK = 0.2
"""Seconds between two looks at the run's stop event, on a worker running a batch."""


def _batches(
    cells: Iterable[Cell], spec: Spec, count: int, workers: int, size: int | None
) -> Iterator[list[tuple[int, int, str, int]]]:
    """Cells in batches, made as they are taken, at most 256 each.

    About four batches per worker, so the cluster stays busy to the end.
    """
    index = {id(c): n for n, c in enumerate(spec.configs)}
    keys = {_key(c): n for n, c in enumerate(spec.configs)}
    size = size or max(1, min(256, math.ceil(count / (4 * max(1, workers)))))
    batch: list[tuple[int, int, str, int]] = []
    for c in cells:
        batch.append((c.k, index.get(id(c.config), keys[_key(c.config)]), c.input_id, c.repeat))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


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


def _secret_in(value: Any) -> str | None:
    """The attribute of ``value`` that holds a secret (an API key, an auth header), or ``None``."""
    attributes = getattr(value, "__dict__", None)
    if not isinstance(attributes, dict) or isinstance(value, type):
        return None
    for name, held in attributes.items():
        if isinstance(held, str) and held and is_secret_key(str(name).lstrip("_")):
            return str(name)
        if isinstance(held, Mapping) and any(is_secret_key(k) and v for k, v in held.items()):
            return str(name)
    return None


class _HoldsSecret(Exception):
    def __init__(self, value: Any, attribute: str) -> None:
        super().__init__(f"{type(value).__name__}.{attribute} holds a secret")


def _pickled(value: Any) -> bytes:
    """``value`` pickled with cloudpickle; an object holding a secret (a client's API key) is refused."""
    import cloudpickle

    class Shipper(cloudpickle.CloudPickler):  # type: ignore[misc]
        def reducer_override(self, obj: Any) -> Any:
            attribute = _secret_in(obj)
            if attribute is not None:
                raise _HoldsSecret(obj, attribute)
            return super().reducer_override(obj)

    with io.BytesIO() as file:
        Shipper(file, protocol=cloudpickle.DEFAULT_PROTOCOL).dump(value)
        return file.getvalue()


def shippable(spec: Spec) -> bytes:
    """The experiment pickled for the cluster; a part that cannot be is refused, named, before anything is sent.

    It is pickled here with cloudpickle (``distributed`` would pickle functions by name, and a worker
    cannot import a notebook or a test file), and unpickled once per worker. What holds a secret (a
    client made with ``api_key=``, an auth header) is never sent: it is refused like what cannot be
    pickled, so keys stay in the process that has them.
    """
    _by_value()
    try:
        return _pickled(spec)
    except Exception:
        pass  # find the part that cannot be pickled, to name it
    parts: list[tuple[str, Any]] = [("the build function", spec.build), ("the workflow", spec.ready)]
    parts += [(f"the scorer {getattr(s, 'name', getattr(s, '__name__', repr(s)))!r}", s) for s in spec.scorers]
    parts += [(f"the value of {k!r} in configuration {n}", v) for n, c in enumerate(spec.configs) for k, v in c.items()]
    parts += [(f"input {case.id!r}", case) for case in spec.cases]
    for what, value in parts:
        try:
            _pickled(value)
        except _HoldsSecret as exc:
            raise ExperimentError(
                f"Experiment: {what} holds a secret ({exc}), which is never sent to a cluster; nothing was "
                "submitted. Make the client inside the build function (or give ModelJudge a function that makes "
                "it): it is then made on each worker, with the key that worker has"
            ) from None
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
    mine = (__version__, _code_hash())
    wrong = {address: v for address, v in versions.items() if tuple(v) != mine}
    if wrong:
        listed = ", ".join(
            f"{a} has {v[0]}" if v[0] != __version__ else f"{a} has another build of {v[0]} (code {v[1]})"
            for a, v in sorted(wrong.items())
        )
        raise ExperimentError(
            f"Experiment: the workers must run agent_nb {__version__} (code {mine[1]}), as this process does: "
            f"{listed}; install the same agent_nb on every worker"
        )
    if not versions:
        raise ExperimentError(f"Experiment: the cluster at {client.scheduler.address} has no workers; start some")
    return len(versions)


_GUARD = (
    "engine='dask' starts worker processes, and each imports the script that runs the experiment again: "
    'put the code that runs it under `if __name__ == "__main__":` (a notebook needs nothing)'
)


def refuse_in_a_starting_process() -> None:
    """Refuse to start a cluster from a process that ``multiprocessing`` is starting (called in the caller's thread).

    A worker process of the embedded cluster imports the user's script; a script that runs its
    experiment when imported would start a cluster again from every worker, and fail obscurely.
    """
    if _importing_main_in_a_child():
        raise ExperimentError(
            f"Experiment: this process was started to be a worker, not to run an experiment; {_GUARD}"
        )


def _importing_main_in_a_child() -> bool:
    """Whether this runs while a new process started by ``multiprocessing`` imports the user's script."""
    frame = sys._getframe()
    while frame is not None:
        if (
            frame.f_code.co_name == "_fixup_main_from_path"
            and frame.f_globals.get("__name__") == "multiprocessing.spawn"
        ):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


@contextlib.contextmanager
def _client(engine: Any) -> Iterator[Any]:
    """The given ``distributed.Client``, or an embedded ``LocalCluster`` of two worker processes, closed after."""
    if engine != "dask":
        yield engine
        return
    from distributed import Client, LocalCluster

    if getattr(sys.modules.get("__main__"), "__name__", None) == "__mp_main__":  # a worker importing the script
        raise ExperimentError(
            f"Experiment: this process was started to be a worker, not to run an experiment; {_GUARD}"
        )
    try:
        cluster = LocalCluster(  # on loopback only; its status page on a free port, never a fixed one
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        )
    except Exception as exc:
        script = getattr(sys.modules.get("__main__"), "__file__", None) is not None
        raise ExperimentError(
            f"Experiment: the embedded Dask cluster did not start ({type(exc).__name__}: {exc}); nothing ran"
            + (f". If the script runs the experiment when imported: {_GUARD}" if script else "")
        ) from exc
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
    count: int,
    tick: Callable[[], Any] = lambda: None,
    max_concurrency: int,
    batch_size: int | None = None,
    fail_fast: bool = False,
) -> None:
    """Run ``count`` cells on the cluster (called in a thread); ``done`` sees each as its batch returns.

    Batches are submitted as others finish (two per worker in flight), so the cells are made as
    they are taken and a stop leaves little to cancel. ``stop`` (set when the run is cancelled) is
    looked at every few hundredths of a second: the run's stop event is set, so the workers cancel
    the cells under way, the batches not finished are cancelled, and nothing more is taken.
    ``tick`` is called as often, while batches run (the store's writer writes what waits).
    """
    pickled = shippable(spec)
    from distributed import Event, as_completed

    with _client(engine) as client:
        workers = check_workers(client)
        [shipped] = client.scatter([pickled], broadcast=True, hash=False)
        halt = Event(f"agent-nb-stop-{uuid.uuid4().hex}", client=client)
        batches = _batches(cells, spec, count, workers, batch_size)

        def submit(batch: list[tuple[int, int, str, int]]) -> Any:
            return client.submit(_run_batch, shipped, batch, max_concurrency, halt.name, pure=False)

        futures = [submit(b) for b in itertools.islice(batches, 2 * workers)]
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
                    following = next(batches, None)
                    if following is not None and not stop.is_set():
                        futures.append(submit(following))
                        arriving.add(futures[-1])
        finally:
            if stop.is_set():
                halt.set()  # the batches under way stop their cells
            client.cancel(futures)


def _cell(spec: Spec, summary: dict[str, Any], detail: str | None) -> Cell:
    cell = Cell(**summary, detail=detail)
    cell.case = spec.cases[spec.index[cell.input_id]]
    return cell
