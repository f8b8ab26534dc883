"""Deterministic counts: a chain shares its conversation instead of copying it per hop."""

import gc
import tracemalloc

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


async def bytes_kept_per_hop(n: int) -> float:
    """What a finished run of an ``n``-agent ``full`` chain leaves in its executors, per hop (bytes).

    A first run warms every cache; the second run's result is dropped, so what is left is the
    executors' state: each holds the conversation it saw, ``1 .. n`` messages long.
    """
    agents = [RecordingAgent(f"agent_{i:03d}") for i in range(n)]
    executors = [AgentExecutor(a, context_mode="full") for a in agents]
    wf = WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build()
    await wf.run("warm up")
    for a in agents:
        a.calls.clear()
    gc.collect()
    tracemalloc.start()
    try:
        result = await wf.run("benchmark input")
        assert len(result.trace.last(f"agent_{n - 1:03d}").given) == n
        del result
        for a in agents:
            a.calls.clear()  # the test agent's own record of inputs is not the workflow's memory
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert [len(e.conversation) for e in executors] == list(range(2, n + 2))
    return kept / n


async def test_a_full_chain_shares_one_conversation_log():
    # one shared log: a hop costs the same however long the chain is (a conversation copied per hop
    # would add 8 bytes for every message it holds: some 64 bytes a hop at 16 agents, 1,000 at 256)
    assert await bytes_kept_per_hop(256) <= 1.1 * await bytes_kept_per_hop(16)


async def test_a_chain_of_n_agents_receives_what_the_reference_workload_counts():
    """The contract's counts: full mode hands agent i the input and i replies; last_agent one message."""
    for mode, expected in (("full", list(range(1, 9))), ("last_agent", [1] * 8)):
        agents = [RecordingAgent(f"agent_{i:02d}") for i in range(8)]
        executors = [AgentExecutor(a, context_mode=mode) for a in agents]
        result = await WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build().run("input")
        assert [len(a.seen[0]) for a in agents] == expected
        # superstep started and completed, invoked, output and completed per agent, plus start and end
        assert len(result.events) == 5 * 8 + 2
