"""What an experiment gave: its cells, read from its store, and the tables, comparisons and plots over them.

Nothing here holds every cell: ``table``, ``compare`` and ``to_records`` read the store's summaries
as they go, and ``cell(k)`` reads one cell, with its trace, when asked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._lazy import telemetry
from ..errors import ArgumentError, bad_argument, did_you_mean
from ..rendering import Displayable
from .cells import Cell
from .configs import config_key, config_label, short
from .stats import Estimate, bootstrap, bootstrap_ratio, estimate

if TYPE_CHECKING:
    from .experiment import Experiment
    from .store import ExperimentStore

__all__ = ["Difference", "ExperimentResult", "ExperimentTable", "PairedComparison", "Row"]


@dataclass(frozen=True)
class Row:
    """One line of a table: a configuration (or a group of them) and its figures over its cells."""

    config: Mapping[str, Any]
    cells: int
    failures: int
    scores: Mapping[str, Estimate]
    tokens: Estimate
    latency_s: Estimate
    score_errors: int = 0
    """Cells where a scorer raised (their score is left out; ``result.failures()`` says why)."""

    @property
    def label(self) -> str:
        return config_label(self.config)


class ExperimentTable(Displayable):
    """One row per configuration (or per group of ``by``): scores with 95% intervals, tokens, latency, failures."""

    def __init__(
        self, name: str, keys: Sequence[str], rows: Sequence[Row], score_names: Sequence[str], *, timings: bool = True
    ) -> None:
        self.name, self.keys, self.rows, self.score_names = name, tuple(keys), tuple(rows), tuple(score_names)
        self.timings = timings
        """Whether the latency column is shown (off: a stable table, for a notebook checked under nbval)."""

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Row:
        return self.rows[index]

    def columns(self) -> list[str]:
        latency = ["latency (s)"] if self.timings else []
        errors = ["scorer errors"] if any(r.score_errors for r in self.rows) else []
        return [*self.keys, "cells", *self.score_names, "tokens", *latency, "failures", *errors]

    def values(self, row: Row) -> list[str]:
        return [
            *(short(row.config.get(k, "")) for k in self.keys),
            str(row.cells),
            *(str(row.scores[s]) if s in row.scores else "–" for s in self.score_names),
            str(row.tokens),
            *([f"{row.latency_s.mean:.3f}" if row.latency_s.n else "–"] if self.timings else []),
            str(row.failures),
            *([str(row.score_errors)] if any(r.score_errors for r in self.rows) else []),
        ]

    def to_text(self) -> str:
        header = self.columns()
        body = [self.values(r) for r in self.rows]
        widths = (
            [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
            if body
            else [len(h) for h in header]
        )
        lines = [
            f"experiment {self.name!r}: {sum(r.cells for r in self.rows)} cells",
            "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
        ]
        lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)).rstrip() for b in body]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"ExperimentTable({self.name!r}, rows={len(self.rows)})"


@dataclass(frozen=True)
class Difference:
    """One score of ``b`` against ``a`` over the pairs where both have it."""

    mean: float
    """The mean of b - a (for pass/fail: the change in pass rate)."""
    low: float
    high: float
    pairs: int
    rate: bool = False
    passed_a: int = 0
    passed_b: int = 0
    lost: int = 0
    """Inputs ``a`` passed and ``b`` failed."""
    gained: int = 0

    lower_is_better: bool = False
    """A score that counts something bad (a gap): then losing it is a fix, gaining it a break."""

    def __str__(self) -> str:
        if self.rate:
            change = (
                f"fixes {self.lost}, breaks {self.gained}"
                if self.lower_is_better
                else f"loses {self.lost}, gains {self.gained}"
            )
            return (
                f"{self.passed_a}/{self.pairs} → {self.passed_b}/{self.pairs} "
                f"({change}; {self.mean:+.0%} [{self.low:+.0%}, {self.high:+.0%}])"
            )
        return f"{self.mean:+.3g} [{self.low:+.3g}, {self.high:+.3g}]"


@dataclass(frozen=True)
class PairedComparison(Displayable):
    """Configuration ``b`` against ``a`` on the inputs both ran: paired differences, with their 95% intervals."""

    a: Mapping[str, Any]
    b: Mapping[str, Any]
    pairs: int
    tokens: tuple[float, float, float]
    """Mean of b's tokens over a's, minus one (``-0.6``: 60% fewer), and its 95% interval."""
    scores: Mapping[str, Difference]

    def to_text(self) -> str:
        parts = []
        if not math.isnan(self.tokens[0]):
            mean, low, high = self.tokens
            parts.append(f"tokens {_signed(mean)} [{_signed(low)}, {_signed(high)}]")
        parts += [f"{name} {d}" for name, d in self.scores.items()]
        return f"{config_label(self.b)} vs {config_label(self.a)} on {self.pairs} inputs: " + "; ".join(parts)

    def __repr__(self) -> str:
        return f"PairedComparison({config_label(self.b)!r} vs {config_label(self.a)!r}, pairs={self.pairs})"


def _signed(ratio: float) -> str:
    return f"{ratio:+.0%}" if not math.isnan(ratio) else "–"


class ExperimentResult(Displayable):
    """The cells of an experiment, in the order (configuration, input, repeat), whatever order they finished in."""

    def __init__(self, experiment: Experiment, store: ExperimentStore, experiment_id: str, *, planned: int) -> None:
        self.experiment, self.store, self.id, self.planned = experiment, store, experiment_id, planned

    @property
    def name(self) -> str:
        return self.experiment.name

    def __len__(self) -> int:
        return len(self.store.statuses(self.id))

    @property
    def complete(self) -> bool:
        """Every planned cell is stored."""
        return len(self) == self.planned

    def to_otel(self, tracer_provider: Any = None, **options: Any) -> Any:
        """Export the experiment as OpenTelemetry spans: a span per cell, its run inside (``agent_nb.telemetry``)."""
        return telemetry().export_experiment(self, tracer_provider, **options)

    def cells(self) -> Iterator[Cell]:
        """Every stored cell (without its trace; ``cell(k)`` reads one with it)."""
        for summary in self.store.summaries(self.id):
            yield self._cell(summary, None)

    def _cell(self, summary: dict[str, Any], detail: str | None) -> Cell:
        cell = Cell(**{**summary, "config": self._values(summary["config"])}, detail=detail)
        cell.case = self.experiment.case(cell.input_id)
        cell._view = self.experiment.view_of
        return cell

    def cell(self, k: int) -> Cell:
        """Cell ``k`` with its trace: ``result.cell(k).view()`` shows its run again."""
        if isinstance(k, bool) or not isinstance(k, int):
            raise bad_argument(f"experiment {self.name!r}: cell()", "k", k, "give the cell's number (an int)")
        found = self.store.detail(self.id, k)
        if found is None:
            raise ArgumentError(
                f"experiment {self.name!r} has no cell {k} stored (it plans {self.planned}, stores {len(self)}); "
                "run it again with the same store to run the missing cells",
                argument="k",
            )
        return self._cell(*found)

    def failures(self) -> list[Cell]:
        """The cells that did not end ``ok``, and those where a scorer raised."""
        return [c for c in self.cells() if c.status != "ok" or c.score_errors]

    # -- tables -------------------------------------------------------------------

    def table(self, *, timings: bool = True) -> ExperimentTable:
        """One row per configuration: the mean of each score with its 95% interval, tokens, latency, failures.

        ``timings=False`` leaves latency out, so the table is the same on every run (a notebook under nbval).
        """
        return self.by(*self.experiment.keys, timings=timings)

    def by(self, *keys: str, timings: bool = True) -> ExperimentTable:
        """One row per value of ``keys`` (the other keys' configurations pooled)."""
        known = self.experiment.keys
        for key in keys:
            if key not in known:
                raise ArgumentError(
                    f"experiment {self.name!r}: by({key!r}): no such configuration key "
                    f"(keys: {', '.join(known) or 'none'}){did_you_mean(key, known)}",
                    argument="keys",
                )
        groups: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        names: dict[str, None] = {}
        for s in self.store.summaries(self.id):
            config = {k: s["config"][k] for k in keys}
            groups.setdefault(json.dumps(config, sort_keys=True, default=str), (config, []))[1].append(s)
            names.update(dict.fromkeys(s["scores"]))
        order = {config_key({k: c[k] for k in keys}): i for i, c in enumerate(self.experiment.configs)}
        rows = []
        for config, cells in groups.values():
            config = self._values(config)
            ok = [c for c in cells if c["status"] == "ok"]
            scores = {n: estimate([c["scores"].get(n) for c in ok]) for n in names}
            tokens = estimate([float(sum(e["tokens"] for e in c["executors"].values())) for c in ok])
            latency = estimate([c["latency_s"] for c in ok])
            errors = sum(1 for c in ok if c["score_errors"])
            rows.append(Row(config, len(cells), len(cells) - len(ok), scores, tokens, latency, errors))
        rows.sort(key=lambda r: order.get(config_key(r.config), len(order)))
        return ExperimentTable(self.name, keys, rows, list(names), timings=timings)

    def _values(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A stored configuration (or part of one) with its values as given: a filter is a function again."""
        wanted = config_key(config)  # stored values are plain already: their key is the original's
        for c in self.experiment.configs:
            subset = {k: c[k] for k in config if k in c}
            if config_key(subset) == wanted:
                return subset
        return dict(config)

    def compare(self, a: Mapping[str, Any] | str, b: Mapping[str, Any] | str) -> PairedComparison:
        """``b`` against ``a`` on the same inputs and repeats: token ratio and score differences, with intervals.

        ``a`` and ``b`` select configurations by some of their keys (``{"writer.context_mode": "full"}``)
        or by their label; each must select exactly one configuration.
        """
        ca, cb = self._one(a), self._one(b)
        ka, kb = config_key(ca), config_key(cb)
        mine: dict[str, dict[tuple[str, int], dict[str, Any]]] = {ka: {}, kb: {}}
        for s in self.store.summaries(self.id):
            key = config_key(self._values(s["config"]))
            if key in mine and s["status"] == "ok":
                mine[key][(s["input_id"], s["repeat"])] = s
        pairs = sorted(set(mine[ka]) & set(mine[kb]))
        tok_a = [sum(e["tokens"] for e in mine[ka][p]["executors"].values()) for p in pairs]
        tok_b = [sum(e["tokens"] for e in mine[kb][p]["executors"].values()) for p in pairs]
        tokens = (math.nan, math.nan, math.nan)
        if pairs and sum(tok_a):
            ratio = sum(tok_b) / sum(tok_a) - 1
            low, high = bootstrap_ratio(tok_a, tok_b)
            tokens = (ratio, low, high)
        scores = {}
        names = dict.fromkeys(n for p in pairs for n in mine[ka][p]["scores"])
        for name in names:
            both = [
                (mine[ka][p]["scores"].get(name), mine[kb][p]["scores"].get(name))
                for p in pairs
                if mine[ka][p]["scores"].get(name) is not None and mine[kb][p]["scores"].get(name) is not None
            ]
            if not both:
                continue
            diffs = [float(y) - float(x) for x, y in both]
            low, high = bootstrap(diffs)
            rate = all(isinstance(v, bool) for pair in both for v in pair)
            scores[name] = Difference(
                sum(diffs) / len(diffs), low, high, len(both), rate,
                passed_a=sum(1 for x, _ in both if x is True), passed_b=sum(1 for _, y in both if y is True),
                lost=sum(1 for x, y in both if x is True and y is False),
                gained=sum(1 for x, y in both if x is False and y is True),
                lower_is_better=name in self.experiment.lower_is_better,
            )  # fmt: skip
        return PairedComparison(ca, cb, len(pairs), tokens, scores)

    def _one(self, selector: Mapping[str, Any] | str) -> dict[str, Any]:
        configs = self.experiment.configs
        if isinstance(selector, str):
            found = [c for c in configs if config_label(c) == selector]
        elif isinstance(selector, Mapping):
            found = [
                c
                for c in configs
                if all(k in c and config_key({k: c[k]}) == config_key({k: v}) for k, v in selector.items())
            ]
        else:
            raise bad_argument(
                f"experiment {self.name!r}: compare()", "a configuration", selector, "give a dict of keys or a label"
            )
        if len(found) != 1:
            labels = "; ".join(config_label(c) for c in configs)
            raise ArgumentError(
                f"experiment {self.name!r}: compare(): {selector!r} selects {len(found)} configurations, not one "
                f"(configurations: {labels}); give more keys",
                argument="configuration",
            )
        return dict(found[0])

    # -- out ----------------------------------------------------------------------

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per cell, in order: configuration keys, input, status, tokens, latency, ``score.<name>``."""
        records = []
        for s in self.store.summaries(self.id):
            record: dict[str, Any] = dict(s["config"])
            record.update(
                k=s["k"], input_id=s["input_id"], repeat=s["repeat"], status=s["status"],
                error_type=s["error_type"], error=s["error"], output=s["output"],
                tokens=sum(e["tokens"] for e in s["executors"].values()),
                input_tokens=s["input_tokens"], output_tokens=s["output_tokens"], latency_s=s["latency_s"],
                routes=",".join(s["routes"]), attempts=s["attempts"],
            )  # fmt: skip
            for eid, e in s["executors"].items():
                record[f"{eid}.tokens"], record[f"{eid}.messages"], record[f"{eid}.dropped"] = (
                    e["tokens"], e["messages"], e["dropped"],
                )  # fmt: skip
            record.update({f"finding.{k}": n for k, n in s["findings"].items()})
            record.update({f"score.{k}": v for k, v in s["scores"].items()})
            records.append(record)
        return records

    def to_jsonl(self, path: str | Path) -> Path:
        """Write ``to_records()`` as JSON lines; the path written."""
        path = Path(path)
        path.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in self.to_records()))
        return path

    def to_pandas(self) -> Any:
        """``to_records()`` as a pandas DataFrame (pandas is not a dependency: install it to use this)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas() needs pandas, which agent_nb does not install: pip install pandas") from None
        return pandas.DataFrame(self.to_records())

    def plot(self, score: str | None = None, *, theme: str = "auto") -> Any:
        """A matplotlib figure: ``score`` (by default the first) and tokens, by configuration, with intervals.

        ``theme="auto"`` is transparent with grey text, legible in a light and a dark notebook; ``"light"``
        and ``"dark"`` are solid.
        """
        from .plots import experiment_figure

        return experiment_figure(self.table(), score, theme=theme)

    def to_text(self) -> str:
        text = self.table().to_text()
        if not self.complete:
            text += f"\n({len(self)} of {self.planned} cells stored: run again with the same store for the rest)"
        return text

    def __repr__(self) -> str:
        return f"ExperimentResult({self.name!r}, cells={len(self)}/{self.planned})"
