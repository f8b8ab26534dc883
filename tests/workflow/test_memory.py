"""Deterministic counts: a chain shares its conversation instead of copying it per hop."""

import gc

from doubles import RecordingAgent

from agent_nb import AgentExecutor, Message, WorkflowBuilder


def live_messages() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Message)


async def run_chain(n: int, mode: str):
    agents = [RecordingAgent(f"agent_{i:02d}") for i in range(n)]
    executors = [AgentExecutor(a, context_mode=mode) for a in agents]
    wf = WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build()
    before = live_messages()
    result = await wf.run("benchmark input")
    for a in agents:
        a.calls.clear()  # the test agent's own record of inputs is not the workflow's memory
    return result, live_messages() - before


async def test_full_mode_keeps_linear_message_objects_alive():
    for n in (32, 128):
        result, alive = await run_chain(n, "full")
        # the input, one reply per agent, and each reply's user-role twin for the next agents
        assert alive == 1 + n + (n - 1), (n, alive)
        assert len(result.trace.last(f"agent_{n - 1:02d}").given) == n


async def test_last_agent_mode_keeps_linear_message_objects_alive():
    result, alive = await run_chain(128, "last_agent")
    assert alive == 1 + 128 + 127
    assert len(result.trace.last("agent_127").given) == 1


async def test_a_full_chain_shares_one_conversation_log():
    result, _ = await run_chain(16, "full")
    logs = {id(s.sent[0].message.full_conversation._log) for s in result.trace}
    assert len(logs) == 1


async def test_a_chain_of_n_agents_receives_what_the_reference_workload_counts():
    """The contract's counts: full mode hands agent i the input and i replies; last_agent one message."""
    for mode, expected in (("full", list(range(1, 9))), ("last_agent", [1] * 8)):
        agents = [RecordingAgent(f"agent_{i:02d}") for i in range(8)]
        executors = [AgentExecutor(a, context_mode=mode) for a in agents]
        result = await WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build().run("input")
        assert [len(a.seen[0]) for a in agents] == expected
        # superstep started and completed, invoked, output and completed per agent, plus start and end
        assert len(result.events) == 5 * 8 + 2
