import pytest

from agent_nb import AgentExecutor, ChatAgent, MirrorChatClient, StepFailed, WorkflowBuilder
from agent_nb.demo import QUESTION, build_demo

EXPECTED = """\
[1] planner · agent · context_mode=full · answered
    received  text 'Plan a rainy Sunday in Lisbon for two'
    given     1 message by its executor
    model got 2 messages · instructions 1 · input 1
              1. [instructions] system: Split the request into steps.
              2. [input] user: Plan a rainy Sunday in Lisbon for two
    answered  I see 2 messages: system "Split the request into steps." · user "Plan a rainy Sunday …
    sent      response of planner (conversation of 2 messages) → researcher
[2] researcher · agent · context_mode=custom (user_messages) · answered
    received  response of planner (conversation of 2 messages)
    dropped   1 message
              ✗ assistant, from planner: I see 2 messages: system "Split the request into steps." …
    given     1 message by its executor
    model got 2 messages · instructions 1 · input 1
              1. [instructions] system: Find places for each step.
              2. [input] user: Plan a rainy Sunday in Lisbon for two
    answered  I see 2 messages: system "Find places for each step." · user "Plan a rainy Sunday in…"
    sent      response of researcher (conversation of 2 messages) → writer
[3] writer · agent · context_mode=last_agent · answered
    received  response of researcher (conversation of 2 messages)
    dropped   1 message
              ✗ user: Plan a rainy Sunday in Lisbon for two
    given     1 message by its executor
    model got 2 messages · instructions 1 · handed over 1
              1. [instructions] system: Write the final plan.
              2. [handed over] user, from researcher (was assistant): I see 2 messages: system "Fin…
    answered  I see 2 messages: system "Write the final plan." · user from researcher "I see 2 mess…
    sent      response of writer (conversation of 2 messages) → (no downstream executor)"""


async def test_text_report_of_the_demo_is_exact_and_stable():
    trace = (await build_demo().run(QUESTION)).trace
    assert str(trace) == EXPECTED
    assert str((await build_demo().run(QUESTION)).trace) == EXPECTED


async def test_snapshots_record_what_each_invocation_had():
    trace = (await build_demo().run(QUESTION)).trace
    assert [s.executor_id for s in trace] == ["planner", "researcher", "writer"]
    assert [s.index for s in trace] == [0, 1, 2]
    writer = trace.last("writer")
    assert writer.context_mode == "last_agent" and writer.status == "answered"
    assert [m.text for m in writer.dropped] == [QUESTION]
    assert writer.given[0].author_name == "researcher" and writer.given[0].role == "user"
    assert writer.reassigned == (True,)
    assert writer.sent[0].targets == ()
    assert writer.duration >= 0 and writer.started >= trace.last("planner").started
    assert "ms" in trace.to_text(timings=True) and "ms" not in str(trace)


async def test_for_executor_selects_and_suggests():
    trace = (await build_demo().run(QUESTION)).trace
    assert [s.executor_id for s in trace.for_executor("writer")] == ["writer"]
    with pytest.raises(KeyError, match="did you mean 'writer'"):
        trace.for_executor("writr")


async def test_a_failed_invocation_is_in_the_trace():
    class Boom:
        name = "boom"

        def create_session(self):
            from agent_nb import AgentSession

            return AgentSession()

        async def run(self, messages=None, *, session=None, stream=False):
            raise RuntimeError("no model")

    first = AgentExecutor(ChatAgent(MirrorChatClient(), name="first"))
    wf = WorkflowBuilder(start_executor=first).add_edge(first, AgentExecutor(Boom())).build()
    with pytest.raises(StepFailed) as info:
        await wf.run("q")
    trace = info.value.result.trace
    assert [s.status for s in trace] == ["answered", "failed"]
    assert "error     RuntimeError: no model" in str(trace)


async def test_mimebundle_honours_include_and_exclude():
    trace = (await build_demo().run(QUESTION)).trace
    bundle = trace._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert set(trace._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    assert set(trace._repr_mimebundle_(exclude=["text/html"])) == {"text/plain"}


def test_a_snapshot_made_the_fast_way_is_the_same_frozen_record() -> None:
    import copy
    import dataclasses
    import pickle

    from agent_nb.trace import ContextSnapshot
    from agent_nb.trace.snapshots import new_snapshot

    values = {"executor_id": "a", "superstep": 2, "index": 5, "received": "hi", "kind": "agent", "given": ()}
    fast, slow = new_snapshot(values), ContextSnapshot(**values)
    assert type(fast) is ContextSnapshot
    assert fast == slow
    assert [getattr(fast, f.name) for f in dataclasses.fields(slow)] == [
        getattr(slow, f.name) for f in dataclasses.fields(slow)
    ]
    assert fast.state == {} and fast.state is not new_snapshot(values).state  # a fresh default each time
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.kind = "executor"  # type: ignore[misc]
    assert dataclasses.replace(fast, index=6).index == 6
    assert pickle.loads(pickle.dumps(fast)) == slow
    assert copy.deepcopy(fast) == slow
