"""agent_nb's router as an Agent Framework chat client: real Agent Framework agents and workflows keep each session's route."""

from __future__ import annotations

from typing import Any

import agent_framework as maf
import pytest

from agent_nb import FunctionChatClient, Message, RoutingChatClient
from agent_nb.clients.base import Capabilities
from agent_nb.contents import FunctionCallContent
from agent_nb.errors import ArgumentError, RouteIncompatibleError, RouteNotFoundError
from agent_nb.interop.agent_framework import AgentNbChatClient


class Route:
    """A route's model: answers with its name and how many messages it got; keeps every request."""

    def __init__(self, name: str, replies: list[Any] | None = None) -> None:
        self.name = name
        self.requests: list[list[Message]] = []
        self.options: list[dict[str, Any]] = []
        self.replies = list(replies or [])
        self.client = FunctionChatClient(self.answer)

    def answer(self, messages: list[Message], options: Any) -> Any:
        self.requests.append(list(messages))
        self.options.append(dict(options))
        return self.replies.pop(0) if self.replies else f"{self.name}: {len(messages)} messages"


def routed() -> tuple[Route, Route, AgentNbChatClient]:
    fast, smart = Route("fast"), Route("smart")
    return fast, smart, AgentNbChatClient(RoutingChatClient({"fast": fast.client, "smart": smart.client}))


def said(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]


async def test_an_agent_framework_workflow_switches_routes_mid_conversation_with_its_history_intact() -> None:
    fast, smart, client = routed()
    writer = maf.Agent(client, "Write one line.", name="writer")
    session = writer.create_session()
    workflow = maf.WorkflowBuilder(start_executor=maf.AgentExecutor(writer, session=session), name="af").build()

    first = (await workflow.run("A line on rain")).get_outputs()[0]
    client.set_active_route(session, "smart")
    second = (await workflow.run("Now on sun")).get_outputs()[0]

    assert [m.additional_properties["agent_nb"]["route"] for m in (*first.messages, *second.messages)] == [
        "fast",
        "smart",
    ]
    assert len(fast.requests) == len(smart.requests) == 1
    assert said(smart.requests[0]) == [  # the whole conversation went to the new route
        ("system", "Write one line."),
        ("user", "A line on rain"),
        ("assistant", "fast: 2 messages"),
        ("user", "Now on sun"),
    ]
    assert smart.requests[0][2].author_name == "writer"
    assert client.get_active_route(session) == "smart" and session.state["routes"] == {"router": "smart"}

    restored = maf.AgentSession.from_dict(session.to_dict())  # saved and loaded: the route goes with the session
    again = await writer.run("And on snow", session=restored)
    assert again.messages[0].additional_properties["agent_nb"]["route"] == "smart"
    assert len(smart.requests[-1]) == 6


async def test_two_agents_on_one_router_keep_their_own_sessions_routes() -> None:
    fast, smart, client = routed()
    writer, critic = maf.Agent(client, name="writer"), maf.Agent(client, name="critic")
    sessions = {"writer": writer.create_session(), "critic": critic.create_session()}
    client.set_active_route(sessions["critic"], "smart")
    chain = maf.WorkflowBuilder(
        start_executor=(w := maf.AgentExecutor(writer, session=sessions["writer"])), name="pair"
    )
    chain.add_edge(w, maf.AgentExecutor(critic, session=sessions["critic"]))
    result = await chain.build().run("A haiku on tea")
    routes = [m.additional_properties["agent_nb"]["route"] for out in result.get_outputs() for m in out.messages]
    assert routes == ["fast", "smart"]  # each agent's answer (both are outputs) came from its session's route
    assert said(fast.requests[0]) == [("user", "A haiku on tea")]
    assert said(smart.requests[0])[-1] == ("assistant", "fast: 1 messages")  # the writer's words, handed on
    assert client.get_active_route(sessions["writer"]) == "fast"


async def test_agent_framework_tools_run_in_its_function_layer_through_the_router() -> None:
    call = Message("assistant", [FunctionCallContent(call_id="c1", name="tide", arguments={"port": "Brest"})])
    fast = Route("fast", [call, "High tide at 14:02."])
    client = AgentNbChatClient(RoutingChatClient({"fast": fast.client}))
    ran: list[str] = []

    def tide(port: str) -> str:
        """The next high tide at a port."""
        ran.append(port)
        return f"14:02 at {port}"

    agent = maf.Agent(client, name="navigator", tools=[tide])
    answer = await agent.run("When is high tide in Brest?", session=agent.create_session())
    assert answer.text == "High tide at 14:02." and ran == ["Brest"]
    assert fast.options[0]["tools"][0]["name"] == "tide"  # offered to the route as a declaration
    assert fast.options[0]["tools"][0]["parameters"]["properties"]["port"]["type"] == "string"
    tool_round = fast.requests[1]
    assert [m.role for m in tool_round] == ["user", "assistant", "tool"]
    assert tool_round[2].contents[0].result == "14:02 at Brest"


