"""``Experiment``: a target run over inputs × configurations × repeats, scored, stored as it goes, resumable.

```python
exp = Experiment(build, inputs=questions, grid={"writer.context_mode": ["full", "last_agent"]},
                 scorers=[scorers.contains()], name="modes")
result = await exp.run(store="runs.sqlite")   # run again: only the missing cells run
```
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ArgumentError, bad_argument, did_you_mean
from ..sync import run_sync
from ..watchers import watched_experiment
from ..workflow import Workflow
from .cells import Cell
from .configs import config_key, config_label, expand
from .identity import IDENTITY, code_digest, definition_id, target_identity
from .inputs import Case, read_inputs
from .progress import Progress, wanted
from .result import ExperimentResult
from .runner import ExperimentError, ReadyWorkflow, Spec, Watched, check_keys, make_target, takes_case
from .scorers import name_of
from .store import ExperimentStore

__all__ = ["Experiment", "UnreadKeyWarning"]


class UnreadKeyWarning(UserWarning):
    """A key of the grid that no configuration's build read: most likely misspelt."""


ENGINES = ("local", "dask")
_SETTINGS = ("context_mode", "context_filter")
"""What a built workflow's executors are usually configured by (for a "did you mean")."""
FLUSH_CELLS, FLUSH_SECONDS = 64, 0.5
"""A batch of finished cells is written when it holds 64 cells or its first is half a second old."""


