"""A switch that refuses real model calls, so that tests and notebooks under test run offline.

agent_nb's pytest plugin turns it on for every test (``@pytest.mark.allow_model_calls`` lets one
through) and, through ``AGENT_NB_OFFLINE=1`` in the environment, for the notebook kernels that
nbval starts. Recording a cassette (``AGENT_NB_RECORD=1``) needs the real model, so it lifts it.
Every client that goes to the network asks ``check`` first; offline and replaying clients never do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ..errors import RealModelCallBlocked

__all__ = ["allowing_real_models", "check", "refusing_real_models"]

_refusals: list[str] = []
"""Why calls are refused now (innermost last); empty: the environment decides."""
_ALLOWED = "allowed"
"""A refusal that is not one: ``allowing_real_models`` pushes it."""


def _from_environment() -> str | None:
    if os.environ.get("AGENT_NB_RECORD", "") in ("1", "true", "yes"):
        return None
    if os.environ.get("AGENT_NB_OFFLINE", "") in ("1", "true", "yes"):
        return "AGENT_NB_OFFLINE=1 is set"
    return None


def check(client: object) -> None:
    """Raise ``RealModelCallBlocked`` if real calls are refused now."""
    reason = _refusals[-1] if _refusals else _from_environment()
    if reason is not None and reason != _ALLOWED:
        raise RealModelCallBlocked(
            f"a real model call from {client!r} was refused ({reason}): tests run offline. Replay it from a "
            "cassette (agent_nb.clients.replay.cassette_client; record one with AGENT_NB_RECORD=1), use an "
            "offline client, or mark the test @pytest.mark.allow_model_calls"
        )


@contextlib.contextmanager
def refusing_real_models(reason: str) -> Iterator[None]:
    """Refuse real model calls inside the block (in every thread: the switch is process-wide)."""
    _refusals.append(reason)
    try:
        yield
    finally:
        _refusals.pop()


@contextlib.contextmanager
def allowing_real_models() -> Iterator[None]:
    """Allow real model calls inside the block, whatever the environment says."""
    _refusals.append(_ALLOWED)
    try:
        yield
    finally:
        _refusals.pop()
