"""Turning live spans on and off: once per provider however often it is called, and without the extra."""

from __future__ import annotations

from typing import Any

from conftest import Spans

from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder, telemetry
from agent_nb.workflow.observers import OBSERVERS


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