class Experiment:
    """Run ``target`` over ``inputs`` × the configurations of ``grid`` × ``repeats``, and score every cell.

    Args:
        target: ``build(config)`` (or ``build(config, case)``) returning a ``Workflow``, an agent or a
            ``Harness``, made afresh for each cell; or a ready ``Workflow``, whose configuration keys
            are ``route``, ``<executor>.context_mode``, ``<executor>.context_filter`` and
            ``<executor>.options.<name>``.
        inputs: strings, messages, dicts (``{"id", "input" or "turns", "expected", ...}``), lists of
            user turns, or the path of a JSONL file of those.
        grid: ``{key: [values]}`` (its product) or a list of configurations (dicts).
        scorers: functions ``(cell) -> bool | float | dict | None`` (``agent_nb.experiments.scorers``).
        repeats: runs of each (configuration, input).
        name: how the store knows the experiment; by default the target's name.
        timeout: seconds one try of a cell may take (then it is ``timeout``); ``None`` for no limit.
        keep_traces: store each cell's trace, so ``result.cell(k).view()`` shows its run.
    """

    def __init__(
        self,
        target: Callable[..., Any] | Workflow,
        *,
        inputs: Any,
        grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None = None,
        scorers: Sequence[Any] = (),
        repeats: int = 1,
        name: str | None = None,
        timeout: float | None = None,
        keep_traces: bool = True,
    ) -> None:
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise bad_argument("Experiment", "repeats", repeats, "give an int >= 1")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise bad_argument("Experiment", "timeout", timeout, "give a number of seconds > 0, or None")
        if name is not None and (not isinstance(name, str) or not name):
            raise bad_argument("Experiment", "name", name, "give a non-empty str")
        self.cases: tuple[Case, ...] = read_inputs(inputs)
        self.configs: tuple[dict[str, Any], ...] = expand(grid)
        self.scorers = tuple(scorers)
        names = [name_of(s) for s in self.scorers]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ArgumentError(
                f"Experiment: two scorers are named {twice[0]!r}; give each its own name", argument="scorers"
            )
        self.repeats = repeats
        self.timeout = timeout
        self.keep_traces = keep_traces
        self.build: Callable[..., Any] | None
        self.ready: Workflow | None
        self.name: str
        if isinstance(target, Workflow):
            check_keys(target, self.configs)
            self.build, self.ready = None, target
            self.name = name or target.name
        elif callable(target):
            self.build, self.ready = target, None
            self.name = name or str(getattr(target, "__name__", "experiment"))
        else:
            raise bad_argument(
                "Experiment",
                "target",
                target,
                "give a build function config -> Workflow | agent | Harness, or a Workflow",
            )
        self.with_case = self.build is not None and takes_case(self.build)
        self._by_id = {c.id: c for c in self.cases}
        self._digest: tuple[tuple[Case, ...], str] | None = None
        if self.build is not None:
            self._check_build()

    def _check_build(self) -> None:
        """Make every configuration's target once, before anything runs: a bad key fails here, not in cell 400.

        A key of the grid that no configuration's build reads changes no target, so it is most likely
        misspelt: a warning says so, with a "did you mean" (not an error: a scorer may read the key).
        """
        spec = self._spec()
        read: set[str] = set()
        made: list[Any] = []
        for config in self.configs:
            try:
                made.append(make_target(spec, config, self.cases[0], given=Watched(config, read)))
            except ExperimentError:
                raise
            except Exception as exc:
                raise ExperimentError(
                    f"Experiment {self.name!r}: build({config_label(config)}) raised {type(exc).__name__}: {exc}; "
                    "nothing ran. Fix the configuration or the build function"
                ) from exc
        unread = [k for k in self.keys if k not in read]
        if unread:
            known = read | {f"{e}.{s}" for t in made if isinstance(t, Workflow) for e in t.executors for s in _SETTINGS}
            key = unread[0]
            where = f" for input {self.cases[0].id!r}" if self.with_case else ""
            warnings.warn(
                f"Experiment {self.name!r}: no configuration's build read the key {key!r}{where}, so it changes "
                f"no target{did_you_mean(key, sorted(known)) or '.'} Fix its name, or read it in build(config); "
                "a key only a scorer reads (cell.config) is fine",
                UnreadKeyWarning,
                stacklevel=3,
            )

    @property
    def lower_is_better(self) -> frozenset[str]:
        """The scores where less is better (a scorer says so with ``lower_is_better = True``: gaps, errors)."""
        return frozenset(name_of(s) for s in self.scorers if getattr(s, "lower_is_better", False))

    @property
    def keys(self) -> list[str]:
        """The configuration keys, in the order first given."""
        return list(dict.fromkeys(k for c in self.configs for k in c))

    def __len__(self) -> int:
        return len(self.configs) * len(self.cases) * self.repeats

    def case(self, input_id: str) -> Case | None:
        return self._by_id.get(input_id)

    def cells(self) -> Iterator[Cell]:
        """Every cell, not yet run, in order: configuration, then input, then repeat (made as they are taken)."""
        k = 0
        for config in self.configs:
            for case in self.cases:
                for repeat in range(self.repeats):
                    yield Cell(k, config, case.id, repeat)
                    k += 1

    def definition(self) -> dict[str, Any]:
        """What identifies the experiment: a change to any of it makes another experiment.

        The inputs are kept as their number and a hash (10,000 inputs do not make a 10 MB definition).
        """
        return {
            "identity": IDENTITY,
            "name": self.name,
            "target": target_identity(self.build, self.ready),
            "configs": [config_key(c) for c in self.configs],
            "config_code": sorted({code_digest(v) for c in self.configs for v in c.values() if callable(v)}),
            "inputs": [len(self.cases), self._inputs_digest()],
            "repeats": self.repeats,
            "scorers": [[name_of(s), code_digest(s)] for s in self.scorers],
            "timeout": self.timeout,
        }

    def _inputs_digest(self) -> str:
        """A hash of every input, one JSON line each; made once for the inputs the experiment holds."""
        known = self._digest
        if known is None or known[0] is not self.cases:
            encode = json.JSONEncoder(sort_keys=True, default=str).encode  # what json.dumps(..., sort_keys=True) writes
            digest = hashlib.sha256()
            for case in self.cases:
                digest.update(encode(case.identity()).encode() + b"\n")
            known = self._digest = (self.cases, digest.hexdigest()[:16])
        return known[1]

    @property
    def id(self) -> str:
        """A stable hash of ``definition()``: the same experiment has the same id in every process."""
        return definition_id(self.definition())

    def _spec(self, *, retries: int = 0, retry_wait: float = 0.5) -> Spec:
        return Spec(
            self.build, self.ready, self.configs, self.cases, self.scorers, self.timeout, retries, self.with_case,
            self.keep_traces, retry_wait,
        )  # fmt: skip

    def view_of(self, cell: Cell) -> Any:
        """A cell's run view: its trace beside the graph of its target, made again (no model is called)."""
        from ..workflow import RunResult

        workflow = self.ready
        if workflow is None and cell.case is not None:
            try:
                made = make_target(self._spec(), cell.config, cell.case)
                workflow = made if isinstance(made, Workflow) else getattr(made, "workflow", None)
            except Exception:
                workflow = None  # the view still shows every executor's context, without the graph
        return RunResult((), cell.trace, "completed" if cell.status == "ok" else "failed", workflow)

    # -- running ------------------------------------------------------------------

    @watched_experiment  # telemetry's span around the experiment, when it watches
    async def run(
        self,
        *,
        engine: Any = "local",
        max_concurrency: int = 8,
        store: str | Path | ExperimentStore | None = None,
        progress: bool | None = None,
        retries: int = 2,
        retry_wait: float = 0.5,
        rerun_failed: bool = False,
        fail_fast: bool = False,
        replace: bool = False,
        batch_size: int | None = None,
    ) -> ExperimentResult:
        """Run the cells the store does not hold yet; the result holds every stored cell of this experiment.

        ``engine``: ``"local"`` (this process, ``max_concurrency`` cells at a time), ``"dask"`` (an
        embedded ``LocalCluster`` of two worker processes) or a ``distributed.Client`` of a cluster.
        ``store``: a SQLite file (or an ``ExperimentStore``) that receives each cell as it finishes;
        run again with it and only the missing cells run (``rerun_failed=True``: the failed ones too).
        A changed definition under the same name is refused, unless ``replace=True`` drops the old
        cells. ``retries``: tries again, with backoff, on a rate-limited, timed-out or unavailable model.
        """
        where = f"experiment {self.name!r}: run()"
        if engine not in ENGINES and not callable(getattr(engine, "submit", None)):
            raise bad_argument(where, "engine", engine, "give 'local', 'dask' or a distributed.Client")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise bad_argument(where, "max_concurrency", max_concurrency, "give an int >= 1")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise bad_argument(where, "retries", retries, "give an int >= 0")
        db = store if isinstance(store, ExperimentStore) else ExperimentStore(store)
        mine = self.definition()
        experiment_id = definition_id(mine)
        self._claim(db, experiment_id, mine, replace)
        stored = db.statuses(experiment_id)
        rerun = {"cancelled", "failed", "timeout"} if rerun_failed else {"cancelled"}
        left = sum(1 for k in range(len(self)) if stored.get(k, "cancelled") in rerun)
        todo = (c for c in self.cells() if stored.get(c.k, "cancelled") in rerun)  # made one by one: memory stays flat
        spec = self._spec(retries=retries, retry_wait=retry_wait)
        failed = sum(1 for status in stored.values() if status in ("failed", "timeout"))
        bar = Progress(self.name, len(self), len(self) - left, enabled=wanted(progress), failures=failed)
        writer = _Writer(db, experiment_id, bar)
        try:
            if left and engine == "local":
                ready = ReadyWorkflow(self.ready) if self.ready is not None else None
                try:
                    await _run_here(spec, todo, writer, max_concurrency, ready, fail_fast)
                finally:
                    if ready is not None:
                        ready.restore()
            elif left:
                await _run_on_cluster(engine, spec, todo, left, writer, max_concurrency, batch_size, fail_fast)
        except (asyncio.CancelledError, KeyboardInterrupt):
            writer.flush()
            print(self._stopped(db, experiment_id), file=sys.stderr)
            raise
        finally:
            writer.flush()
            bar.close()
        return ExperimentResult(self, db, experiment_id, planned=len(self))

    def run_sync(self, **kwargs: Any) -> ExperimentResult:
        """``run`` for code that cannot ``await`` (a script; a notebook cell works too)."""
        return run_sync(self.run(**kwargs))

    def _claim(self, db: ExperimentStore, experiment_id: str, mine: dict[str, Any], replace: bool) -> None:
        """Record the experiment in the store; refuse another definition under its name unless replacing."""
        for other_id, other in db.find(self.name):
            if other_id == experiment_id:
                continue
            if not replace:
                changed = [k for k in mine if mine[k] != other.get(k) and k != "identity"]
                if other.get("identity") != IDENTITY:
                    raise ExperimentError(
                        f"experiment {self.name!r}: {db!r} holds an experiment of that name stored by an older "
                        "agent_nb, which identified experiments differently, so the two cannot be told the same; "
                        "its cells are not mixed with these. Give this one another name=..., or run(..., "
                        "replace=True) to drop the old cells"
                    )
                raise ExperimentError(
                    f"experiment {self.name!r}: {db!r} holds an experiment of that name with another definition "
                    f"({', '.join(changed) or 'its definition'} changed); its cells are not mixed with these. Give "
                    "this one another name=..., or run(..., replace=True) to drop the old cells"
                )
            db.forget(other_id)
        db.add(experiment_id, self.name, mine, len(self))

    def _stopped(self, db: ExperimentStore, experiment_id: str) -> str:
        statuses = db.statuses(experiment_id).values()
        n = sum(1 for status in statuses if status != "cancelled")
        stopped = len(statuses) - n
        during = f" ({stopped} stopped while running, recorded as cancelled)" if stopped else ""
        kept = (
            f"they are in {db.path}: run it again with the same store to run the other {len(self) - n}"
            if db.path is not None
            else "they are lost with the in-memory store: give store='runs.sqlite' to keep cells across runs"
        )
        return f"experiment {self.name!r} stopped: {n} of {len(self)} cells finished{during}; {kept}"

    def __repr__(self) -> str:
        return (
            f"Experiment({self.name!r}, configurations={len(self.configs)}, inputs={len(self.cases)}, "
            f"repeats={self.repeats}, cells={len(self)})"
        )


