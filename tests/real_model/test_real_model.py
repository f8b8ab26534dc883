"""agent_nb's OpenAI clients, routing and history against a real model server on loopback."""

from __future__ import annotations

import json

import pytest
from openai import AsyncOpenAI

from agent_nb import (
    AgentResponse,
    ChatAgent,
    FunctionCallContent,
    FunctionResultContent,
    InMemoryHistoryProvider,
    Message,
    ModelBadRequest,
    ModelUnavailable,
    RoutingChatClient,
    SQLiteHistoryProvider,
)
from agent_nb.clients.openai import OpenAIChatClient, OpenAIResponsesClient

try:  # the SDK's own HTTP library: httpx2 since openai 3, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

SETTINGS = {"temperature": 0}


class Wire:
    """A real HTTP client for the SDK that also keeps the JSON body of every request it sends."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.bodies: list[dict] = []
        self.clients: list[AsyncOpenAI] = []

    async def _keep(self, request: httpx.Request) -> None:
        self.bodies.append(json.loads(request.content or b"{}"))

    def sdk(self) -> AsyncOpenAI:
        http = httpx.AsyncClient(timeout=180, event_hooks={"request": [self._keep]})
        self.clients.append(AsyncOpenAI(api_key="not-needed", base_url=self.base_url, max_retries=0, http_client=http))
        return self.clients[-1]


@pytest.fixture
async def wire(model_server: str):
    wire = Wire(model_server)
    yield wire
    for client in wire.clients:
        await client.close()


async def test_the_second_turn_on_another_route_gets_the_first_turn(wire, tmp_path):
    chat = OpenAIChatClient("gemma", client=wire.sdk(), max_tokens=12, seed=1, **SETTINGS)
    responses = OpenAIResponsesClient("gemma", client=wire.sdk(), max_output_tokens=12, **SETTINGS)
    router = RoutingChatClient({"chat": chat, "responses": responses})
    history = SQLiteHistoryProvider(tmp_path / "chats.sqlite")
    agent = ChatAgent(router, name="assistant", history=history)
    session = agent.create_session()

    first = await agent.run("My name is Ada. Please remember it.", session=session)
    router.set_active_route(session, "responses")
    second = await agent.run("What is my name?", session=session)

    assert (first.route, second.route) == ("chat", "responses")
    sent = wire.bodies[-1]  # what the Responses route received
    assert "previous_response_id" not in sent and sent["store"] is False
    assert sent["input"][0]["content"][0]["text"] == "My name is Ada. Please remember it."
    assert sent["input"][1] == {"type": "message", "role": "assistant", "content": first.text}
    assert sent["input"][2]["content"][0]["text"] == "What is my name?"
    assert second.usage.input_tokens > first.usage.input_tokens  # the model read the first turn too
    stored = await SQLiteHistoryProvider(tmp_path / "chats.sqlite").load(session)
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]


async def test_a_streamed_reply(wire):
    agent = ChatAgent(OpenAIChatClient("gemma", client=wire.sdk(), max_tokens=16, **SETTINGS), name="streamer")
    updates = [u async for u in agent.run("Count from one to five.", stream=True)]
    texts = [u.text for u in updates if u.text]
    assert len(texts) >= 2  # token by token, not one block
    assert updates[-1].usage is not None and updates[-1].usage.output_tokens > 0
    assert wire.bodies[-1]["stream"] is True
    whole = await ChatAgent(OpenAIChatClient("gemma", client=wire.sdk(), max_tokens=16, **SETTINGS), name="s").run(
        "Count from one to five."
    )
    assert "".join(texts) == whole.text  # temperature 0: the same answer streamed or not


async def test_the_responses_api_streamed_and_not(wire):
    client = OpenAIResponsesClient("gemma", client=wire.sdk(), max_output_tokens=10, **SETTINGS)
    whole = await client.get_response([Message("user", "Say hello.")])
    assert whole.text and whole.usage.output_tokens > 0 and whole.response_id
    parts = [u async for u in client.get_streaming_response([Message("user", "Say hello.")])]
    assert "".join(u.text for u in parts) == whole.text
    assert parts[-1].response_id and parts[-1].usage.output_tokens > 0


def weather_exchange(city: str, n: int) -> list[Message]:
    """One worked example of a tool call: a base model copies the pattern it is shown."""
    return [
        Message("user", f"What is the weather in {city}?"),
        Message("assistant", [FunctionCallContent(call_id=f"call_{n}", name="get_weather", arguments={"city": city})]),
        Message("tool", [FunctionResultContent(call_id=f"call_{n}", result=f"18C and sunny in {city}")]),
        Message("assistant", f"It is 18C and sunny in {city}."),
    ]


class AnswerOnceResultsAreIn:
    """Wraps a client: once the last message is a tool result, the model must answer in words.

    A base model would copy the examples' pattern and call the tool again and again.
    """

    def __init__(self, inner):
        self.inner = inner

    def _options(self, messages, options):
        return {**(options or {}), "tool_choice": "none"} if messages[-1].role == "tool" else options

    async def get_response(self, messages, options=None, *, session=None):
        return await self.inner.get_response(messages, self._options(messages, options), session=session)

    def get_streaming_response(self, messages, options=None, *, session=None):
        return self.inner.get_streaming_response(messages, self._options(messages, options), session=session)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_tool_call_round_trip_through_a_router(wire, stream):
    """The template makes llama.cpp parse <tool_call> tags; two examples make the model write one."""
    asked: list[str] = []

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        asked.append(city)
        return f"18C and sunny in {city}"

    history = InMemoryHistoryProvider()
    client = OpenAIChatClient("gemma", client=wire.sdk(), max_tokens=64, extra_body={"cache_prompt": False}, **SETTINGS)
    router = RoutingChatClient({"local": AnswerOnceResultsAreIn(client)})  # checks each request before it goes
    agent = ChatAgent(
        router,
        name="forecaster",
        tools=[get_weather],
        history=history,
        options={"parallel_tool_calls": False},
    )
    session = agent.create_session()
    await history.save(session, [*weather_exchange("Lisbon", 1), *weather_exchange("Rome", 2)])

    if stream:
        updates = [u async for u in agent.run("What is the weather in Paris?", session=session, stream=True)]
        assert any(u.role == "tool" for u in updates) and {u.route for u in updates if u.role != "tool"} == {"local"}
        response = AgentResponse.from_updates(updates)
    else:
        response = await agent.run("What is the weather in Paris?", session=session)
        assert response.route == "local"

    assert asked == ["Paris"]  # the server parsed the call, agent_nb validated and ran it
    calls = [c for c in response.messages[0].contents if c.type == "function_call"]
    results = {r.call_id: r for r in response.messages[1].contents}
    call = calls[0]
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
    assert results[call.call_id].result == "18C and sunny in Paris"
    for extra in calls[1:]:  # the model often starts a second call that max_tokens cuts off
        assert results[extra.call_id].exception.startswith("ToolArgumentsError")
    assert len(wire.bodies) == 2 and wire.bodies[-1]["tool_choice"] == "none"
    answer_request = wire.bodies[-1]["messages"]
    assert {"role": "tool", "tool_call_id": call.call_id, "content": "18C and sunny in Paris"} in answer_request
    assert {"name": "get_weather", "arguments": '{"city": "Paris"}'} in [
        c["function"] for c in answer_request[-1 - len(calls)]["tool_calls"]
    ]
    assert [m.role for m in response.messages] == ["assistant", "tool", "assistant"]
    stored = await history.load(session)
    assert [m.role for m in stored[-4:]] == ["user", "assistant", "tool", "assistant"]


async def test_server_errors_keep_the_servers_words(wire):
    client = OpenAIChatClient("gemma", client=wire.sdk(), max_tokens=4)
    with pytest.raises(
        ModelBadRequest, match=r"refused the request \(400\): request \(\d+ tokens\) exceeds the available context size"
    ) as info:
        await client.get_response([Message("user", "word " * 5000)])
    assert info.value.status == 400 and not info.value.retryable


async def test_an_unreachable_server_is_retryable():
    async with OpenAIChatClient("gemma", base_url="http://127.0.0.1:9/v1", max_retries=0) as client:
        with pytest.raises(ModelUnavailable, match="cannot reach the server") as info:
            await client.get_response([Message("user", "hi")])
    assert info.value.retryable


class AnswerOnceAComponentReturned(AnswerOnceResultsAreIn):
    """For a planner: once a component's result is in its context, the model must answer in words."""

    def _options(self, messages, options):
        returned = any(c.type == "function_result" for m in messages for c in m.contents)
        return {**(options or {}), "tool_choice": "none"} if returned else options