async def test_a_streamed_answer_comes_from_the_sessions_route() -> None:
    _, smart, client = routed()
    agent = maf.Agent(client, name="writer")
    session = agent.create_session()
    client.set_active_route(session, "smart")
    stream = agent.run("Stream it", session=session, stream=True)
    updates = [u async for u in stream]
    final = await stream.get_final_response()
    assert "".join(u.text for u in updates) == final.text == "smart: 1 messages"
    assert len(smart.requests) == 1


async def test_bad_routes_and_service_kept_conversations_are_refused_and_the_session_is_left_as_it_was() -> None:
    fast, _, client = routed()
    agent = maf.Agent(client, name="writer")
    session = agent.create_session()
    await agent.run("hello", session=session)
    before = session.to_dict()
    with pytest.raises(RouteNotFoundError, match=r"no route 'smrt'.*did you mean 'smart'"):
        client.set_active_route(session, "smrt")
    with pytest.raises(ArgumentError, match=r"options\['store'\].*agent_nb sends the whole conversation"):
        await agent.run("again", session=session, options={"store": True})
    assert session.to_dict() == before and len(fast.requests) == 1
    with pytest.raises(ArgumentError, match="a RoutingChatClient, to move a session"):
        AgentNbChatClient(fast.client).set_active_route(session, "fast")
    with pytest.raises(ArgumentError, match="an agent_nb chat client"):
        AgentNbChatClient(object())


def with_tool_work(policy: str) -> tuple[Route, Route, AgentNbChatClient, maf.Agent, maf.AgentSession]:
    """A session whose conversation holds a tool call and its result, made on a route with tools."""
    call = Message("assistant", [FunctionCallContent(call_id="c1", name="tide", arguments={"port": "Brest"})])
    tools = Route("tools", [call, "High tide at 14:02."])
    plain = Route("plain")
    plain.client = FunctionChatClient(plain.answer, capabilities=Capabilities(tool_calls=False))
    router = RoutingChatClient({"tools": tools.client, "plain": plain.client}, history_policy=policy)
    client = AgentNbChatClient(router)

    def tide(port: str) -> str:
        """The next high tide at a port."""
        return f"14:02 at {port}"

    agent = maf.Agent(client, name="navigator", tools=[tide])
    return tools, plain, client, agent, agent.create_session()


async def test_a_conversation_with_tool_work_moved_to_a_route_without_tools_is_repaired_and_says_so() -> None:
    _, plain, client, agent, session = with_tool_work("repair")
    await agent.run("When is high tide in Brest?", session=session)
    client.set_active_route(session, "plain")
    answer = await agent.run("And tomorrow?", session=session)

    sent = plain.requests[0]
    assert [m.role for m in sent] == ["user", "assistant", "user", "assistant", "user"]  # no tool message left
    assert sent[1].text == '[tool call c1: tide({"port": "Brest"})]'  # the tool work, as text
    assert sent[2].text == '[tool result c1: "14:02 at Brest"]'
    assert "tools" not in plain.options[0]  # the agent's tools were not offered to a route without them
    said = answer.messages[0].additional_properties["agent_nb"]
    assert said["route"] == "plain"
    assert said["repairs"] == [
        "rendered 2 tool messages as text (the route has no tools)",
        "the agent's tools were not offered: route 'plain' does not call tools",
    ]  # the repair, visible on the answer the Agent Framework agent keeps


async def test_a_strict_router_refuses_the_move_naming_route_and_session_and_the_history_stays() -> None:
    _, plain, client, agent, session = with_tool_work("strict")
    await agent.run("When is high tide in Brest?", session=session)
    client.set_active_route(session, "plain")
    before = session.to_dict()
    with pytest.raises(RouteIncompatibleError) as caught:
        await agent.run("And tomorrow?", session=session)
    text = str(caught.value)
    assert f"route 'plain' would reject this conversation of session {session.session_id!r} (2 problems)" in text
    assert "a tool exchange, but this route has no tools" in text and "history_policy='repair'" in text
    assert caught.value.route == "plain" and plain.requests == []  # nothing was sent
    assert session.to_dict() == before  # the history is as it was: the refused turn left nothing
    client.set_active_route(session, "tools")  # and the session goes on where it can
    assert (await agent.run("And tomorrow?", session=session)).text == "tools: 5 messages"
