import pytest
from doubles import RecordingAgent

from agent_nb import AgentExecutor, Message, SequentialBuilder
from agent_nb.errors import ArgumentError
from agent_nb.workflow import Executor, WorkflowContext, handler
from agent_nb.workflow.filters import user_messages


async def test_the_last_participants_answer_is_the_output_and_the_others_stay_events_and_trace():
    agents = [RecordingAgent(f"a{i}") for i in range(4)]
    wf = SequentialBuilder(participants=agents).build()
    result = await wf.run("q")
    assert [len(a.seen[0]) for a in agents] == [1, 2, 3, 4]  # full: each sees the conversation so far
    assert [o.text for o in result.get_outputs()] == ["a3 saw 4"] and result.text == "a3 saw 4"
    earlier = [(e.executor_id, e.data.text) for e in result.events if e.type == "intermediate"]
    assert earlier == [("a0", "a0 saw 1"), ("a1", "a1 saw 2"), ("a2", "a2 saw 3")]
    assert [result.trace.last(f"a{i}").response.text for i in range(4)] == [f"a{i} saw {i + 1}" for i in range(4)]


async def test_streaming_yields_only_the_last_participants_updates_as_outputs():
    agents = [RecordingAgent(f"a{i}") for i in range(3)]
    wf = SequentialBuilder(participants=agents).build()
    events = [e async for e in wf.run("q", stream=True)]
    outputs = {e.executor_id for e in events if e.type == "output"}
    streamed = {e.executor_id for e in events if e.type == "intermediate"}
    assert outputs == {"a2"} and streamed == {"a0", "a1"}  # the earlier words still stream, as intermediate


async def test_output_from_all_or_some_participants():
    agents = [RecordingAgent(f"a{i}") for i in range(3)]
    every = await SequentialBuilder(participants=agents, output_from="all").build().run("q")
    assert [o.text for o in every.get_outputs()] == ["a0 saw 1", "a1 saw 2", "a2 saw 3"]
    agents = [RecordingAgent(f"a{i}") for i in range(3)]
    some = await SequentialBuilder(participants=agents, output_from=[agents[0], "a2"]).build().run("q")
    assert [o.text for o in some.get_outputs()] == ["a0 saw 1", "a2 saw 3"]
    with pytest.raises(ArgumentError, match="output_from names 'a9', which is not a participant"):
        SequentialBuilder(participants=agents, output_from=["a9"]).build()
    with pytest.raises(ArgumentError, match="give 'last'"):
        SequentialBuilder(participants=agents, output_from="first")


async def test_chain_only_agent_responses_wraps_agents_in_last_agent_and_never_changes_an_executor():
    agents = [RecordingAgent(f"a{i}") for i in range(3)]
    mine = AgentExecutor(RecordingAgent("x"), context_mode="last_agent")
    wf = SequentialBuilder(participants=[*agents, mine], chain_only_agent_responses=True).build()
    await wf.run("q")
    assert [len(a.seen[0]) for a in agents] == [1, 1, 1]
    assert {e.context_mode for e in wf.executors.values()} == {"last_agent"} and wf.executors["x"] is mine

    custom = AgentExecutor(RecordingAgent("w"), context_mode="custom", context_filter=user_messages)
    with pytest.raises(ArgumentError, match=r"executor 'w' uses context_mode='custom'.*never changed"):
        SequentialBuilder(participants=[*agents, custom], chain_only_agent_responses=True).build()
    assert custom.context_mode == "custom" and custom.context_filter is user_messages  # as the user made it


class Shout(Executor):
    """A custom participant that takes a conversation, and answers in capitals."""

    @handler
    async def shout(self, messages: list[Message], ctx: WorkflowContext[list[Message]]) -> None:
        await ctx.yield_output(messages[-1].text.upper())
        await ctx.send_message([*messages, Message("assistant", messages[-1].text.upper(), author_name=self.id)])


async def test_a_custom_first_participant_that_takes_a_conversation_gets_the_input_as_messages():
    then = RecordingAgent("after")
    wf = SequentialBuilder(participants=[Shout("shout"), then]).build()
    assert list(wf.executors)[:2] == ["input", "shout"] and wf.executors["input"].kind == "input"
    result = await wf.run("plan a picnic")  # a string: one user message
    assert result.trace.last("shout").received == [Message("user", "plan a picnic")]
    assert [m.text for m in then.seen[0]] == ["plan a picnic", "PLAN A PICNIC"]
    again = (
        await SequentialBuilder(participants=[Shout("shout")], output_from="all").build().run(Message("user", "hello"))
    )
    assert again.get_outputs() == ["HELLO"]


def test_needs_participants():
    with pytest.raises(ValueError, match="at least one participant"):
        SequentialBuilder(participants=[])
