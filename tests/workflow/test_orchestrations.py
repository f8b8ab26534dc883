import pytest
from doubles import RecordingAgent

from agent_nb import AgentExecutor, SequentialBuilder


async def test_sequential_full():
    agents = [RecordingAgent(f"a{i}") for i in range(4)]
    wf = SequentialBuilder(participants=agents).build()
    result = await wf.run("q")
    assert [len(a.seen[0]) for a in agents] == [1, 2, 3, 4]
    assert [o.text for o in result.get_outputs()] == ["a0 saw 1", "a1 saw 2", "a2 saw 3", "a3 saw 4"]


async def test_chain_only_agent_responses_sets_last_agent_everywhere():
    agents = [RecordingAgent(f"a{i}") for i in range(3)]
    explicit = AgentExecutor(RecordingAgent("x"), context_mode="full")
    wf = SequentialBuilder(participants=[*agents, explicit], chain_only_agent_responses=True).build()
    await wf.run("q")
    assert [len(a.seen[0]) for a in agents] == [1, 1, 1]
    assert explicit.context_mode == "last_agent"
    assert {e.context_mode for e in wf.executors.values()} == {"last_agent"}


def test_needs_participants():
    with pytest.raises(ValueError, match="at least one participant"):
        SequentialBuilder(participants=[])
