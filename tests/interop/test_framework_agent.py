"""Agent Framework agents and chat clients inside agent_nb: workflows, traces, sessions, approvals, routes."""

from __future__ import annotations

import json
from pathlib import Path

import agent_framework as maf
import pytest
from framework_doubles import ScriptedFrameworkClient

from agent_nb import (
    AgentSession,
    ChatAgent,
    FunctionChatClient,
    Message,
    MirrorChatClient,
    RoutingChatClient,
    ScriptedChatClient,
    SequentialBuilder,
)
from agent_nb.agents.requests import recording
from agent_nb.clients.replay import cassette_client
from agent_nb.contents import FunctionCallContent
from agent_nb.errors import ArgumentError, ServiceManagedHistoryError, StepFailed
from agent_nb.experiments import Experiment, scorers
from agent_nb.harness import AgentComponent, Orchestrator, StandardHarness
from agent_nb.interop.agent_framework import AgentNbChatClient, FrameworkAgent, FrameworkChatClient
from agent_nb.messages import AgentResponseUpdate

WEATHER_CALL = Message("assistant", [FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Oslo"})])


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def forecaster(replies: list, **agent_args: object) -> tuple[ScriptedChatClient, FrameworkAgent]:
    """An Agent Framework agent (on an agent_nb model, so the trace can be checked to the message)."""
    model = ScriptedChatClient(replies)
    agent = maf.Agent(AgentNbChatClient(model), "You forecast.", name="forecaster", **agent_args)
    return model, FrameworkAgent(agent)


async def test_an_agent_nb_workflow_runs_an_agent_framework_agent_and_the_trace_shows_what_its_model_got() -> None:
    _, agent = forecaster([WEATHER_CALL, "It is sunny in Oslo."], tools=[weather])
    planner = ChatAgent(MirrorChatClient(), name="planner")
    result = await SequentialBuilder(participants=[planner, agent]).build().run("Weather in Oslo?")

    assert result.text == "It is sunny in Oslo."
    snapshot = result.trace.for_executor("forecaster")[0]
    assert [m.text for m in snapshot.given] == ["Weather in Oslo?", 'I see 1 message: user "Weather in Oslo?"']
    first, second = snapshot.model_requests
    assert (first.round, second.round) == (0, 1) and first.tools == ("weather",)
    assert first.origins == ("instructions", "input", "handed over")
    assert first.messages[0] == Message("system", "You forecast.")
    assert second.origins[3:] == ("tool work", "tool work")
    assert second.messages[-1].contents[0].result == "sunny in Oslo"  # Agent Framework ran the tool
    assert first.model == "scripted"
    report = result.trace.to_text()
    assert "[instructions] system: You forecast." in report and "in 2 requests" in report
    assert all(m.author_name == "forecaster" for m in snapshot.response.messages if m.role == "assistant")


async def test_its_agent_framework_session_lives_in_the_agent_nb_session_and_survives_saving() -> None:
    model, agent = forecaster(["Sunny.", "Still sunny."])
    session = agent.create_session()
    await agent.run("Weather?", session=session)
    saved = json.loads(json.dumps(session.to_dict()))  # JSON through and through: a checkpoint can keep it

    again = FrameworkAgent(agent.agent)  # another wrapper, as in another process
    with recording() as sent:
        await again.run("And tomorrow?", session=AgentSession.from_dict(saved))
    assert [m.text for m in model.requests[-1][0]] == ["You forecast.", "Weather?", "Sunny.", "And tomorrow?"]
    (request,) = sent
    assert request.origins == ("instructions", "history", "history", "input")  # what its session held, labelled


async def test_a_failed_run_leaves_the_agent_nb_session_as_it_was() -> None:
    _, agent = forecaster(["Sunny."])
    session = agent.create_session()
    await agent.run("Weather?", session=session)
    before = json.dumps(session.to_dict())
    with pytest.raises(Exception, match="ScriptedChatClient"):
        await agent.run("And now?", session=session)  # the script has no reply left
    assert json.dumps(session.to_dict()) == before
    workflow = SequentialBuilder(participants=[agent]).build()
    with pytest.raises(StepFailed, match="executor 'forecaster' failed"):
        await workflow.run("Again?")


async def test_a_streamed_workflow_run_streams_the_agent_framework_agents_words() -> None:
    _, agent = forecaster(["Sunny all day."])
    workflow = SequentialBuilder(participants=[agent]).build()
    events = [e async for e in workflow.run("Weather?", stream=True)]
    words = [e.data for e in events if e.type == "output" and isinstance(e.data, AgentResponseUpdate)]
    assert "".join(u.text for u in words) == "Sunny all day." and len(words) > 1
    assert {u.author_name for u in words} == {"forecaster"}


async def test_an_agent_framework_approval_becomes_the_runs_request_and_its_answer_runs_the_tool() -> None:
    ran: list[str] = []

    @maf.tool(approval_mode="always_require")
    def refund(order: str) -> str:
        """Refund an order."""
        ran.append(order)
        return f"refunded {order}"

    call = Message("assistant", [FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7"})])
    _, agent = forecaster([call, "Refunded A7."], tools=[refund])
    workflow = SequentialBuilder(participants=[agent]).build()
    first = await workflow.run("Refund A7")
    assert first.status == "waiting" and ran == []
    (request,) = first.pending_requests
    assert request.executor_id == "forecaster"
    done = await workflow.run(responses={request.request_id: True})
    assert done.status == "completed" and ran == ["A7"]
    assert done.text == "Refunded A7."


async def test_an_agent_framework_chat_client_serves_an_agent_nb_agent_whose_tools_agent_nb_runs() -> None:
    af_call = maf.Content.from_function_call(
        "c1", "weather", arguments={"city": "Oslo"}, additional_properties={"provider_call": "fc_9"}
    )
    af_client = ScriptedFrameworkClient(
        [
            maf.Message("assistant", [af_call], additional_properties={"safety": "ok"}),
            maf.Message("assistant", ["Sunny in Oslo."]),
        ],
        usage={"input_token_count": 9, "output_token_count": 3, "cache_read_input_token_count": 4},
    )
    client = FrameworkChatClient(af_client)
    agent = ChatAgent(client, name="assistant", instructions="Be brief.", tools=[weather])
    answer = await agent.run("Weather in Oslo?")
    assert answer.text == "Sunny in Oslo."
    (declared,) = af_client.got[0][1]["tools"]
    assert declared.name == "weather" and declared.declaration_only  # Agent Framework's layer hands the call back
    assert af_client.got[0][1]["tools"][0].parameters()["properties"]["city"]["type"] == "string"
    tool_round = af_client.got[1][0]
    assert [m.role for m in tool_round] == ["system", "user", "assistant", "tool"]
    assert tool_round[-1].contents[0].result == "sunny in Oslo"  # agent_nb ran it
    assert answer.usage is not None and answer.usage.input_tokens == 18
    assert answer.usage.details == {"cache_read_input_token_count": 8}  # every count, summed over the rounds
    said = answer.messages[0]
    assert said.additional_properties == {"safety": "ok"} and said.author_name == "assistant"  # kept in the agent
    assert said.contents[0].additional_properties == {"provider_call": "fc_9"}
    assert tool_round[2].additional_properties["safety"] == "ok"  # and back to Agent Framework with the call
    assert tool_round[2].contents[0].additional_properties == {"provider_call": "fc_9"}


async def test_an_agent_framework_client_is_a_route_beside_an_agent_nb_one_and_streams() -> None:
    af_client = ScriptedFrameworkClient([maf.Message("assistant", ["from the framework"])])
    router = RoutingChatClient({"mirror": MirrorChatClient(), "framework": FrameworkChatClient(af_client)})
    agent = ChatAgent(router, name="assistant")
    session = agent.create_session()
    await agent.run("hello", session=session)
    router.set_active_route(session, "framework")
    updates = [u async for u in agent.run("again", session=session, stream=True)]
    assert "".join(u.text for u in updates) == "from the framework"
    assert {u.route for u in updates} == {"framework"}

    class Stored(ScriptedFrameworkClient):
        STORES_BY_DEFAULT = True

    with pytest.raises(ServiceManagedHistoryError, match="route 'stored'"):
        router.add_route("stored", FrameworkChatClient(Stored([])))
    with pytest.raises(ArgumentError, match="an Agent Framework chat client"):
        FrameworkChatClient(object())

    class Nameless:
        def run(self, messages: object = None, **kwargs: object) -> None: ...

        def create_session(self, **kwargs: object) -> None: ...

    with pytest.raises(ArgumentError, match="a non-empty str: the agent has no name of its own"):
        FrameworkAgent(Nameless())


async def test_an_agent_framework_client_is_recorded_and_replayed_offline(tmp_path: Path) -> None:
    path = tmp_path / "framework.json"
    af_client = ScriptedFrameworkClient([maf.Message("assistant", ["It is sunny."])])
    recorder = cassette_client(path, lambda: FrameworkChatClient(af_client), record=True)
    assert (await ChatAgent(recorder, name="a").run("Weather in Porto?")).text == "It is sunny."
    replay = cassette_client(path, lambda: FrameworkChatClient(ScriptedFrameworkClient([])), record=False)
    assert (await ChatAgent(replay, name="a").run("Weather in Porto?")).text == "It is sunny."
    assert len(af_client.got) == 1  # the replay asked nobody


async def test_an_experiment_compares_context_modes_of_an_agent_framework_agent() -> None:
    def reply(messages: list[Message], options: object) -> str:
        return "budget noted" if any("budget" in m.text for m in messages) else "no budget"

    af_agent = maf.Agent(AgentNbChatClient(FunctionChatClient(reply)), name="writer")
    planner = ChatAgent(FunctionChatClient(lambda m, o: "Plan ready."), name="planner")
    workflow = SequentialBuilder(participants=[planner, FrameworkAgent(af_agent)]).build()
    exp = Experiment(
        workflow,
        inputs=["Trip with a budget of 500", "Trip with a budget of 90"],
        grid={"writer.context_mode": ["full", "last_agent"]},
        scorers=[scorers.had_in_context("writer", "budget")],
    )
    result = await exp.run()
    table = result.by("writer.context_mode")
    by_mode = {
        row.config["writer.context_mode"]: row.scores["had_in_context('writer', 'budget')"].mean for row in table.rows
    }
    assert by_mode == {"full": 1.0, "last_agent": 0.0}  # last_agent hands it only the planner's words
    outputs = {(c.config["writer.context_mode"], c.output) for c in result.cells()}
    assert outputs == {("full", "budget noted"), ("last_agent", "no budget")}


async def test_an_agent_framework_agent_is_a_connected_agent_of_a_harness() -> None:
    _, agent = forecaster(["Sunny in Oslo."])
    harness = StandardHarness(
        Orchestrator("orchestrator", [AgentComponent(agent, description="Forecasts the weather")])
    )
    await harness.send("What is the weather forecast?")
    assert (harness.transcript[-1].author_name, harness.transcript[-1].text) == ("forecaster", "Sunny in Oslo.")
    (snapshot,) = [s for s in harness.trace if s.executor_id == "forecaster"]
    (request,) = snapshot.model_requests
    assert request.origins == ("instructions", "input") and request.messages[-1].text == "What is the weather forecast?"
