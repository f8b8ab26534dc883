"""A conversation whose route and context modes change between turns — no widgets needed."""

import asyncio
import json

import pytest
from doubles import GatedClient

from agent_nb import (
    AgentExecutor,
    ChatAgent,
    FunctionChatClient,
    InMemoryHistoryProvider,
    MirrorChatClient,
    RouteNotFoundError,
    RoutingChatClient,
    UsageError,
    WorkflowBuilder,
    WorkflowBusyError,
)
from agent_nb.dialogue import Dialogue


def trip(router):
    agents = [
        AgentExecutor(ChatAgent(router, name=name, history=InMemoryHistoryProvider()))
        for name in ("planner", "researcher", "writer")
    ]
    return WorkflowBuilder(start_executor=agents[0], name="trip").add_chain(agents).build()


def two_routes():
    return RoutingChatClient({"fast": MirrorChatClient(), "smart": MirrorChatClient()})


async def test_a_route_change_moves_the_next_turn_with_the_whole_history():
    router = two_routes()
    d = Dialogue(ChatAgent(router, name="assistant", history=InMemoryHistoryProvider()))
    first = await d.send("Plan a weekend in Porto")
    d.set_route("smart")
    second = await d.send("Make it cheaper")
    assert (first.routes, second.routes) == ({"assistant": "fast"}, {"assistant": "smart"})
    assert second.answer.startswith('I see 3 messages: user "Plan a weekend in Porto"')
    assert d.route == "smart" and d.routes == ["fast", "smart"]


async def test_a_mode_change_applies_to_the_next_turn_and_is_recorded():
    d = Dialogue(trip(two_routes()))
    await d.send("Plan a rainy Sunday")
    d.set_mode("writer", "last_agent")
    d.set_mode("researcher", "custom: user_messages")
    e = await d.send("Indoors only")
    assert e.modes == {"planner": "full", "researcher": "custom: user_messages", "writer": "last_agent"}
    writer = e.result.trace.last("writer")
    assert writer.context_mode == "last_agent" and [m.role for m in writer.dropped] == ["user"]
    assert e.result.trace.last("researcher").context_filter == "user_messages"
    assert d.mode_of("writer") == "last_agent"


async def test_changes_made_while_a_turn_runs_wait_for_the_next_turn():
    gated = GatedClient(MirrorChatClient())
    router = RoutingChatClient({"fast": gated, "smart": MirrorChatClient()})
    d = Dialogue(ChatAgent(router, name="assistant", history=InMemoryHistoryProvider()))
    running = asyncio.ensure_future(d.send("first"))
    await gated.started.wait()
    assert d.busy
    d.set_route("smart")
    d.set_mode("assistant", "last_agent")
    assert d.route == "smart" and d.mode_of("assistant") == "last_agent"  # what the next turn will use
    with pytest.raises(WorkflowBusyError, match="still running"):
        await d.send("second")
    gated.gate.set()
    first = await running
    assert first.routes == {"assistant": "fast"} and first.modes == {"assistant": "full"}
    second = await d.send("second")
    assert second.routes == {"assistant": "smart"} and second.modes == {"assistant": "last_agent"}


async def test_a_failed_turn_is_recorded_raises_and_leaves_the_conversation_as_it_was():
    calls = []

    def flaky(messages, options):
        calls.append(len(messages))
        if len(calls) == 2:
            raise RuntimeError("the model fell over")
        return f"seen {len(messages)}"

    router = RoutingChatClient({"only": FunctionChatClient(flaky)})
    d = Dialogue(ChatAgent(router, name="assistant", history=InMemoryHistoryProvider()))
    await d.send("one")
    with pytest.raises(Exception, match="the model fell over"):
        await d.send("two")
    assert "the model fell over" in d.exchanges[-1].error and not d.busy
    third = await d.send("three")
    assert third.answer == "seen 3"  # 'two' never entered the history
    assert [e.number for e in d.exchanges] == [1, 2, 3] and len(d.results) == 2


async def test_bad_choices_say_what_there_is():
    d = Dialogue(trip(two_routes()))
    with pytest.raises(RouteNotFoundError, match=r"no route 'smrt'.*did you mean 'smart'"):
        d.set_route("smrt")
    with pytest.raises(ValueError, match="no mode 'last'; choose one of: full, last_agent"):
        d.set_mode("writer", "last")
    with pytest.raises(KeyError, match=r"no agent executor 'writr'.*did you mean 'writer'"):
        d.set_mode("writr", "full")
    with pytest.raises(ValueError, match="needs the text"):
        await d.send("  ")
    lone = Dialogue(ChatAgent(MirrorChatClient(), name="solo"))
    assert lone.routes == [] and lone.route is None
    with pytest.raises(UsageError, match="no RoutingChatClient"):
        lone.set_route("fast")


async def test_reset_starts_again_and_keeps_the_route_and_modes():
    d = Dialogue(trip(two_routes()))
    d.set_route("smart")
    d.set_mode("writer", "last_agent")
    await d.send("Plan a rainy Sunday")
    d.reset()
    assert d.exchanges == [] and d.route == "smart" and d.mode_of("writer") == "last_agent"
    e = await d.send("Plan again")
    assert e.answers[0] == ("planner", 'I see 1 message: user "Plan again"')


async def test_export_as_json_and_html():
    d = Dialogue(trip(two_routes()), filters={"last two": lambda ms: ms[-2:]})
    await d.send("<script>alert(1)</script> plan")
    data = json.loads(d.to_json())
    turn = data["turns"][0]
    assert turn["routes"] == {"planner": "fast", "researcher": "fast", "writer": "fast"}
    assert [s["executor_id"] for s in turn["trace"]["snapshots"]] == ["planner", "researcher", "writer"]
    assert turn["trace"]["snapshots"][0]["given"][0]["contents"][0]["text"].startswith("<script>")
    page = d.to_html()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.startswith("<!DOCTYPE html>") and 'data-route="fast"' in page
    assert "custom: last two" in d.mode_options()


async def test_a_custom_mode_is_recorded_by_the_label_it_was_chosen_under():
    from agent_nb.workflow.filters import user_messages

    def last_1_messages(messages):
        return messages[-1:]

    d = Dialogue(trip(two_routes()), filters={"last_1": last_1_messages, "mine": user_messages})
    d.set_mode("writer", "custom: last_1")
    exchange = await d.send("Plan a trip")
    assert exchange.modes["writer"] == "custom: last_1" and d.mode_of("writer") == "custom: last_1"
    assert d.mode_options()[-2:] == ["custom: last_1", "custom: mine"]
