from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agent_nb import (
    AgentExecutor,
    AgentResponse,
    ChatAgent,
    FunctionCallContent,
    FunctionTool,
    InMemoryHistoryProvider,
    Message,
    ScriptedChatClient,
    ToolRoundsExceeded,
    WorkflowBuilder,
    tool,
)
from agent_nb.tools import ToolArgumentsError, as_tools


def weather(city: Annotated[str, Field(description="a city name")], unit: Literal["C", "F"] = "C") -> str:
    """The weather in a city.

    Longer notes that are not sent to the model.
    """
    return f"18{unit} in {city}"


class Point(BaseModel):
    x: int
    y: int


async def distance(a: Point, b: Point) -> float:
    return ((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5


def test_schema_from_hints_and_docstring():
    t = FunctionTool(weather)
    assert t.schema() == {
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "description": "a city name"},
                "unit": {"enum": ["C", "F"], "type": "string", "default": "C"},
            },
            "required": ["city"],
        },
    }


def test_a_parameter_called_title_survives_title_stripping():
    def note(title: str) -> str:
        return title

    assert "title" in FunctionTool(note).parameters["properties"]


async def test_arguments_are_validated_and_models_built():
    assert await FunctionTool(weather).invoke('{"city": "Lisbon", "unit": "F"}') == "18F in Lisbon"
    assert await FunctionTool(distance).invoke({"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}}) == 5.0
    with pytest.raises(
        ToolArgumentsError,
        match=r"invalid arguments for weather: city: Field required; unit: Input should be 'C' or 'F'",
    ):
        await FunctionTool(weather).invoke({"unit": "K"})
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        await FunctionTool(weather).invoke("{city:")


async def test_run_kwargs_reach_only_tools_that_ask_for_them():
    seen = {}

    def whoami(**kwargs) -> str:
        seen.update(kwargs)
        return "ok"

    await FunctionTool(whoami).invoke({}, user_id="u1")
    assert seen == {"user_id": "u1"}
    assert "user_id" not in FunctionTool(whoami).parameters.get("properties", {})


def test_bad_tools_are_refused_at_construction():
    def untyped(x):
        return x

    with pytest.raises(TypeError, match="annotate parameter 'x'"):
        FunctionTool(untyped)
    with pytest.raises(ValueError, match="two tools are named 'weather'"):
        as_tools([weather, FunctionTool(weather)])
    assert tool(name="w")(weather).name == "w"


def call(call_id, name, **arguments):
    return Message("assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)])


async def test_the_agent_runs_the_call_result_loop_and_stores_it():
    client = ScriptedChatClient([call("c1", "weather", city="Lisbon"), "It is 18C."])
    history = InMemoryHistoryProvider()
    agent = ChatAgent(client, name="w", tools=[weather], history=history)
    session = agent.create_session()
    r = await agent.run("weather?", session=session)
    assert [(m.role, m.text) for m in r.messages] == [("assistant", ""), ("tool", ""), ("assistant", "It is 18C.")]
    assert r.messages[1].contents[0].result == "18C in Lisbon"
    second_request, options = client.requests[1]
    assert [m.role for m in second_request] == ["user", "assistant", "tool"]
    assert [t.name for t in options["tools"]] == ["weather"]
    stored = await history.load(session)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]


async def test_tool_errors_go_back_to_the_model():
    def broken(x: int) -> int:
        raise RuntimeError("db down")

    client = ScriptedChatClient(
        [call("c1", "broken", x=1), call("c2", "missing"), call("c3", "broken", x="NaN"), "gave up"]
    )
    r = await ChatAgent(client, name="a", tools=[broken]).run("go")
    results = [m.contents[0] for m in r.messages if m.role == "tool"]
    assert results[0].exception == "RuntimeError: db down"
    assert results[1].exception == "there is no tool 'missing'; tools: broken"
    assert results[2].exception.startswith("ToolArgumentsError: invalid arguments for broken: x:")
    assert r.text == "gave up"


async def test_rounds_are_bounded():
    client = ScriptedChatClient([call(f"c{i}", "weather", city="x") for i in range(5)])
    agent = ChatAgent(client, name="loop", tools=[weather], max_tool_rounds=2, history=InMemoryHistoryProvider())
    session = agent.create_session()
    with pytest.raises(ToolRoundsExceeded, match=r"still called tools after 2 rounds \(max_tool_rounds=2\)"):
        await agent.run("go", session=session)
    assert await agent.history.load(session) == []
    assert client.used == 3


async def test_without_tools_calls_are_the_answer():
    client = ScriptedChatClient([call("c1", "anything")])
    r = await ChatAgent(client, name="a").run("go")
    assert r.messages[0].contents[0].name == "anything" and client.used == 1


async def test_function_invocation_kwargs_reach_tools_through_a_workflow():
    seen = []

    def audit(**kwargs) -> str:
        seen.append(kwargs)
        return "logged"

    agent = ChatAgent(ScriptedChatClient([call("c1", "audit"), "done"]), name="a", tools=[audit])
    wf = WorkflowBuilder(start_executor=AgentExecutor(agent)).build()
    await wf.run("go", function_invocation_kwargs={"a": {"user_id": "u7"}})
    assert seen == [{"user_id": "u7"}]


async def test_streaming_with_tools_yields_calls_results_and_text():
    client = ScriptedChatClient([call("c1", "weather", city="Porto"), "Porto is 18C."])
    updates = [u async for u in ChatAgent(client, name="w", tools=[weather]).run("go", stream=True)]
    kinds = [(u.role, [c.type for c in u.contents]) for u in updates]
    assert kinds[0] == ("assistant", ["function_call"])
    assert ("tool", ["function_result"]) in kinds
    assert "".join(u.text for u in updates if u.role == "assistant") == "Porto is 18C."


async def test_a_forced_tool_choice_holds_for_the_first_round_only():
    client = ScriptedChatClient([call("c1", "weather", city="Faro"), "Faro: 18C."])
    agent = ChatAgent(client, name="w", tools=[weather], options={"tool_choice": "required"})
    await agent.run("go")
    assert [options["tool_choice"] for _, options in client.requests] == ["required", "auto"]


async def test_any_parameter_name_works():
    def odd(json: str, model_config: int, _private: bool = False) -> str:
        return f"{json}-{model_config}-{_private}"

    t = FunctionTool(odd)
    assert set(t.parameters["properties"]) == {"json", "model_config", "_private"}
    assert t.parameters["required"] == ["json", "model_config"]
    assert await t.invoke({"json": "j", "model_config": 2, "_private": True}) == "j-2-True"


async def test_results_come_back_json_ready():
    from dataclasses import dataclass

    @dataclass
    class Forecast:
        city: str
        temp: float

    def forecast(city: str) -> Forecast:
        return Forecast(city, 18.5)

    def opaque(x: int) -> object:
        return object.__new__(type("Thing", (), {"__str__": lambda self: "a thing"}))

    assert await FunctionTool(forecast).invoke({"city": "Faro"}) == {"city": "Faro", "temp": 18.5}
    assert await FunctionTool(opaque).invoke({"x": 1}) == "a thing"
    client = ScriptedChatClient([call("c1", "opaque", x=1), "ok"])
    history = InMemoryHistoryProvider()
    agent = ChatAgent(client, name="a", tools=[opaque], history=history)
    session = agent.create_session()
    await agent.run("go", session=session)  # the stored turn serialises
    assert [m.role for m in await history.load(session)] == ["user", "assistant", "tool", "assistant"]


async def test_sync_tools_do_not_freeze_the_event_loop():
    import asyncio
    import threading

    loop = asyncio.get_running_loop()
    started = asyncio.Event()  # set on the loop once the tool has begun
    answered = threading.Event()  # set by a coroutine on the loop; the tool waits for it

    def needs_the_loop(x: int) -> str:
        loop.call_soon_threadsafe(started.set)
        # only a loop that goes on running while the tool runs can answer; on the loop's own
        # thread the tool would wait in vain (the timeout only keeps such a failure from hanging)
        return f"{x}: the loop answered" if answered.wait(timeout=5) else f"{x}: the loop was frozen"

    async def answer() -> None:
        await started.wait()
        answered.set()

    task = asyncio.ensure_future(answer())
    assert await FunctionTool(needs_the_loop).invoke({"x": 3}) == "3: the loop answered"
    await task


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_tool_that_ends_the_turn_runs_and_the_model_is_not_asked_again(stream: bool) -> None:
    ran: list[str] = []

    @tool(ends_turn=True)
    def transfer(to: str) -> str:
        """Pass the conversation on."""
        ran.append(to)
        return f"passed to {to}"

    call = FunctionCallContent(call_id="t1", name="transfer", arguments={"to": "billing"})
    client = ScriptedChatClient([Message("assistant", [call]), "never said"])
    agent = ChatAgent(client, name="triage", tools=[transfer])
    if stream:
        updates = [u async for u in agent.run("I was charged twice", stream=True)]
        messages = AgentResponse.from_updates(updates).messages
    else:
        messages = (await agent.run("I was charged twice")).messages
    assert ran == ["billing"] and len(client.requests) == 1  # one request: the turn ended with the tool
    assert [(m.role, m.contents[0].type) for m in messages] == [
        ("assistant", "function_call"),
        ("tool", "function_result"),
    ]
    assert repr(transfer) == "FunctionTool('transfer', ends_turn=True)"
