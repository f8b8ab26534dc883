"""Names a package exports but imports on first use.

``import agent_nb`` should not pay for SQLite, routing, tool schemas or checkpoints before
they are used (bench/: import time is a measured target); a package lists those names
here and gets the module-level ``__getattr__`` and ``__dir__`` that load them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports", "telemetry"]


def telemetry() -> Any:
    """``agent_nb.telemetry``, loaded when a trace, a result or an experiment is asked for its spans.

    Those types live below it (it reads them); as ``agent_nb.rendering`` loads the display layer,
    their ``to_otel`` loads it by name, so nothing of OpenTelemetry is imported before it is used.
    """
    return importlib.import_module(".telemetry", "agent_nb")


def lazy_exports(
    package: str, namespace: dict[str, Any], table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, where ``table`` maps a name to its submodule."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value  # the next lookup is an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
