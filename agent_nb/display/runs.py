"""Telling runs apart: each run named by what differs between them (a context mode, a route, the input).

A class compares the same question under three context modes, or the turns of one
conversation; "run 2 of 3" says nothing there. ``run_labels`` reads, per run, every agent
executor's context mode (with its filter), the routes that answered and the input, keeps what
is not the same in every run, and names each run by that: ``writer: last_agent``,
``route fast``, ``turn 2: Now a sunny Saturday``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..contents import shorten
from ..messages import Message
from ..trace.text import describe_value

if TYPE_CHECKING:
    from ..trace import Trace
    from ..workflow.result import RunResult

__all__ = ["as_runs", "labelled_runs", "run_labels"]

_ROUTE, _INPUT = "\0route", "\0input"  # keys no executor id can be


def _features(trace: Trace) -> dict[str, str]:
    """What a run was: each agent executor's mode, the routes that answered, its input."""
    found: dict[str, str] = {}
    routes: dict[str, None] = {}
    for s in trace:
        if s.mode:
            found[s.executor_id] = s.mode
        if s.response is not None and s.response.route:
            routes[s.response.route] = None
    if routes:
        found[_ROUTE] = ", ".join(routes)
    if len(trace):
        found[_INPUT] = _text_of(trace[0].received)
    return found


def _text_of(value: object) -> str:
    """A run's input as the person typed it, where it is text; described otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and value and all(isinstance(m, Message) for m in value):
        value = value[-1]
    text = value.text if isinstance(value, Message) else None
    return text or describe_value(value)


def run_labels(traces: Sequence[Trace]) -> list[str]:
    """One short label per run, from what differs between the runs; unique (a repeat gets its number)."""
    features = [_features(t) for t in traces]
    keys = list(dict.fromkeys(k for f in features for k in f))
    differs = [k for k in keys if len({f.get(k, "") for f in features}) > 1]
    labels = []
    for i, f in enumerate(features):
        by_value: dict[str, list[str]] = {}  # executors switched together read as one part
        for k in differs:
            if k not in (_ROUTE, _INPUT):
                by_value.setdefault(f.get(k, "not run"), []).append(k)
        parts = [f"{', '.join(ids)}: {mode}" for mode, ids in by_value.items()]
        if _ROUTE in differs:
            parts.append(f"route {f.get(_ROUTE, 'none')}")
        if parts:
            labels.append(" · ".join(parts))
        elif _INPUT in differs:
            labels.append(f"turn {i + 1}: {shorten(f.get(_INPUT, ''), 32)}")
        else:
            labels.append(f"run {i + 1}")
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [f"{label} (run {i + 1})" if seen[label] > 1 else label for i, label in enumerate(labels)]


def as_runs(results: RunResult | Sequence[RunResult] | Mapping[str, RunResult]) -> list[RunResult]:
    """One run, a list of them, or a mapping's runs, as a list (never empty)."""
    if isinstance(results, Mapping):
        runs = list(results.values())
    else:
        runs = list(results) if isinstance(results, Sequence) else [results]
    if not runs:
        raise ValueError("no runs to show: give a RunResult, a list of them, or a mapping of label to RunResult")
    return runs


def labelled_runs(
    results: RunResult | Sequence[RunResult] | Mapping[str, RunResult], labels: Sequence[str] | None = None
) -> tuple[list[RunResult], list[str]]:
    """The runs and their labels: given (a mapping's keys, or ``labels``), or read from what differs."""
    if isinstance(results, Mapping):
        if labels is not None:
            raise ValueError("give the labels as the mapping's keys or as labels=..., not both")
        labels = [str(k) for k in results]
    runs = as_runs(results)
    if labels is None:
        return runs, run_labels([r.trace for r in runs])
    labels = [str(label) for label in labels]
    if len(labels) != len(runs):
        raise ValueError(f"{len(labels)} labels for {len(runs)} runs: give one label per run")
    return runs, labels