class _Writer:
    """Finished cells, written to the store in batches (from the loop, or the cluster's thread).

    A batch is written when it holds ``FLUSH_CELLS`` cells, or once its first cell is
    ``FLUSH_SECONDS`` old (``tick``, called while the cells run): a finished cell is in the store
    within half a second, however long the next one takes.
    """

    def __init__(self, db: ExperimentStore, experiment_id: str, bar: Progress) -> None:
        self.db, self.id, self.bar = db, experiment_id, bar
        self._buffer: list[Cell] = []
        self._lock = threading.Lock()
        self._since = 0.0

    def __call__(self, cell: Cell) -> None:
        self.bar.update(cell)
        with self._lock:
            if not self._buffer:
                self._since = time.monotonic()
            self._buffer.append(cell)
            if len(self._buffer) >= FLUSH_CELLS or time.monotonic() - self._since >= FLUSH_SECONDS:
                self._write()

    def tick(self) -> None:
        """Write the batch if its first cell has waited ``FLUSH_SECONDS``."""
        with self._lock:
            if self._buffer and time.monotonic() - self._since >= FLUSH_SECONDS:
                self._write()

    def flush(self) -> None:
        with self._lock:
            self._write()

    def _write(self) -> None:
        batch, self._buffer = self._buffer, []
        self.db.put(self.id, batch)


