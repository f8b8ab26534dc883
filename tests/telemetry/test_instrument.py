"""Turning live spans on and off: once per provider however often it is called, and without the extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from conftest import Spans

from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder, telemetry
from agent_nb.workflow.observers import OBSERVERS

ROOT = Path(__file__).parents[2]


def one_agent() -> Any:
    return SequentialBuilder([ChatAgent(MirrorChatClient(), name="a")], name="w").build()


async def test_instrument_called_again_with_the_same_provider_replaces_the_first(spans: Spans) -> None:
    first = telemetry.instrument(spans.provider)
    second = telemetry.instrument(spans.provider, capture_content=True)  # the notebook cell run again, changed
    assert len(OBSERVERS) == 1
    assert (repr(first), repr(second)) == ("Instrumentation(off)", "Instrumentation(on, capture_content=True)")
    await one_agent().run("hi")
    assert spans.tree() == ["workflow w", "  invoke_agent a", "    chat mirror"]  # once, not twice
    assert "gen_ai.input.messages" in spans.one("chat mirror").attributes  # with the latest settings
    first.uninstrument()  # ended already: nothing changes
    assert len(OBSERVERS) == 1

    other = Spans()  # another provider is traced beside it
    with telemetry.instrument(other.provider):
        spans.clear()
        await one_agent().run("hi")
        assert len(spans.all) == len(other.all) == 3
    other.provider.shutdown()
    telemetry.uninstrument()
    assert OBSERVERS == []


def test_without_the_otel_extra_telemetry_and_to_otel_say_what_to_install() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if the extra were not installed
        from agent_nb import ChatAgent, MirrorChatClient, WorkflowBuilder
        result = WorkflowBuilder(start_executor=ChatAgent(MirrorChatClient(), name="a")).build().run_sync("hi")
        for export in (lambda: __import__("agent_nb.telemetry"), result.trace.to_otel, result.to_otel):
            try:
                export()
            except ImportError as exc:
                print(exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all("pip install 'agent_nb[otel]'" in line for line in lines), lines
