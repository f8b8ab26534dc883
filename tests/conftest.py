"""Settings for every test: no test may depend on the developer's environment."""

import pytest


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_NB_RECORD"):
        monkeypatch.delenv(var, raising=False)