async def _run_here(
    spec: Spec,
    todo: Iterable[Cell],
    writer: _Writer,
    max_concurrency: int,
    ready: ReadyWorkflow | None,
    fail_fast: bool,
) -> None:
    from .local import run_local

    async def ticking() -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS / 5)
            writer.tick()

    ticker = asyncio.ensure_future(ticking())
    try:
        await run_local(spec, todo, writer, max_concurrency=max_concurrency, ready=ready, fail_fast=fail_fast)
    finally:
        ticker.cancel()


async def _run_on_cluster(
    engine: Any,
    spec: Spec,
    todo: Iterable[Cell],
    count: int,
    writer: _Writer,
    max_concurrency: int,
    batch_size: int | None,
    fail_fast: bool,
) -> None:
    """The Dask engine in a thread (its client blocks); cancelled, it stops taking results and cancels the rest."""
    try:
        import distributed  # noqa: F401  (the extra is checked here, with its name)
    except ImportError:
        raise ExperimentError(
            f"Experiment: engine={engine!r} needs Dask's distributed, which is not installed; nothing ran. "
            "Install the extra: pip install 'agent_nb[dask]'"
        ) from None
    from .dask_engine import refuse_in_a_starting_process, run_dask

    if engine == "dask":
        refuse_in_a_starting_process()

    stop = threading.Event()
    loop = asyncio.get_running_loop()
    job = loop.run_in_executor(
        None,
        lambda: run_dask(
            engine,
            spec,
            todo,
            writer,
            stop,
            count=count,
            tick=writer.tick,
            max_concurrency=max_concurrency,
            batch_size=batch_size,
            fail_fast=fail_fast,
        ),
    )
    try:
        await asyncio.shield(job)
    except asyncio.CancelledError:
        stop.set()
        await asyncio.wait([job], timeout=60)
        raise
