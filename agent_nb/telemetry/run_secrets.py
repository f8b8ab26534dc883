"""The secrets a run holds, so that no span exports them: its clients' keys and headers, its options'.

The environment's keys and the ``secrets=`` given to ``instrument()`` are known from the start;
each run adds what its workflow holds (``secrets_of``): every chat client's own secrets
(``clients.redaction.client_secrets``: an OpenAI client's key, its secret-named default headers,
the credentials of its URL; a router's routes and a recorder's inner client too), and the values
under secret names of every agent's and planner's options and of the run's ``client_kwargs``
(``option_secrets``). A trace alone holds none of them (its requests' options are masked already),
so ``result.to_otel()`` knows more than ``result.trace.to_otel()``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..clients.redaction import client_secrets, is_secret_key, option_secrets, secrets_in

__all__ = ["config_secrets", "environment_secrets", "known", "secrets_of"]

_HOLDERS = ("agent", "client", "planner", "workflow")
"""The attributes through which a workflow holds its agents, their clients and the workflows they run."""


def environment_secrets() -> list[str]:
    """The values of the environment's variables named ``*_API_KEY`` or ``*_TOKEN``."""
    return [v for k, v in os.environ.items() if k.endswith(("_API_KEY", "_TOKEN")) and v]


def secrets_of(workflow: Any, client_kwargs: Mapping[str, Any] | None = None) -> set[str]:
    """The secrets a workflow's executors hold (sub-workflows and harness components too), and its run's options."""
    found: set[str] = set()
    for options in (client_kwargs or {}).values():
        if isinstance(options, Mapping):
            found |= option_secrets(options)
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(workflow, 0)]
    while todo:
        one, depth = todo.pop()
        if one is None or id(one) in seen or depth > 16:
            continue
        seen.add(id(one))
        if callable(getattr(one, "get_response", None)):  # a chat client: it names its own
            found.update(client_secrets(one))
            continue
        options = getattr(one, "options", None)
        if isinstance(options, Mapping):  # an agent's or a planner's request options
            found |= option_secrets(options)
        executors = getattr(one, "executors", None)
        if isinstance(executors, Mapping):
            todo += ((executor, depth + 1) for executor in executors.values())
        todo += ((getattr(one, name, None), depth + 1) for name in _HOLDERS)
    return found


def config_secrets(config: Mapping[str, Any]) -> set[str]:
    """The secrets of an experiment's configuration: values under secret names (``writer.options.api_key``)."""
    found: set[str] = set()
    for key, value in config.items():
        found |= secrets_in(value, secret=is_secret_key(key.rsplit(".", 1)[-1]))
    return found


def known(more: Iterable[str]) -> list[str]:
    """The secrets known before any run: those given, and the environment's."""
    return [*more, *environment_secrets()]
