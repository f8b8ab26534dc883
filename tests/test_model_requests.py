"""What the model really received: every request an agent sent, recorded on its executor's snapshot.

Checked against what the chat client itself was given (``ScriptedChatClient.requests``): the same
messages in the same order, each labelled by where it came from, the tools offered, the options
(secrets masked) and the route that answered; tool rounds, streaming, failures, and the stored
trace of an experiment.
"""

from __future__ import annotations

import pytest

from agent_nb import (
    AgentExecutor,
    ArgumentError,
    ChatAgent,
    FunctionCallContent,
    FunctionChatClient,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    RoutingChatClient,
    ScriptedChatClient,
    StepFailed,
    WorkflowBuilder,
)
from agent_nb.agents.requests import recorder, recording
from agent_nb.trace.codec import dump_trace, load_trace

KEY = "sk-test-0123456789abcdef"


def chain(writer_client: object, **writer: object) -> object:
    planner = AgentExecutor(ChatAgent(MirrorChatClient(), name="planner", instructions="Plan the trip."))
    agent = ChatAgent(writer_client, name="writer", instructions="Write it up.", **writer)  # type: ignore[arg-type]
    return WorkflowBuilder(start_executor=planner).add_edge(planner, AgentExecutor(agent)).build()


@pytest.mark.parametrize("stream", [False, True])
async def test_each_request_is_what_the_client_got_labelled_by_origin(stream: bool) -> None:
    client = ScriptedChatClient(["first answer", "second answer"])
    history = InMemoryHistoryProvider()
    workflow = chain(client, history=history, options={"temperature": 0, "api_key": KEY})
    first = await _run(workflow, "Plan a rainy Sunday", stream)
    second = await _run(workflow, "Now for Monday", stream)

    (got_first, options), (got_second, _) = client.requests
    [request] = first.trace.last("writer").model_requests
    assert list(request.messages) == got_first  # exactly what the model was sent, in order
    assert request.origins == ("instructions", "input", "handed over")
    assert request.of("instructions")[0].text == "Write it up."
    assert request.options == {"temperature": 0, "api_key": "***"} and options["api_key"] == KEY
    assert request.agent == "writer" and request.round == 0 and request.error is None

    [again] = second.trace.last("writer").model_requests
    assert list(again.messages) == got_second
    assert again.origins == ("instructions", "history", "history", "history", "input", "handed over")
    assert [m.text for m in again.of("history")] == [m.text for m in got_first[1:]] + ["first answer"]
    assert KEY not in repr(again) and KEY not in str(second.trace)


async def _run(workflow: object, text: str, stream: bool) -> object:
    if not stream:
        return await workflow.run(text)  # type: ignore[attr-defined]
    events = workflow.run(text, stream=True)  # type: ignore[attr-defined]
    async for _ in events:
        pass
    return events.result


