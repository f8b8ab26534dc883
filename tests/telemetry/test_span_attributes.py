"""The attributes each span carries, what is left out without content, times, and how harness spans nest."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Spans

from agent_nb import (
    AgentExecutor,
    Capabilities,
    ChatAgent,
    Message,
    MirrorChatClient,
    ScriptedChatClient,
    SequentialBuilder,
    WorkflowBuilder,
    telemetry,
    tool,
)
from agent_nb.messages import FunctionCallContent
from agent_nb.routing import RoutingChatClient
from agent_nb.trace.codec import dump_trace, load_trace
from agent_nb.workflow import InMemoryCheckpointStorage
from agent_nb.workflow.agent_executor import AgentExecutorOptions
from agent_nb.workflow.filters import user_messages


def ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


async def test_a_routed_request_says_its_route_its_repairs_and_the_model_asked_for(spans: Spans) -> None:
    no_system = MirrorChatClient(capabilities=Capabilities(system_messages=False))
    router = RoutingChatClient({"plain": no_system}, history_policy="repair")
    planner = ChatAgent(router, name="planner", options={"model": "small-model"})
    writer = ChatAgent(router, name="writer", instructions="Be brief.")
    with telemetry.instrument(spans.provider):
        await SequentialBuilder([planner, writer], name="routed").build().run("hi")
    asked = spans.one("chat small-model")  # named after the model asked for
    assert asked.attributes["gen_ai.request.model"] == "small-model"
    assert asked.attributes["gen_ai.response.model"] == "mirror"
    assert asked.attributes["agent_nb.route"] == "plain" and "agent_nb.repairs" not in asked.attributes
    written = spans.one("chat mirror")
    assert written.attributes["gen_ai.request.model"] == "mirror" and written.attributes["agent_nb.route"] == "plain"
    assert written.attributes["agent_nb.repairs"] == (
        "turned system messages into user messages (the route takes none)",
    )


async def test_a_context_filter_is_named_on_its_invocation(spans: Spans) -> None:
    reader = AgentExecutor(ChatAgent(MirrorChatClient(), name="reader"), context_filter=user_messages)
    result = await SequentialBuilder([ChatAgent(MirrorChatClient(), name="planner"), reader], name="t").build().run("q")
    result.to_otel(spans.provider)
    span = spans.one("invoke_agent reader")
    assert span.attributes["agent_nb.context_mode"] == "custom"
    assert span.attributes["agent_nb.context_filter"] == "user_messages"
    assert span.attributes["agent_nb.messages.dropped"] == 1  # the planner's reply


@pytest.mark.parametrize(("reassign", "reassigned"), [(True, 1), (False, 0)])
async def test_reassigned_counts_the_messages_whose_role_was_reassigned(
    spans: Spans, reassign: bool, reassigned: int
) -> None:
    options = AgentExecutorOptions(reassign_other_agents_as_users=reassign)
    writer = AgentExecutor(ChatAgent(MirrorChatClient(), name="writer"), options=options)
    planner = ChatAgent(MirrorChatClient(), name="planner")
    workflow = WorkflowBuilder(start_executor=planner, name="t").add_edge(planner, writer).build()
    with telemetry.instrument(spans.provider):
        result = await workflow.run("hello")
    assert sum(result.trace.last("writer").reassigned) == reassigned
    span = spans.one("invoke_agent writer")
    assert span.attributes["agent_nb.messages.given"] == 2
    assert span.attributes["agent_nb.messages.reassigned"] == reassigned
    assert spans.one("invoke_agent planner").attributes["agent_nb.messages.reassigned"] == 0
    chat = next(s for s in spans.named("chat mirror") if s.attributes["gen_ai.agent.name"] == "writer")
    assert chat.attributes["agent_nb.messages.handed_over"] == 1  # by origin: the planner's words either way


CALL = Message("assistant", [FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Oslo"})])


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(requires_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def desk(storage: Any = None) -> Any:
    call = Message("assistant", [FunctionCallContent(call_id="c9", name="refund", arguments={"order": "A7"})])
    agent = ChatAgent(ScriptedChatClient([call, "Refunded."]), name="support", tools=[refund])
    return WorkflowBuilder(start_executor=agent, name="desk", checkpoint_storage=storage).build()


CONTENT = {
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.output.messages",
    "gen_ai.input.messages",
    "gen_ai.system_instructions",
    "agent_nb.request.prompt",
}


@pytest.mark.parametrize("capture_content", [False, True])
async def test_content_is_exported_only_when_asked_for(spans: Spans, capture_content: bool) -> None:
    forecaster = ChatAgent(
        ScriptedChatClient([CALL, "Sunny."]), name="forecaster", instructions="Forecast.", tools=[weather]
    )
    with telemetry.instrument(spans.provider, capture_content=capture_content):
        await WorkflowBuilder(start_executor=forecaster, name="forecast").build().run("Weather in Oslo?")
        await desk().run("Refund A7")  # waits for approval: a request span with a prompt
    found = {key for attributes in spans.attributes() for key in attributes if key in CONTENT}
    assert found == (CONTENT if capture_content else set())
    if capture_content:
        answer = json.loads(spans.one("invoke_agent forecaster").attributes["gen_ai.output.messages"])
        assert answer[-1]["parts"] == [{"type": "text", "content": "Sunny."}]
    text = json.dumps(spans.attributes())
    assert ("sunny in Oslo" in text) is capture_content and ("Oslo" in text) is capture_content


async def test_a_rejected_approval_is_a_tool_error_of_type_rejected(spans: Spans) -> None:
    workflow = desk()
    first = await workflow.run("Refund A7")
    (request,) = first.pending_requests
    with telemetry.instrument(spans.provider):
        await workflow.run(responses={request.request_id: False})
    answer = spans.one(f"agent_nb.response {request.request_id}")
    assert answer.attributes["agent_nb.response.approved"] is False
    call = spans.one("execute_tool refund")
    assert call.status.status_code.name == "ERROR"
    assert call.attributes["error.type"] == call.status.description == "rejected"


async def test_a_results_export_holds_its_requests_and_checkpoints(spans: Spans) -> None:
    storage = InMemoryCheckpointStorage()
    first = await desk(storage).run("Refund A7")
    (request,) = first.pending_requests
    first.to_otel(spans.provider)
    run = spans.one("workflow desk")
    assert run.attributes["agent_nb.run.status"] == "waiting"
    asked = spans.one("agent_nb.request support")
    assert asked.attributes["agent_nb.request.id"] == request.request_id
    assert spans.parent(asked).name == "invoke_agent support"
    checkpoints = spans.named("agent_nb.checkpoint")
    saved = [e.checkpoint_id for e in first.events if e.type == "checkpoint"]
    assert saved and sorted(c.attributes["agent_nb.checkpoint.id"] for c in checkpoints) == sorted(saved)
    assert all(spans.parent(c) is run for c in checkpoints) and first.checkpoint_id in saved


async def test_a_resumed_run_and_each_harness_turn_say_so_on_their_spans(spans: Spans) -> None:
    from agent_nb.harness import MessageNode, Orchestrator, StandardHarness, Topic

    storage = InMemoryCheckpointStorage()
    first = await desk(storage).run("Refund A7")
    (request,) = first.pending_requests
    with telemetry.instrument(spans.provider):
        second = await desk(storage).run(
            checkpoint_id=first.checkpoint_id, checkpoint_storage=storage, responses={request.request_id: True}
        )
    assert second.trace.restored_from == first.checkpoint_id
    assert spans.one("workflow desk").attributes["agent_nb.restored_from"] == first.checkpoint_id  # live
    spans.clear()
    second.to_otel(spans.provider)
    assert spans.one("workflow desk").attributes["agent_nb.restored_from"] == first.checkpoint_id  # after the fact

    spans.clear()
    hours = Topic("opening_hours", [MessageNode("We are open 9:00-17:00.")], description="Opening hours")
    harness = StandardHarness(Orchestrator("orchestrator", [hours]))
    with telemetry.instrument(spans.provider):
        await harness.send("When are you open?")
        await harness.send("And on Sunday?")
    live = sorted(spans.named("workflow standard harness"), key=lambda s: s.start_time)
    assert [s.attributes["agent_nb.turn"] for s in live] == [1, 2]
    spans.clear()
    harness.trace.to_otel(spans.provider, name="support")
    turns = spans.children(spans.one("conversation support"))
    assert [(t.name, t.attributes["agent_nb.turn"]) for t in turns] == [
        ("workflow support turn 1", 1),
        ("workflow support turn 2", 2),
    ]


async def test_spans_exported_after_the_fact_carry_the_traces_own_times(spans: Spans) -> None:
    forecaster = ChatAgent(ScriptedChatClient([CALL, "Sunny."]), name="forecaster", tools=[weather])
    workflow = SequentialBuilder([ChatAgent(MirrorChatClient(), name="planner"), forecaster], name="trip").build()
    result = await workflow.run("Weather in Oslo?")
    for trace in (result.trace, load_trace(dump_trace(result.trace))):  # as run, and as stored
        spans.clear()
        trace.to_otel(spans.provider, name="trip")
        for s in trace:
            span = spans.one(f"invoke_agent {s.executor_id}")
            assert (span.start_time, span.end_time) == (ns(s.at), ns(s.at + s.duration))
            chats = sorted((c for c in spans.children(span) if c.name.startswith("chat")), key=lambda c: c.start_time)
            assert len(chats) == len(s.model_requests)
            for chat, r in zip(chats, s.model_requests, strict=True):
                assert r.sent_at and (chat.start_time, chat.end_time) == (ns(r.sent_at), ns(r.sent_at + r.duration))
        run = spans.one("workflow trip")
        assert run.start_time == ns(trace[0].at)
        assert run.end_time == ns(max(s.at + s.duration for s in trace))


async def test_a_harness_connected_agent_holds_its_agents_spans_live_and_after_the_fact(spans: Spans) -> None:
    from agent_nb.harness import AgentComponent, Orchestrator, StandardHarness

    research = SequentialBuilder(
        [ChatAgent(MirrorChatClient(), name="finder"), ChatAgent(MirrorChatClient(), name="summariser")],
        name="research",
    ).build()
    finder = AgentComponent(research.as_agent(name="research", description="Finds facts about destinations"))
    guide = AgentComponent(ChatAgent(MirrorChatClient(), name="guide"), description="Guides visitors in the museum")
    harness = StandardHarness(Orchestrator("orchestrator", [finder, guide]))
    expected = [
        "invoke_agent research",
        "  workflow research",
        "    invoke_agent finder",
        "      chat mirror",
        "    invoke_agent summariser",
        "      chat mirror",
        "invoke_agent guide",
        "  chat mirror",
    ]

    def connected() -> list[str]:
        agents = [
            s for s in spans.all if s.attributes.get("agent_nb.executor.kind") == "connected agent"
        ]  # their subtrees
        lines = [line for s in sorted(agents, key=lambda s: s.start_time) for line in spans.tree(s)]
        for s in agents:
            assert spans.parent(s).name.startswith("workflow ")  # in the turn's run
            assert s.attributes["agent_nb.caller"] == "orchestrator"
        return lines

    with telemetry.instrument(spans.provider):
        await harness.send("Find facts about destinations in Norway")
        await harness.send("Guide me around the museum")
    assert connected() == expected
    spans.clear()
    harness.trace.to_otel(spans.provider, name="support")
    assert connected() == expected


async def test_a_trace_exported_without_a_name_is_named_after_its_workflow_else_run(spans: Spans) -> None:
    from agent_nb.harness import MessageNode, Orchestrator, StandardHarness, Topic
    from agent_nb.trace import Trace

    result = await SequentialBuilder([ChatAgent(MirrorChatClient(), name="planner")], name="trip").build().run("q")
    for trace in (result.trace, load_trace(dump_trace(result.trace))):  # as run, and as stored
        spans.clear()
        trace.to_otel(spans.provider)
        assert spans.tree()[0] == "workflow trip"
    spans.clear()
    Trace(list(result.trace)).to_otel(spans.provider)  # a trace made by hand knows no workflow
    assert spans.tree()[0] == "workflow run"
    spans.clear()
    hours = Topic("opening_hours", [MessageNode("We are open 9:00-17:00.")], description="Opening hours")
    harness = StandardHarness(Orchestrator("orchestrator", [hours]))
    await harness.send("When are you open?")
    await harness.send("And on Sunday?")
    harness.trace.to_otel(spans.provider)
    assert [s.name for s in spans.children(spans.one("conversation standard harness"))] == [
        "workflow standard harness turn 1",
        "workflow standard harness turn 2",
    ]
