"""A tool that hangs ends its turn with a clear error; a cancelled turn never stores a late result."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agent_nb import (
    AgentSession,
    ArgumentError,
    ChatAgent,
    FunctionCallContent,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    ScriptedChatClient,
    ToolTimeout,
    tool,
)


def calls(name: str, then: str = "done") -> ScriptedChatClient:
    call = FunctionCallContent(call_id="c1", name=name, arguments={})
    return ScriptedChatClient([Message("assistant", [call]), then])


async def test_a_hanging_async_tool_ends_the_turn_naming_the_tool_and_is_cancelled():
    ends = []

    @tool(timeout=0.05)
    async def lookup() -> str:
        """Look something up."""
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            ends.append("cancelled")
            raise
        return "never"

    history = InMemoryHistoryProvider()
    agent = ChatAgent(calls("lookup"), name="clerk", tools=[lookup], history=history)
    session = AgentSession("s")
    with pytest.raises(
        ToolTimeout, match=r"agent 'clerk': tool 'lookup' \(call c1\) did not finish within 0.05 s"
    ) as t:
        await agent.run("find it", session=session)
    assert (t.value.tool, t.value.timeout) == ("lookup", 0.05)
    assert ends == ["cancelled"]
    assert await history.load(session) == []  # nothing of the turn was stored


async def test_the_agents_tool_timeout_bounds_a_plain_def_whose_late_result_is_dropped():
    release, finished = threading.Event(), threading.Event()

    @tool
    def slow() -> str:
        """Slow work in a thread."""
        release.wait(10)
        finished.set()
        return "late result"

    history = InMemoryHistoryProvider()
    agent = ChatAgent(calls("slow"), name="clerk", tools=[slow], history=history, tool_timeout=0.05)
    session = AgentSession("s")
    with pytest.raises(ToolTimeout, match="a plain def tool runs on in its thread"):
        await agent.run("go", session=session)
    release.set()
    await asyncio.to_thread(finished.wait, 10)  # the thread returned its result after the turn ended ...
    await asyncio.sleep(0)
    assert await history.load(session) == []  # ... and it was stored nowhere


async def test_a_turn_cancelled_while_a_plain_def_tool_runs_stores_nothing_of_it():
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    @tool
    def refund() -> str:
        """Refund, slowly."""
        started.set()
        release.wait(10)
        finished.set()
        return "refunded"

    history = InMemoryHistoryProvider()
    agent = ChatAgent(calls("refund"), name="clerk", tools=[refund], history=history)
    session = AgentSession("s")
    turn = asyncio.ensure_future(agent.run("refund it", session=session))
    await asyncio.to_thread(started.wait, 10)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    release.set()
    await asyncio.to_thread(finished.wait, 10)
    await asyncio.sleep(0)
    assert await history.load(session) == []


async def test_a_tools_own_timeout_error_is_its_result_not_a_timeout_of_the_turn():
    @tool(timeout=5)
    async def flaky() -> str:
        """Fails fast with its own timeout."""
        raise TimeoutError("the upstream service timed out")

    agent = ChatAgent(calls("flaky"), name="clerk", tools=[flaky])
    response = await agent.run("try")
    result = response.messages[1].contents[0]
    assert result.exception == "TimeoutError: the upstream service timed out"
    assert response.text == "done"


@pytest.mark.parametrize(
    ("kwargs", "argument", "fragment"),
    [
        ({"instructions": 123}, "instructions", "instructions=123 (int) is not accepted; give a str, or None"),
        ({"max_tool_rounds": "3"}, "max_tool_rounds", "max_tool_rounds='3' (str) is not accepted; give an int"),
        ({"max_tool_rounds": 0}, "max_tool_rounds", "max_tool_rounds=0 (int)"),
        ({"options": "t=1"}, "options", "options='t=1' (str) is not accepted; give a dict of request options"),
        ({"tool_timeout": 0}, "tool_timeout", "tool_timeout=0 (int) is not accepted; give a number of seconds"),
        ({"tools": "weather"}, "tools", "tools='weather' (str) is not accepted; give a list of functions"),
    ],
)
def test_a_bad_argument_to_an_agent_is_refused_at_once_naming_it(kwargs, argument, fragment):
    with pytest.raises(ArgumentError) as refused:
        ChatAgent(MirrorChatClient(), name="planner", **kwargs)
    assert refused.value.argument == argument
    assert str(refused.value).startswith("ChatAgent 'planner': " + fragment)
    assert isinstance(refused.value, (TypeError, ValueError))


def test_a_bad_tool_timeout_is_refused_naming_the_tool():
    with pytest.raises(ArgumentError, match=r"tool 'f': timeout=-1 \(int\) is not accepted"):

        @tool(timeout=-1)
        def f() -> str:
            return ""


async def test_a_timeout_in_one_call_stops_the_other_calls_of_its_round():
    ends = []

    @tool(timeout=0.05)
    async def stuck() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    @tool
    async def refund() -> str:
        """Refunds, slowly."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            ends.append("refund cancelled")
            raise
        return "refunded"

    calls = [FunctionCallContent(call_id=c, name=n, arguments={}) for c, n in (("c1", "stuck"), ("c2", "refund"))]
    agent = ChatAgent(ScriptedChatClient([Message("assistant", calls), "done"]), name="clerk", tools=[stuck, refund])
    with pytest.raises(ToolTimeout, match="tool 'stuck'"):
        await agent.run("go")
    assert ends == ["refund cancelled"]  # nothing of the round runs on behind the failed turn
