"""Runs as OpenTelemetry spans, live and after the fact, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Spans

from agent_nb import (
    AgentExecutor,
    ChatAgent,
    FunctionChatClient,
    Message,
    MirrorChatClient,
    ScriptedChatClient,
    SequentialBuilder,
    WorkflowBuilder,
    telemetry,
    tool,
)
from agent_nb.errors import StepFailed
from agent_nb.messages import FunctionCallContent
from agent_nb.workflow import InMemoryCheckpointStorage, WorkflowExecutor
from agent_nb.workflow.observers import OBSERVERS

CALL = Message("assistant", [FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Oslo"})])


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def three(**build: Any) -> Any:
    agents = [
        ChatAgent(MirrorChatClient(), name=n, instructions=f"You are the {n}.") for n in ("planner", "researcher")
    ]
    writer = ChatAgent(MirrorChatClient(), name="writer")
    return SequentialBuilder([*agents, AgentExecutor(writer, context_mode="last_agent")], name="trip", **build).build()


TREE = [
    "workflow trip",
    "  invoke_agent planner",
    "    chat mirror",
    "  invoke_agent researcher",
    "    chat mirror",
    "  invoke_agent writer",
    "    chat mirror",
]


async def test_a_three_agent_run_exported_after_the_fact_is_a_tree_of_its_invocations_and_model_calls(
    spans: Spans,
) -> None:
    result = await three().run("Plan a rainy Sunday")
    assert spans.all == ()  # nothing is exported unless asked
    result.to_otel(spans.provider)
    assert spans.tree() == TREE
    run = spans.one("workflow trip")
    assert run.attributes["agent_nb.run.status"] == "completed"
    writer = spans.one("invoke_agent writer")
    assert writer.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert writer.attributes["agent_nb.context_mode"] == "last_agent"
    assert writer.attributes["agent_nb.messages.given"] == 1 and writer.attributes["agent_nb.messages.dropped"] == 2
    chats = spans.named("chat mirror")
    researcher = next(c for c in chats if c.attributes["gen_ai.agent.name"] == "researcher")
    assert researcher.attributes["gen_ai.provider.name"] == "agent_nb.offline"
    assert researcher.attributes["gen_ai.response.model"] == "mirror"
    assert (
        researcher.attributes["gen_ai.usage.input_tokens"]
        == result.trace.last("researcher").model_requests[0].input_tokens
    )
    assert researcher.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert researcher.attributes["agent_nb.messages.instructions"] == 1
    assert researcher.attributes["agent_nb.messages.handed_over"] == 1  # the planner's words, as the user's
    for span in spans.all:  # every span inside its parent's time, and its trace's
        parent = spans.parent(span)
        assert span.start_time <= span.end_time
        if parent is not None:
            assert parent.start_time <= span.start_time and span.end_time <= parent.end_time
            assert span.context.trace_id == parent.context.trace_id
    assert "gen_ai.input.messages" not in researcher.attributes  # content is opt-in


async def test_live_spans_of_a_run_and_of_a_streamed_run_are_the_same_tree(spans: Spans) -> None:
    telemetry.instrument(spans.provider)
    await three().run("Plan a rainy Sunday")
    assert spans.tree() == TREE
    spans.clear()
    events = [e async for e in three().run("Plan a rainy Sunday", stream=True)]
    assert events and spans.tree() == TREE
    telemetry.uninstrument()
    spans.clear()
    await three().run("Plan a rainy Sunday")
    assert spans.all == () and OBSERVERS == []  # off: nothing written, nothing watching


async def test_a_tool_round_is_a_tool_span_between_the_models_two_calls(spans: Spans) -> None:
    agent = ChatAgent(ScriptedChatClient([CALL, "Sunny."]), name="forecaster", tools=[weather])
    result = await WorkflowBuilder(start_executor=agent, name="forecast").build().run("Weather in Oslo?")
    result.trace.to_otel(spans.provider, name="forecast", capture_content=True)
    assert spans.tree() == [
        "workflow forecast",
        "  invoke_agent forecaster",
        "    chat scripted",
        "    execute_tool weather",
        "    chat scripted",
    ]
    first, second = sorted(spans.named("chat scripted"), key=lambda s: s.start_time)
    call = spans.one("execute_tool weather")
    assert first.end_time <= call.start_time <= call.end_time <= second.start_time
    assert call.attributes["gen_ai.tool.call.id"] == "c1" and call.attributes["gen_ai.tool.type"] == "function"
    assert json.loads(call.attributes["gen_ai.tool.call.arguments"]) == {"city": "Oslo"}
    assert json.loads(call.attributes["gen_ai.tool.call.result"]) == "sunny in Oslo"
    assert (first.attributes["agent_nb.round"], second.attributes["agent_nb.round"]) == (0, 1)
    assert second.attributes["agent_nb.messages.tool_work"] == 2 and first.attributes["agent_nb.tools"] == ("weather",)
    sent = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["parts"][0] == {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}


async def test_a_failed_run_says_where_it_failed_in_its_spans_status(spans: Spans) -> None:
    def broken(messages: list[Message], options: Any) -> str:
        raise ConnectionError("the model server is down")

    telemetry.instrument(spans.provider)
    workflow = SequentialBuilder(
        [ChatAgent(MirrorChatClient(), name="planner"), ChatAgent(FunctionChatClient(broken), name="writer")],
        name="trip",
    ).build()
    with pytest.raises(StepFailed):
        await workflow.run("Plan a rainy Sunday")
    run, writer = spans.one("workflow trip"), spans.one("invoke_agent writer")
    assert run.status.status_code.name == "ERROR" and run.attributes["agent_nb.run.status"] == "failed"
    assert run.status.description == run.attributes["error.type"] == "StepFailed"  # its text only with content
    assert writer.status.status_code.name == "ERROR" and writer.attributes["agent_nb.status"] == "failed"
    (chat,) = spans.children(writer)
    assert chat.status.status_code.name == "ERROR" and chat.attributes["error.type"] == "ConnectionError"
    assert spans.one("invoke_agent planner").status.status_code.name == "UNSET"


@tool(requires_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


async def test_an_approval_is_a_request_span_and_its_answer_a_response_span_before_the_tool_runs(spans: Spans) -> None:
    call = Message("assistant", [FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7"})])
    storage = InMemoryCheckpointStorage()
    agent = ChatAgent(ScriptedChatClient([call, "Refunded."]), name="support", tools=[refund])
    workflow = WorkflowBuilder(start_executor=agent, name="desk", checkpoint_storage=storage).build()
    telemetry.instrument(spans.provider, capture_content=True)
    first = await workflow.run("Refund A7")
    (request,) = first.pending_requests
    asked = spans.one("agent_nb.request support")
    assert (
        asked.attributes["agent_nb.request.id"] == request.request_id
        and "refund" in asked.attributes["agent_nb.request.prompt"]
    )
    assert spans.parent(asked).name == "invoke_agent support"
    assert spans.one("workflow desk").attributes["agent_nb.run.status"] == "waiting"
    assert {s.attributes["agent_nb.checkpoint.id"] for s in spans.named("agent_nb.checkpoint")} >= {first.checkpoint_id}
    spans.clear()
    await workflow.run(responses={request.request_id: True})
    answer = spans.one(f"agent_nb.response {request.request_id}")
    assert answer.attributes["agent_nb.response.approved"] is True
    assert spans.parent(answer).name == "invoke_agent support"
    assert answer.start_time <= spans.one("execute_tool refund").start_time


async def test_a_sub_workflow_nests_under_its_node_live_and_after_the_fact(spans: Spans) -> None:
    inner = SequentialBuilder([ChatAgent(MirrorChatClient(), name="searcher")], name="research").build()
    parent = WorkflowBuilder(start_executor=ChatAgent(MirrorChatClient(), name="planner"), name="trip")
    parent.add_edge("planner", WorkflowExecutor(inner))
    workflow = parent.build()
    expected = [
        "workflow trip",
        "  invoke_agent planner",
        "    chat mirror",
        "  executor research",
        "    workflow research",
        "      invoke_agent searcher",
        "        chat mirror",
    ]
    with telemetry.instrument(spans.provider):
        result = await workflow.run("q")
    assert spans.tree() == expected
    spans.clear()
    result.to_otel(spans.provider)
    assert spans.tree() == expected


async def test_secrets_are_never_exported_whatever_the_setting(spans: Spans, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef0123")
    agent = ChatAgent(
        MirrorChatClient(), name="planner", options={"api_key": "sk-live-0123456789abcdef0123", "temperature": 0.2}
    )
    with telemetry.instrument(spans.provider, capture_content=True, secrets=["hunter2-the-password"]):
        await (
            WorkflowBuilder(start_executor=agent)
            .build()
            .run("my key is sk-live-0123456789abcdef0123 and hunter2-the-password")
        )
    leaky = Message(
        "assistant", [FunctionCallContent(call_id="c1", name="echo", arguments={"text": "hunter2-the-password"})]
    )

    def echo(text: str) -> str:
        """Says it back."""
        return f"{text} and sk-live-0123456789abcdef0123"

    teller = ChatAgent(ScriptedChatClient([leaky, "done"]), name="teller", tools=[echo])
    with telemetry.instrument(spans.provider, capture_content=True, secrets=["hunter2-the-password"]):
        await WorkflowBuilder(start_executor=teller).build().run("go")
    assert spans.one("execute_tool echo").attributes["gen_ai.tool.call.arguments"]  # there, masked
    exported = json.dumps(spans.attributes(), default=str) + "".join(s.to_json() for s in spans.all)
    assert "sk-live-0123456789abcdef0123" not in exported and "hunter2-the-password" not in exported
    chat = spans.one("chat mirror")
    assert chat.attributes["gen_ai.request.temperature"] == 0.2
    assert "my key is" in chat.attributes["gen_ai.input.messages"]  # the content is there, the secrets masked


async def test_a_harness_conversation_is_a_span_per_turn(spans: Spans) -> None:
    from agent_nb.harness import MessageNode, Orchestrator, StandardHarness, Topic

    hours = Topic("opening_hours", [MessageNode("We are open 9:00-17:00.")], description="Opening hours")
    harness = StandardHarness(Orchestrator("orchestrator", [hours]))
    await harness.send("When are you open?")
    await harness.send("And on Sunday?")
    telemetry.export_trace(harness.trace, spans.provider, name="support")
    root = spans.one("conversation support")
    turns = spans.children(root)
    assert [t.name for t in turns] == ["workflow support turn 1", "workflow support turn 2"]
    kinds = {s.attributes.get("agent_nb.executor.kind") for s in spans.all} - {None}
    assert {"orchestrator", "topic"} <= kinds  # each component call is a span of its own
    topic = next(s for s in spans.all if s.attributes.get("agent_nb.executor.kind") == "topic")
    assert topic.attributes["agent_nb.caller"] == "orchestrator" and topic.attributes["agent_nb.call.id"]


async def test_an_experiment_exports_a_span_per_cell_holding_its_run(spans: Spans) -> None:
    from agent_nb.experiments import Experiment, scorers

    exp = Experiment(
        three(),
        inputs=["a", "b"],
        grid={"writer.context_mode": ["full", "last_agent"]},
        scorers=[scorers.contains("I see")],
        name="modes",
    )
    result = await exp.run(progress=False)
    result.to_otel(spans.provider)
    root = spans.one("experiment modes")
    cells = spans.children(root)
    assert len(cells) == 4 and {c.attributes["agent_nb.config.writer.context_mode"] for c in cells} == {
        "full",
        "last_agent",
    }
    assert all(c.attributes["agent_nb.cell.status"] == "ok" for c in cells)
    for cell in cells:  # each cell's run, its configuration's, inside it
        (run,) = spans.children(cell)
        assert run.name.startswith("workflow ") and spans.children(run)[0].name == "invoke_agent planner"


def test_bad_arguments_are_refused_with_what_to_give() -> None:
    from agent_nb.errors import ArgumentError

    with pytest.raises(ArgumentError, match="an OpenTelemetry TracerProvider, or None"):
        telemetry.instrument(object())
    with pytest.raises(ArgumentError, match="True or False"):
        telemetry.instrument(capture_content="yes")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"a Trace \(result.trace\)"):
        telemetry.export_trace([])  # type: ignore[arg-type]
