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


async def test_a_model_that_calls_a_tool_its_agent_lacks_warns_in_the_events_the_trace_and_the_view() -> None:
    from agent_nb import ScriptedChatClient, WorkflowBuilder
    from agent_nb.contents import FunctionCallContent
    from agent_nb.display import graph_of, run_view
    from agent_nb.trace.codec import dump_trace, load_trace
    from agent_nb.workflow import AgentExecutor

    call = FunctionCallContent(call_id="c1", name="book_flight", arguments={"to": "Oslo"})
    travel = AgentExecutor(ChatAgent(ScriptedChatClient([Message("assistant", [call])]), name="travel"))
    wf = WorkflowBuilder(start_executor=travel).build()
    result = await wf.run("Fly me to Oslo")
    (warning,) = [e.message for e in result.events if e.type == "warning"]
    assert "executor 'travel': the model called 'book_flight', but agent 'travel' has no tools" in warning
    assert "ChatAgent(tools=[...])" in warning  # and what to do
    snapshot = result.trace.last("travel")
    assert snapshot.status == "warned" and snapshot.warnings == (warning,)
    assert f"warning   {warning[:40]}" in str(result.trace) and "· warned" in str(result.trace)
    assert graph_of(wf, result.trace).node("travel").status == "warned"
    html = run_view(result)
    assert '<span class="status warned">warned</span>' in html and "agent &#x27;travel&#x27; has no tools" in html
    assert html.count("has no tools") == 1 and str(result.trace).count("has no tools") == 1  # said once, warned
    assert load_trace(dump_trace(result.trace)).last("travel").warnings == (warning,)  # stored with the cell
    assert result.trace.to_dict()["snapshots"][0]["warnings"] == [warning]
