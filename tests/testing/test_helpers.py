"""The helpers agent_nb ships for users' own test suites, and its pytest plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_nb import AgentExecutor, ChatAgent, MirrorChatClient, RealModelCallBlocked, WorkflowBuilder
from agent_nb.clients.openai import OpenAIChatClient
from agent_nb.testing import assert_context, assert_snapshot, nbval_config_path, snapshot_text


async def chain_result(mode: str = "last_agent"):
    agents = [AgentExecutor(ChatAgent(MirrorChatClient(), name=n), context_mode=mode) for n in ("planner", "writer")]
    return await WorkflowBuilder(start_executor=agents[0]).add_chain(agents).build().run("Plan a weekend in Porto")


async def test_assert_context_passes_and_returns_the_snapshot() -> None:
    result = await chain_result("full")
    snap = assert_context(result, "writer", contains=["Porto", "I see 1 message"], excludes="budget", count=2)
    assert snap.executor_id == "writer"


async def test_assert_context_fails_showing_the_executors_context() -> None:
    result = await chain_result("last_agent")
    with pytest.raises(AssertionError) as caught:
        assert_context(result.trace, "writer", contains="budget", count=3)
    text = str(caught.value)
    assert "no message contains 'budget'" in text and "it holds 1 message, not 3" in text
    assert "writer · agent · context_mode=last_agent" in text  # the context, as the trace reports it
    with pytest.raises(AssertionError, match="message 1 contains 'I see'"):
        assert_context(result, "writer", excludes="I see")
    with pytest.raises(KeyError, match="no executor 'critic'"):
        assert_context(result, "critic")


async def test_snapshots_ignore_what_changes_between_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = await chain_result(), await chain_result()
    assert snapshot_text(first) == snapshot_text(second)
    path = tmp_path / "trace.txt"
    assert_snapshot(first, path)  # written the first time
    assert_snapshot(second, path)
    other = await chain_result("full")
    with pytest.raises(AssertionError, match="AGENT_NB_UPDATE_SNAPSHOTS=1") as caught:
        assert_snapshot(other, path)
    assert "+    given     2 messages" in str(caught.value)
    monkeypatch.setenv("AGENT_NB_UPDATE_SNAPSHOTS", "1")
    assert_snapshot(other, path)
    assert path.read_text() == snapshot_text(other)


def test_a_test_cannot_reach_a_real_model_by_default() -> None:
    client = OpenAIChatClient("gpt-4.1-mini", api_key="sk-not-used")
    with pytest.raises(RealModelCallBlocked, match=r"refused \(test .*test_a_test_cannot_reach.*\).*allow_model_calls"):
        client.sdk  # noqa: B018 - the way every call to the service starts


@pytest.mark.allow_model_calls
def test_a_marked_test_can() -> None:
    assert OpenAIChatClient("gemma", base_url="http://127.0.0.1:1/v1").sdk is not None


@pytest.mark.parametrize(
    ("env", "blocked"),
    [({"AGENT_NB_OFFLINE": "1"}, True), ({"AGENT_NB_OFFLINE": "1", "AGENT_NB_RECORD": "1"}, False), ({}, False)],
)
def test_notebook_kernels_follow_the_environment(env: dict[str, str], blocked: bool) -> None:
    code = (
        "from agent_nb.clients.openai import OpenAIChatClient\n"
        "try:\n    OpenAIChatClient('m', base_url='http://127.0.0.1:1/v1').sdk\n    print('allowed')\n"
        "except Exception as e:\n    print(type(e).__name__)\n"
    )
    clean = {k: v for k, v in __import__("os").environ.items() if not k.startswith("AGENT_NB_")}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True)
    assert out.stdout.strip() == ("RealModelCallBlocked" if blocked else "allowed"), out.stderr


def test_the_nbval_settings_ship_with_the_package() -> None:
    path = nbval_config_path()
    assert path.exists() and "0xADDR" in path.read_text()
    out = subprocess.run([sys.executable, "-m", "agent_nb.cli", "nbval-config"], capture_output=True, text=True)
    assert out.stdout.strip() == str(path)
