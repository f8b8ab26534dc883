"""Runs of generated workflows: a failed run leaves every store as it was; context modes keep what
they promise; a streamed run holds what a plain run holds.

The workflows are random DAGs of agent executors (``graphs.py``): direct edges with conditions,
fan-outs with selections, fan-ins, chains; ``full``, ``last_agent`` and ``custom`` (a generated
filter) context modes; sessions shared or not; histories in memory (the session's state) and in
SQLite; executors that write the shared state; one that leaves a pending request.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
from pathlib import Path
from typing import Any

from doubles import run_plain_or_streamed
from graphs import (
    Built,
    GraphSpec,
    build,
    describe_message,
    graph_specs,
    holdings,
    invoked,
    outputs_by_superstep,
    shape,
)
from hypothesis import event, given
from hypothesis import strategies as st
from strategies import examples, json_values, short_text

from agent_nb import AgentExecutorResponse, ModelUnavailable, RunError, StepFailed
from agent_nb.workflow import RunResult

FAILURES = ("error", "agent_nb error", "cancelled", "stopped")

initial_states = st.dictionaries(
    st.sampled_from(["topic", "budget", "visits/a0", "visits/a1", "notes"]), json_values, max_size=3
)


async def run_once(built: Built, text: str, *, stream: bool, state: dict[str, Any] | None) -> RunResult:
    if not stream:
        return await built.workflow.run(text, state=state)
    async with built.workflow.run(text, stream=True, state=state) as events:
        async for _ in events:
            pass
    assert events.result is not None
    return events.result


async def run_failing(
    built: Built, failing: int, kind: str, text: str, *, stream: bool, state: dict[str, Any]
) -> BaseException | None:
    """Run with agent ``failing`` broken in the way ``kind`` says; the error, or ``None`` if the run completed.

    ``stopped``: the model never answers and the run is stopped from outside once it waits on it
    (the task is cancelled, or the stream is left early).
    """
    model = built.models[failing]
    if kind != "stopped":
        model.broken = {
            "error": RuntimeError("the model is down"),
            "agent_nb error": ModelUnavailable("503 from the server"),
            "cancelled": asyncio.CancelledError(),
        }[kind]
        try:
            await run_once(built, text, stream=stream, state=state)
        except (RunError, asyncio.CancelledError) as exc:
            return exc
        finally:
            model.broken = None
        return None
    model.hung = True
    try:
        if stream:
            async with built.workflow.run(text, stream=True, state=state) as events:
                async for e in events:
                    if e.type == "executor_invoked" and e.executor_id == f"a{failing}":  # type: ignore[attr-defined]
                        return asyncio.CancelledError("left the stream early")  # leaving the block stops the run
            return None
        calls = model.calls
        task = asyncio.ensure_future(built.workflow.run(text, state=state))
        for _ in range(10_000):  # offline agents never wait: the run goes until it hangs on the model, or ends
            if task.done() or model.calls > calls:
                break
            await asyncio.sleep(0)
        if task.done():
            task.result()
            return None
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as exc:
            return exc
        raise AssertionError("a cancelled run completed")
    finally:
        model.hung = False


# -- 3. a failed run leaves every store as it was ------------------------------------------------------


@examples(60)
@given(
    graph_specs(histories=(None, "memory", "sqlite"), asker=True),
    st.data(),
)
def test_a_failed_run_leaves_every_store_as_it_was(spec: GraphSpec, data: st.DataObject) -> None:
    """Conversations, caches, sessions, histories (loaded, and the SQLite file's rows), pending requests and
    the shared state are exactly as before a run that fails; and the next run does what it would have done."""
    event(shape(spec))
    initial = data.draw(initial_states, label="state")
    stream = data.draw(st.booleans(), label="stream")
    kind = data.draw(st.sampled_from(FAILURES), label="failure")

    async def check(directory: Path) -> None:
        built = build(spec, sqlite_path=directory / "history.sqlite")
        control = build(spec, sqlite_path=directory / "control.sqlite")  # the same workflow, never failed
        try:
            warm = await run_once(built, "warm up", stream=False, state=dict(initial))
            await run_once(control, "warm up", stream=False, state=dict(initial))
            assert warm.status in ("completed", "waiting")
            agents = invoked(warm)
            failing = int(data.draw(st.sampled_from(agents), label="failing agent")[1:])

            before = await holdings(built)
            conversations = [ex.conversation for ex in built.executors]
            given_state = copy.deepcopy(initial)
            error = await run_failing(built, failing, kind, "second turn", stream=stream, state=initial)
            if error is None:
                event("the failing agent was not reached")
                return
            event(f"{kind} ({'streamed' if stream else 'plain'} run): {type(error).__name__}")
            assert await holdings(built) == before
            assert all(ex.conversation is c for ex, c in zip(built.executors, conversations, strict=True))
            assert initial == given_state  # the mapping passed in is never changed
            if isinstance(error, StepFailed):
                assert error.result.status == "failed" and dict(error.result.state) == given_state
                assert error.executor_id == f"a{failing}"

            # the failed run is as if it never happened: the next run does what the control's does
            again = await run_once(built, "second turn", stream=stream, state=initial)
            expected = await run_once(control, "second turn", stream=stream, state=initial)
            assert outputs_by_superstep(again) == outputs_by_superstep(expected)
            assert dict(again.state) == dict(expected.state)
            assert await holdings(built) == await holdings(control)
        finally:
            built.close()
            control.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(check(Path(directory)))


# -- context modes keep what they promise ----------------------------------------------------------------


@examples(50)
@given(graph_specs(), short_text)
def test_every_context_mode_keeps_what_it_promises_and_the_agent_is_given_what_was_kept(
    spec: GraphSpec, text: str
) -> None:
    """``full`` keeps the whole upstream conversation, ``last_agent`` the upstream reply, ``custom`` exactly what
    its filter returns; what is kept and what is dropped make up what arrived; the agent is given what was kept,
    other agents' replies handed over as user messages."""
    built = build(spec)
    result = asyncio.run(built.workflow.run(text))
    executors = {ex.id: ex for ex in built.executors}
    checked = 0
    for snap in result.trace:
        ex = executors.get(snap.executor_id)
        received = snap.received
        if ex is None or not isinstance(received, (AgentExecutorResponse, list)):
            continue
        responses = received if isinstance(received, list) else [received]
        everything = _arrived(responses)
        kept, dropped = list(snap.kept), list(snap.dropped)
        if ex.context_mode == "full":
            assert kept == everything and dropped == []
        elif ex.context_mode == "last_agent":
            assert kept == [m for r in responses for m in r.agent_response.messages]
        else:
            assert kept == built.filters[ex.id](everything)
        kept_ids = {id(m) for m in kept}
        assert [m for m in everything if id(m) not in kept_ids] == dropped  # the rest, in order
        assert len(kept) + len(dropped) == len(everything)
        given_ = list(snap.given or ())
        assert [m.text for m in given_] == [m.text for m in kept]
        reassign = ex.options.reassign_other_agents_as_users
        for g, k in zip(given_, kept, strict=True):
            other = k.author_name is not None and k.author_name != ex.id and k.role in ("assistant", "tool")
            assert g.role == ("user" if other and reassign else k.role), (g, k)
        checked += 1
    event(f"checked {min(checked, 5)}+ handovers" if checked >= 5 else f"checked {checked} handovers")


def _arrived(responses: list[AgentExecutorResponse]) -> list[Any]:
    """Every message of the responses' conversations, each once, in order of first appearance (by identity)."""
    seen: dict[int, Any] = {}
    for r in responses:
        for m in r.full_conversation if r.full_conversation is not None else r.agent_response.messages:
            seen.setdefault(id(m), m)
    return list(seen.values())


# -- a streamed run holds what a plain run holds -------------------------------------------------


@examples(40)
@given(
    graph_specs(histories=(None, "memory")),
    st.lists(short_text, min_size=1, max_size=2),
)
def test_a_streamed_run_leaves_what_a_plain_run_leaves(spec: GraphSpec, turns: list[str]) -> None:
    async def check() -> None:
        plain, streamed = build(spec), build(spec)
        for text in turns:
            a = await run_once(plain, text, stream=False, state=None)
            b = await run_once(streamed, text, stream=True, state=None)
            assert a.status == b.status
            assert dict(a.state) == dict(b.state)
            assert [s.executor_id for s in a.trace] == [s.executor_id for s in b.trace]
            for x, y in zip(a.trace, b.trace, strict=True):
                assert [describe_message(m) for m in x.given or ()] == [describe_message(m) for m in y.given or ()]
        assert await holdings(plain) == await holdings(streamed)

    asyncio.run(check())


def test_agents_sharing_a_session_in_one_superstep_see_it_as_it_began_and_store_turns_in_start_order() -> None:
    """Found by the property above (once the history was a side channel within a superstep): a0 fans out to
    a1, a2 and a3, which share a session with an in-memory history. a1 is slow; a2 finishes before a3 even
    starts. Each must be given the conversation as it was when the superstep began, whatever order they finish
    in and whether the run streams; and the stored conversation holds their turns in the order they started."""
    from agent_nb import (
        AgentExecutor,
        AgentSession,
        ChatAgent,
        FunctionChatClient,
        InMemoryHistoryProvider,
        MirrorChatClient,
        WorkflowBuilder,
    )

    def answer(name: str, delay: float) -> Any:
        async def reply(messages: list[Any], options: Any) -> str:
            if delay:
                await asyncio.sleep(delay)
            return f"{name} saw {len(messages)}"

        return FunctionChatClient(reply)

    async def once(stream: bool) -> tuple[list[str], list[str]]:
        history, shared = InMemoryHistoryProvider(), AgentSession("shared")
        a0 = AgentExecutor(ChatAgent(MirrorChatClient(), name="a0"))
        fan = [
            AgentExecutor(ChatAgent(answer(name, delay), name=name, history=history), session=shared)
            for name, delay in (("a1", 0.02), ("a2", 0), ("a3", 0))
        ]
        workflow = WorkflowBuilder(start_executor=a0).add_fan_out_edges(a0, fan).build()
        result = await run_plain_or_streamed(workflow, "hi", stream)
        assert result is not None
        answers = [s.response.text for s in result.trace if s.executor_id != "a0"]
        stored = [m.text for m in await history.load(shared) if m.role == "assistant"]
        return sorted(answers), stored

    plain, streamed = asyncio.run(once(False)), asyncio.run(once(True))
    assert plain == streamed
    answers, stored = plain
    assert answers == ["a1 saw 2", "a2 saw 2", "a3 saw 2"]  # the input and a0's answer: no other's turn
    assert stored == ["a1 saw 2", "a2 saw 2", "a3 saw 2"]  # in the order they started, not the order they finished
