"""Configurations: a grid's product (or a list of dicts), each with a label and a stable key."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ArgumentError, bad_argument
from ..messages import Message

__all__ = ["config_key", "config_label", "expand", "plain_value"]

WHERE = "Experiment"


def expand(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None) -> tuple[dict[str, Any], ...]:
    """The configurations of ``grid``: the product of its values in key order, or the dicts given."""
    if grid is None:
        return ({},)
    if isinstance(grid, Mapping):
        keys = list(grid)
        for key in keys:
            values = grid[key]
            if not isinstance(key, str) or not key:
                raise bad_argument(WHERE, "a grid key", key, "give a non-empty str")
            if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence) or not values:
                raise bad_argument(
                    WHERE, f"grid[{key!r}]", values, "give a non-empty list of values", f"grid={{{key!r}: [...]}}"
                )
        configs = tuple(dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values()))
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        configs = tuple(dict(c) for c in grid if isinstance(c, Mapping))
        if len(configs) != len(grid) or not configs:
            raise bad_argument(WHERE, "grid", grid, "give a dict of lists, or a non-empty list of dicts")
    else:
        raise bad_argument(WHERE, "grid", grid, "give a dict of lists, or a non-empty list of dicts")
    keys_seen: dict[str, int] = {}
    for n, c in enumerate(configs):
        key = config_key(c)
        if key in keys_seen:
            raise ArgumentError(
                f"{WHERE}: configurations {keys_seen[key]} and {n} are the same ({config_label(c)}); give each once",
                argument="grid",
            )
        keys_seen[key] = n
    return configs


def plain_value(value: Any) -> Any:
    """A value as JSON, for keys and hashes: messages by their fields, functions by module and name, others by repr."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Message):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if callable(value) and name:
        return f"{getattr(value, '__module__', '?')}.{name}"
    return f"{type(value).__qualname__}:{value!r}"


def config_key(config: Mapping[str, Any]) -> str:
    """A configuration as canonical JSON: the same configuration gives the same key, in any process."""
    return json.dumps({k: plain_value(v) for k, v in config.items()}, sort_keys=True, ensure_ascii=False)


def short(value: Any) -> str:
    """A value as a label shows it: a filter by its name, a text as it is."""
    if isinstance(value, str):
        return value
    name = getattr(value, "__name__", None)
    if callable(value) and name:
        return str(name)
    return repr(value)


def config_label(config: Mapping[str, Any]) -> str:
    """``route=fast, writer.context_mode=full``; ``(default)`` for the empty configuration."""
    return ", ".join(f"{k}={short(v)}" for k, v in config.items()) or "(default)"
