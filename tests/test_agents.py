import pytest

from agent_nb import (
    AgentResponse,
    AgentSession,
    ChatAgent,
    EchoChatClient,
    Message,
    ScriptedChatClient,
    SupportsAgentRun,
)


def test_chat_agent_meets_the_protocol():
    assert isinstance(ChatAgent(EchoChatClient(), name="a"), SupportsAgentRun)


async def test_sends_instructions_then_messages_and_authors_the_reply():
    client = ScriptedChatClient(["done"])
    agent = ChatAgent(client, name="planner", instructions="Plan.")
    r = await agent.run(["hi", Message("user", "there")])
    assert isinstance(r, AgentResponse)
    assert client.requests[0][0] == [Message("system", "Plan."), Message("user", "hi"), Message("user", "there")]
    assert [(m.role, m.author_name, m.text) for m in r.messages] == [("assistant", "planner", "done")]
    assert r.model == "scripted"


async def test_stream_yields_authored_updates():
    agent = ChatAgent(EchoChatClient(), name="echo")
    updates = [u async for u in agent.run("one two", stream=True)]
    assert "".join(u.text for u in updates) == "one two"
    assert {u.author_name for u in updates} == {"echo"}
    assert AgentResponse.from_updates(updates).messages[0].author_name == "echo"


async def test_client_kwargs_reach_the_client_over_default_options():
    client = ScriptedChatClient(["x"])
    agent = ChatAgent(client, name="a", options={"temperature": 1, "model": "m"})
    await agent.run("q", client_kwargs={"temperature": 0})
    assert client.requests[0][1] == {"temperature": 0, "model": "m"}


def test_needs_a_name_and_a_client():
    with pytest.raises(ValueError, match=r"ChatAgent: name='' \(str\) is not accepted; give a non-empty str"):
        ChatAgent(EchoChatClient(), name="")
    with pytest.raises(TypeError, match=r"ChatAgent 'a': client=<object .*> \(object\) is not accepted; give a chat"):
        ChatAgent(object(), name="a")  # type: ignore[arg-type]


def test_create_session():
    assert isinstance(ChatAgent(EchoChatClient(), name="a").create_session(), AgentSession)
