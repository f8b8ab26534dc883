"""Fixtures of the workflow tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_nb import InMemoryHistoryProvider, SQLiteHistoryProvider


@pytest.fixture(params=["memory", "sqlite"])
def history(request: pytest.FixtureRequest, tmp_path: Path):
    """Each history provider in turn: the test holds for both."""
    if request.param == "memory":
        yield InMemoryHistoryProvider()
    else:
        with SQLiteHistoryProvider(tmp_path / "history.sqlite") as provider:
            yield provider