async def test_a_real_model_as_the_orchestrator_also_answers_again_what_a_topic_showed(wire):
    from agent_nb.harness import ModelPlanner, Orchestrator, StandardHarness
    from agent_nb.harness.scenarios import opening_hours

    client = OpenAIChatClient("gemma", client=wire.sdk(), max_tokens=48, extra_body={"cache_prompt": False}, **SETTINGS)
    planner = ModelPlanner(
        AnswerOnceAComponentReturned(client), options={"tool_choice": "required", "parallel_tool_calls": False}
    )
    shop = StandardHarness(Orchestrator("orchestrator", opening_hours().build().components, planner=planner))
    await shop.send("What are your opening hours?")

    plan, answer = wire.bodies
    assert {t["function"]["name"] for t in plan["tools"]} == {"opening_hours", "delivery_faq"}
    assert "opening_hours: Opening hours of the shop" in plan["messages"][0]["content"]
    notes = [m for m in answer["messages"][1:] if m["role"] == "system"]  # what the model said beside its call
    assert all(m["content"].startswith("reasoning: ") for m in notes)
    roles = [m["role"] for m in answer["messages"] if m not in notes]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert answer["messages"][-1]["content"] == "We are open 9:00-17:00, Monday to Friday."  # implicit text only
    writers = [m.author_name for m in shop.transcript if m.role == "assistant"]
    assert writers == ["opening_hours", "orchestrator"]  # the model chose the topic, then answered again
    assert "answer shown but not returned" in shop.gaps().kinds()


async def test_a_cassette_recorded_from_the_real_model_replays_it(model_server, tmp_path):
    from agent_nb.clients.replay import RecordingChatClient, ReplayChatClient

    path = tmp_path / "gemma.json"
    real = OpenAIChatClient("gemma", base_url=model_server, max_tokens=12, seed=1, **SETTINGS)
    recorded = ChatAgent(RecordingChatClient(real, path), name="a", history=InMemoryHistoryProvider())
    session = recorded.create_session()
    first = (await recorded.run("Name a colour.", session=session)).text
    streamed = "".join([u.text async for u in recorded.run("Another one.", session=session, stream=True)])
    await real.aclose()

    replayed = ChatAgent(ReplayChatClient(path), name="a", history=InMemoryHistoryProvider())
    again = replayed.create_session()
    assert (await replayed.run("Name a colour.", session=again)).text == first
    assert "".join([u.text async for u in replayed.run("Another one.", session=again, stream=True)]) == streamed
    kinds = [("chunks" in i, i["request"]["stream"]) for i in json.loads(path.read_text())["interactions"]]
    assert kinds == [(False, False), (True, True)]