async def test_a_tool_round_is_a_second_request_with_the_calls_and_results_so_far() -> None:
    def weather(city: str) -> str:
        return f"rain in {city}"

    call = Message("assistant", [FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Lisbon"})])
    client = ScriptedChatClient([call, "Take an umbrella."])
    result = await chain(client, tools=[weather]).run("Plan a rainy Sunday")
    asked, answered = result.trace.last("writer").model_requests
    assert [list(asked.messages), list(answered.messages)] == [sent for sent, _ in client.requests]
    assert asked.tools == answered.tools == ("weather",)
    assert (asked.round, answered.round) == (0, 1)
    assert answered.origins[-2:] == ("tool work", "tool work")  # the call, then its result
    assert answered.of("tool work")[1].contents[0].result == "rain in Lisbon"  # type: ignore[union-attr]


async def test_the_route_that_answered_is_named() -> None:
    router = RoutingChatClient({"fast": MirrorChatClient(), "smart": MirrorChatClient(words=4)})
    result = await chain(router).run("Plan a rainy Sunday")
    [request] = result.trace.last("writer").model_requests
    assert request.route == "fast" and request.model == "mirror"


async def test_a_failed_request_is_kept_with_its_error_on_the_failed_runs_trace() -> None:
    def broken(messages: object, options: object) -> str:
        raise ConnectionError("the model server is down")

    with pytest.raises(StepFailed) as failed:
        await chain(FunctionChatClient(broken)).run("Plan a rainy Sunday")
    [request] = failed.value.result.trace.last("writer").model_requests
    assert request.error == "ConnectionError: the model server is down"
    assert request.origins == ("instructions", "input", "handed over") and request.route is None


async def test_outside_a_recording_nothing_is_kept_and_a_stored_trace_keeps_every_request() -> None:
    agent = ChatAgent(MirrorChatClient(), name="solo")
    with recording() as sent:
        await agent.run("hi")
    assert [q.origins for q in sent] == [("input",)]
    assert recorder() is None  # the block is over: a turn outside one has nowhere to keep its requests
    await agent.run("again")
    assert len(sent) == 1

    result = await chain(ScriptedChatClient(["done"]), options={"api_key": KEY}).run("Plan a rainy Sunday")
    text = dump_trace(result.trace)
    assert KEY not in text
    again = load_trace(text)
    for a, s in zip(again, result.trace, strict=True):
        assert [list(q.messages) for q in a.model_requests] == [list(q.messages) for q in s.model_requests]
        assert [(q.origins, q.tools, dict(q.options), q.route, q.model, q.round) for q in a.model_requests] == [
            (q.origins, q.tools, dict(q.options), q.route, q.model, q.round) for q in s.model_requests
        ]


async def test_who_has_reads_what_the_model_received_unless_asked_for_the_executors_view() -> None:
    from agent_nb.testing import assert_context
    from agent_nb.trace import context_table

    result = await chain(MirrorChatClient()).run("Plan a rainy Sunday")
    own = result.trace.who_has("Write it up.")  # the writer's instructions: only its model sees them
    assert own["writer"].in_context and not own["planner"].in_context
    assert not result.trace.who_has("Write it up.", scope="executor")["writer"].in_context
    table = context_table(result.trace, {"instructions": "Write it up.", "question": "rainy Sunday"})
    assert table["writer", "instructions"] == "C" and table["writer", "question"] == "C"
    assert context_table(result.trace, {"i": "Write it up."}, scope="executor")["writer", "i"] == "·"

    assert_context(result, "writer", contains="Write it up.", count=3)  # instructions, question, hand-over
    assert_context(result, "writer", excludes="Write it up.", count=2, scope="executor")
    with pytest.raises(AssertionError, match="it holds 3 messages, not 2") as failed:
        assert_context(result, "writer", count=2)
    assert "model got 3 messages · instructions 1 · input 1 · handed over 1" in str(failed.value)
    with pytest.raises(ArgumentError, match=r"scope='agent'.*give 'model' \(what the model received\)"):
        result.trace.who_has("x", scope="agent")


async def test_a_repair_by_the_router_is_shown_where_it_happened() -> None:
    from agent_nb import Capabilities
    from agent_nb.display import run_view

    no_system = MirrorChatClient(capabilities=Capabilities(system_messages=False))
    router = RoutingChatClient({"plain": no_system}, history_policy="repair")
    result = await chain(router).run("Plan a rainy Sunday")
    [request] = result.trace.last("writer").model_requests
    assert request.repairs and "system" in request.repairs[0]  # the instructions went as a user message
    assert request.of("instructions")[0].role == "system"  # as the agent sent them; the route got them repaired
    text = str(result.trace)
    assert f"    repaired  {request.repairs[0]}" in text and "noted" not in text
    html = run_view(result)
    assert "repaired by the router: " in html and html.count(request.repairs[0][:40]) == 1


async def test_the_trace_as_json_carries_each_request_secrets_masked() -> None:
    import json

    result = await chain(ScriptedChatClient(["done"]), options={"api_key": KEY, "response_format": dict}).run("hi")
    [request] = result.trace.to_dict()["snapshots"][1]["model_requests"]
    text = json.dumps(request)  # JSON-ready: an option that is not JSON is described
    assert KEY not in text and request["options"]["api_key"] == "***"
    assert request["origins"] == ["instructions", "input", "handed over"]
    assert [m["role"] for m in request["messages"]] == ["system", "user", "user"]
    assert request["options"]["response_format"].startswith("type ")
