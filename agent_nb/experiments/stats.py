"""The intervals of an experiment's table: Wilson for rates, a seeded bootstrap for means and differences.

Every figure is reproducible: the bootstrap draws from ``random.Random(seed)``, so the same cells
give the same interval in every process and on every engine.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Estimate", "bootstrap", "bootstrap_ratio", "estimate", "wilson"]

Z95 = 1.959963984540054
RESAMPLES = 2000


@dataclass(frozen=True)
class Estimate:
    """A mean (or a rate) with its 95% interval, over ``n`` values."""

    mean: float
    low: float
    high: float
    n: int
    rate: bool = False
    """A pass rate (of bools), whose interval is Wilson's."""
    passed: int = 0

    def __str__(self) -> str:
        if self.n == 0:
            return "–"
        if self.rate:
            return f"{self.mean:.0%} [{self.low:.0%}, {self.high:.0%}] ({self.passed}/{self.n})"
        return f"{_num(self.mean)} [{_num(self.low)}, {_num(self.high)}]"


def _num(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def wilson(passed: int, n: int) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` successes in ``n`` trials, at 95%."""
    if n == 0:
        return (0.0, 1.0)
    p = passed / n
    denominator = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denominator
    return (0.0 if passed == 0 else max(0.0, centre - half), 1.0 if passed == n else min(1.0, centre + half))


def bootstrap(values: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval of the mean of ``values``, at 95% (seeded: reproducible)."""
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    if n == 1 or min(values) == max(values):
        return (values[0], values[0]) if n == 1 else (min(values), max(values))
    rng = random.Random(seed)
    return _percentiles([sum(rng.choices(values, k=n)) / n for _ in range(RESAMPLES)])


def _percentiles(draws: list[float]) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of bootstrap draws (NaN when there are none)."""
    if not draws:
        return (math.nan, math.nan)
    draws.sort()
    return (draws[int(0.025 * len(draws))], draws[int(0.975 * len(draws)) - 1])


def bootstrap_ratio(a: Sequence[float], b: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """A paired bootstrap interval of ``sum(b) / sum(a) - 1``, resampling the pairs (seeded: reproducible)."""
    rng = random.Random(seed)
    n = len(a)
    draws = []
    for _ in range(RESAMPLES):
        picks = rng.choices(range(n), k=n)
        total = sum(a[i] for i in picks)
        if total:
            draws.append(sum(b[i] for i in picks) / total - 1)
    return _percentiles(draws)


def estimate(values: Sequence[object], seed: int = 0) -> Estimate:
    """The mean and interval of a score's values (``None`` left out): a rate for bools, a mean otherwise."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        passed = sum(1 for v in present if v)
        low, high = wilson(passed, len(present))
        return Estimate(passed / len(present), low, high, len(present), rate=True, passed=passed)
    numbers = [float(v) for v in present]  # type: ignore[arg-type]
    if not numbers:
        return Estimate(math.nan, math.nan, math.nan, 0)
    low, high = bootstrap(numbers, seed)
    return Estimate(sum(numbers) / len(numbers), low, high, len(numbers))
