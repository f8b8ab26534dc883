"""An experiment's figure (matplotlib, imported here on first use): a score and tokens by configuration."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError, did_you_mean
from .configs import short

if TYPE_CHECKING:
    from .result import ExperimentTable
    from .stats import Estimate

__all__ = ["experiment_figure"]


def experiment_figure(table: ExperimentTable, score: str | None = None, *, theme: str = "auto") -> Any:
    """Two panels: ``score`` (the first by default) with its 95% interval, and tokens to the models, per row."""
    names = list(table.score_names)
    if score is None:
        score = names[0] if names else None
    elif score not in names:
        raise ArgumentError(
            f"experiment {table.name!r}: plot({score!r}): no such score (scores: {', '.join(names) or 'none'})"
            + did_you_mean(score, names),
            argument="score",
        )
    from ..display.plots import NotebookFigure, themed  # matplotlib, on first use

    labels = ["\n".join(short(row.config.get(k, "")) for k in table.keys) or row.label for row in table.rows]
    keys = " / ".join(table.keys)  # the values label the bars, the keys the axis
    panels: list[tuple[str, list[Estimate | None]]] = [("tokens to the models", [row.tokens for row in table.rows])]
    if score is not None:
        panels.insert(0, (score, [row.scores.get(score) for row in table.rows]))
    fig = NotebookFigure(figsize=(max(5.0, 1.3 * len(labels) * len(panels)), 3.4), layout="constrained")
    for n, (title, estimates) in enumerate(panels, 1):
        ax = fig.add_subplot(1, len(panels), n)
        means = [e.mean if e is not None and e.n else math.nan for e in estimates]
        below = [m - e.low if e is not None and e.n else 0.0 for m, e in zip(means, estimates, strict=True)]
        above = [e.high - m if e is not None and e.n else 0.0 for m, e in zip(means, estimates, strict=True)]
        ax.bar(range(len(labels)), means, yerr=[below, above], capsize=4, color="#4c78a8")
        ax.set_xticks(range(len(labels)), labels, fontsize=8)
        ax.set_xlabel(keys, fontsize=8)
        ax.set_title(title, fontsize=10)
        if estimates and all(e is not None and e.rate for e in estimates):
            ax.set_ylim(0, 1.05)
    fig.suptitle(f"{table.name}: mean and 95% interval per configuration", fontsize=10)
    return themed(fig, theme)
