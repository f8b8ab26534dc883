"""A trace written as compact JSON and read back shows the same report and finds the same facts."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from agent_nb import AgentExecutor, ChatAgent, MirrorChatClient, UsageError, WorkflowBuilder
from agent_nb.harness import StandardHarness, scenarios
from agent_nb.messages import FunctionCallContent, FunctionResultContent, Message
from agent_nb.trace import ContextSnapshot, Trace
from agent_nb.trace.codec import dump_trace, load_trace

FIELDS = ("kept", "dropped", "given", "cached", "wrote")


def same_messages(again: Trace, trace: Trace) -> None:
    """Every message list of every snapshot reads back equal, in order, with its response."""
    for a, s in zip(again, trace, strict=True):
        for name in FIELDS:
            assert list(getattr(a, name) or ()) == list(getattr(s, name) or ()), (s.executor_id, name)
        assert (a.given is None) == (s.given is None)
        assert list(a.response.messages if a.response else ()) == list(s.response.messages if s.response else ())


def chain(mode: str) -> object:
    client = MirrorChatClient(words=8)
    executors = [AgentExecutor(ChatAgent(client, name=n)) for n in ("planner", "researcher", "writer")]
    executors[2].set_context_mode(mode)
    builder = WorkflowBuilder(start_executor=executors[0])
    return builder.add_edge(executors[0], executors[1]).add_edge(executors[1], executors[2]).build()


@pytest.mark.parametrize("mode", ["full", "last_agent"])
def test_a_workflow_trace_reads_back_the_same(mode: str) -> None:
    trace = chain(mode).run_sync("Plan a rainy Sunday in Lisbon; the budget is 40 euros").trace
    again = load_trace(dump_trace(trace))
    assert str(again) == str(trace)
    same_messages(again, trace)  # a full chain's contexts are views of one log: each must keep its own length
    assert [s.reassigned for s in again] == [s.reassigned for s in trace]  # handed-over replies stay marked
    for fact in ("budget is 40", "planner", "nothing like this"):
        assert again.who_has(fact).to_text() == trace.who_has(fact).to_text()


def test_a_harness_trace_reads_back_the_same_facts_in_context_written_and_returned() -> None:
    trace = scenarios.travel().play(StandardHarness).trace
    again = load_trace(dump_trace(trace))
    assert str(again) == str(trace) and again.chat == trace.chat
    same_messages(again, trace)
    for fact in ("23 kg", "Lisbon", "flight"):
        assert again.who_has(fact).to_text() == trace.who_has(fact).to_text()


def test_each_message_and_text_is_written_once() -> None:
    trace = chain("full").run_sync("Plan a rainy Sunday").trace
    data = json.loads(dump_trace(trace))
    distinct = {id(m) for s in trace for m in (*s.kept, *(s.given or ()), *s.cached, *s.wrote)}
    distinct |= {id(m) for s in trace if s.response for m in s.response.messages}
    assert len(data["messages"]) == len(distinct)
    assert len(data["texts"]) == len(set(data["texts"]))


def test_messages_other_than_plain_text_read_back_whole() -> None:
    call = FunctionCallContent(call_id="c1", name="lookup", arguments={"city": "Oslo"})
    messages = (
        Message("user", ["two", "texts"], author_name="ana"),
        Message("assistant", "with an id", message_id="m-7"),
        Message("assistant", [call]),
        Message("tool", [FunctionResultContent(call_id="c1", result={"temp": 4})]),
        Message("assistant", []),
    )
    snapshot = ContextSnapshot("agent", 1, 0, "hi", kind="agent", kept=messages, given=messages, cached=messages)
    again = load_trace(dump_trace(Trace([snapshot])))
    assert again[0].given == messages and again[0].kept == messages
    assert again[0].given[2] is again[0].kept[2]  # one message, one object: what was shared stays shared


def test_a_trace_stored_in_another_format_is_refused_with_what_to_do() -> None:
    text = dump_trace(chain("full").run_sync("hi").trace).replace('"v":4', '"v":1', 1)
    with pytest.raises(UsageError, match=r"format 1 .* reads formats 2, 3, 4; run the experiment again"):
        load_trace(text)


def untimed(requests: tuple) -> list:
    """Requests without what traces began to keep in format 4 (when sent, how long, tokens, finish, provider)."""
    return [
        r._replace(sent_at=0.0, duration=0.0, input_tokens=None, output_tokens=None, finish_reason=None, provider=None)
        for r in requests
    ]


def written_again() -> Trace:
    """The run ``trace_format_2.json`` was written from (the writer has instructions)."""
    client = MirrorChatClient(words=8)
    executors = [
        AgentExecutor(ChatAgent(client, name=n, instructions="Be brief." if n == "writer" else None))
        for n in ("planner", "researcher", "writer")
    ]
    workflow = WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build()
    return workflow.run_sync("Plan a rainy Sunday in Lisbon").trace


def test_a_trace_stored_in_format_2_still_reads_back_with_what_each_model_received() -> None:
    stored = load_trace((Path(__file__).parent / "trace_format_2.json").read_text())
    trace = written_again()
    assert str(stored) == str(trace)
    assert [untimed(s.model_requests) for s in stored] == [untimed(s.model_requests) for s in trace]
    assert {r.sent_at for s in stored for r in s.model_requests} == {0.0}  # not kept then: unknown, not invented
    assert stored.last("writer").model_input.messages[0].text == "Be brief."


def test_what_each_model_received_reads_back_the_same_in_the_common_case_and_the_others() -> None:
    trace = written_again()  # the planner's request is what its executor gave; the writer's adds instructions
    data = json.loads(dump_trace(trace))
    planner, writer = data["snapshots"][0][-2][0], data["snapshots"][2][-2][0]
    (request,) = trace[0].model_requests
    timed = [request.sent_at, request.duration, 11, 17, "stop", "agent_nb.offline"]
    assert planner == ["planner", 0, [0, 0, 1], "mirror", timed]  # the common request: five values
    assert request.sent_at > 1.7e9 and 0 < request.duration < 5  # when it was sent, and how long it took
    assert len(writer) == 11 and writer[1] != 0
    again = load_trace(dump_trace(trace))
    assert [s.model_requests for s in again] == [s.model_requests for s in trace]
    assert again.last("planner").model_input.messages is again.last("planner").given  # one tuple, as written


def test_a_request_of_what_the_executor_gave_keeps_its_tools_and_options() -> None:
    def weather(city: str) -> str:
        return "rain"

    agent = ChatAgent(MirrorChatClient(), name="planner", tools=[weather], options={"temperature": 0})
    trace = WorkflowBuilder(start_executor=AgentExecutor(agent)).build().run_sync("Plan a rainy Sunday").trace
    (request,) = trace.last("planner").model_requests
    assert request.messages == trace.last("planner").given and request.tools == ("weather",)
    (again,) = load_trace(dump_trace(trace)).last("planner").model_requests
    assert again == request and dict(again.options) == {"temperature": 0}


def test_a_workflow_is_pickled_between_runs_and_runs_the_same_after() -> None:
    workflow = chain("last_agent")
    first = workflow.run_sync("Plan a rainy Sunday").text
    copy = pickle.loads(pickle.dumps(workflow))
    copy.reset()
    assert copy.run_sync("Plan a rainy Sunday").text == first
    assert workflow.run_sync("again").text  # the original still runs: each holds its own executors


async def test_a_running_workflow_is_not_pickled() -> None:
    workflow = chain("full")
    stream = workflow.run("hello", stream=True)
    async for _ in stream:
        with pytest.raises(UsageError, match="it can be pickled only between runs"):
            pickle.dumps(workflow)
        break
    await stream.aclose()
