"""agent_nb's pytest plugin (registered by entry point): tests run with real model calls refused.

A test marked ``@pytest.mark.allow_model_calls`` may call real models. Notebook kernels started by
nbval inherit ``AGENT_NB_OFFLINE=1``, so a notebook under test cannot call one either. Recording
cassettes (``AGENT_NB_RECORD=1``) lifts the refusal. Experiments draw no progress bar under test
(``AGENT_NB_NO_PROGRESS=1``), so notebooks' stored outputs stay stable; ``progress=True`` still draws one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ..clients.guard import allowing_real_models, refusing_real_models


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker; refuse real calls in the kernels nbval will start."""
    config.addinivalue_line("markers", "allow_model_calls: this test may call real models over the network")
    os.environ.setdefault("AGENT_NB_OFFLINE", "1")  # for the kernels nbval starts
    os.environ.setdefault("AGENT_NB_NO_PROGRESS", "1")


@pytest.fixture(autouse=True)
def _agent_nb_offline(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("allow_model_calls") is not None:
        with allowing_real_models():
            yield
        return
    with refusing_real_models(f"test {request.node.nodeid}"):
        yield
