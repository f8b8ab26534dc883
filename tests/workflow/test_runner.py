import asyncio
import re
import subprocess
import sys
import textwrap

import pytest
from doubles import Gate, RecordingAgent

from agent_nb import (
    AgentExecutor,
    AgentExecutorResponse,
    AgentResponseUpdate,
    Executor,
    StepFailed,
    SuperstepLimitExceeded,
    UsageError,
    WorkflowBuilder,
    WorkflowBusyError,
    WorkflowContext,
    handler,
)


class Relay(Executor):
    """Appends its id; yields when it is a sink. With a ``gate`` it stops at the gate until the test opens it."""

    def __init__(self, id, *, gate: Gate | None = None, log=None):
        super().__init__(id)
        self.gate, self.log = gate, log if log is not None else []

    @handler
    async def on(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        self.log.append(("start", self.id, ctx.superstep))
        if self.gate is not None:
            await self.gate.reached()
        self.log.append(("end", self.id, ctx.superstep))
        await ctx.send_message(f"{text}>{self.id}")
        await ctx.yield_output(f"{text}>{self.id}")


class Join(Executor):
    @handler
    async def on(self, items: list[str], ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(" + ".join(items))


class Loop(Executor):
    @handler
    async def on(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.send_message(n + 1)


async def test_messages_sent_in_one_superstep_arrive_in_the_next():
    a, b, c = Relay("a"), Relay("b"), Relay("c")
    result = await WorkflowBuilder(start_executor=a, output_from=["c"]).add_chain([a, b, c]).build().run("x")
    assert [(s.executor_id, s.superstep) for s in result.trace] == [("a", 1), ("b", 2), ("c", 3)]
    assert result.get_outputs() == ["x>a>b>c"]


async def test_executors_of_one_superstep_run_concurrently():
    log: list = []

    class Meeting(Executor):
        """Goes on only once the other one has started too: run one after the other, neither would."""

        def __init__(self, id, here: asyncio.Event, other: asyncio.Event):
            super().__init__(id)
            self.here, self.other = here, other

        @handler
        async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
            log.append(("start", self.id, ctx.superstep))
            self.here.set()
            await self.other.wait()
            log.append(("end", self.id, ctx.superstep))

    b_started, c_started = asyncio.Event(), asyncio.Event()
    a = Relay("a", log=log)
    b, c = Meeting("b", b_started, c_started), Meeting("c", c_started, b_started)
    wf = WorkflowBuilder(start_executor=a).add_fan_out_edges(a, [b, c]).build()
    await asyncio.wait_for(wf.run("x"), 5)  # run one by one, the first would wait for ever: fail, do not hang
    assert log[2:4] == [("start", "b", 2), ("start", "c", 2)]  # both started before either ended


async def test_fan_in_delivers_one_list_once_every_source_sent():
    a, fast, slow, join = Relay("a"), Relay("fast"), Relay("slow"), Join("join")
    wf = (
        WorkflowBuilder(start_executor=a, output_from=["join"])
        .add_fan_out_edges(a, [fast, slow])
        .add_edge(slow, Relay("slower"))
        .add_fan_in_edges([fast, "slower"], join)
        .build()
    )
    result = await wf.run("x")
    assert result.get_outputs() == ["x>a>fast + x>a>slow>slower"]
    assert [s.superstep for s in result.trace.for_executor("join")] == [4]


async def test_conditional_edges_and_fan_out_selection():
    a, short, long_ = Relay("a"), Relay("short"), Relay("long")
    wf = (
        WorkflowBuilder(start_executor=a, output_from=["short", "long"])
        .add_edge(a, short, lambda t: len(t) < 6)
        .add_edge(a, long_, lambda t: len(t) >= 6)
        .build()
    )
    assert (await wf.run("x")).get_outputs() == ["x>a>short"]
    assert (await wf.run("xxxx")).get_outputs() == ["xxxx>a>long"]

    b, c = Relay("b"), Relay("c")
    picker = WorkflowBuilder(start_executor=(s := Relay("s")), output_from=["b", "c"]).add_fan_out_edges(
        s, [b, c], selection=lambda msg, targets: [t for t in targets if t == "c"]
    )
    assert (await picker.build().run("x")).get_outputs() == ["x>s>c"]


async def test_a_condition_that_raises_fails_the_run_naming_the_edge():
    a, b = Relay("a"), Relay("b")

    def picky(text):
        raise ValueError("no")

    wf = WorkflowBuilder(start_executor=a).add_edge(a, b, picky).build()
    with pytest.raises(StepFailed, match=r"condition 'picky' on the edge a → b raised ValueError\('no'\)"):
        await wf.run("x")


async def test_send_to_a_target_without_an_edge_is_a_usage_error():
    class Misdirect(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text, target_id="nowhere")

    wf = WorkflowBuilder(start_executor=Misdirect("m")).build()
    with pytest.raises(StepFailed, match="'m' sent a message of type str to 'nowhere', but no edge") as info:
        await wf.run("x")
    assert isinstance(info.value.__cause__, UsageError) and info.value.result.status == "failed"


async def test_a_message_no_edge_can_deliver_fails_the_run():
    class Sloppy(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext) -> None:  # sends undeclared types
            await ctx.send_message(42)

    wf = WorkflowBuilder(start_executor=(s := Sloppy("s"))).add_edge(s, Relay("r")).build()
    with pytest.raises(StepFailed, match=r"'s' sent a message of type int, but none of its edges .* \(r takes str\)"):
        await wf.run("x")


async def test_a_fan_in_list_the_target_cannot_take_names_the_fan_in():
    class Num(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext) -> None:
            await ctx.send_message(1)

    class Texts(Executor):
        @handler
        async def on(self, items: list[str], ctx: WorkflowContext[None, str]) -> None: ...

    start, a, b = Relay("start"), Num("a"), Num("b")
    wf = (
        WorkflowBuilder(start_executor=start)
        .add_fan_out_edges(start, [a, b])
        .add_fan_in_edges([a, b], Texts("j"))
        .build()
    )
    with pytest.raises(StepFailed, match=r"fan-in from a, b into 'j' collected a list of int") as info:
        await wf.run("x")
    assert info.value.executor_id == "j" and info.value.superstep == 2


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_max_supersteps_must_be_a_positive_whole_number(bad):
    shown = re.escape(
        f"max_supersteps={bad!r} ({type(bad).__name__}) is not accepted; give a whole number of at least 1"
    )
    with pytest.raises(ValueError, match=shown):
        WorkflowBuilder(start_executor=Relay("a"), max_supersteps=bad)
    wf = WorkflowBuilder(start_executor=Relay("a")).build()
    with pytest.raises(ValueError, match="max_supersteps"):
        wf.run("x", max_supersteps=bad)


async def test_a_cycle_that_never_ends_hits_the_superstep_limit():
    a, b = Loop("a"), Loop("b")
    wf = WorkflowBuilder(start_executor=a, max_supersteps=7).add_edge(a, b).add_edge(b, a).build()
    with pytest.raises(SuperstepLimitExceeded, match=r"after 7 supersteps \(to b\)") as info:
        await wf.run(0)
    assert info.value.limit == 7 and info.value.active == ("b",)
    assert info.value.result.status == "failed" and len(info.value.result.trace) == 7


async def test_events_of_a_run_in_order():
    a, b = Relay("a"), Relay("b")
    result = await WorkflowBuilder(start_executor=a, output_from=["b"]).add_edge(a, b).build().run("x")
    assert [e.type for e in result.events] == [
        "started",
        "superstep_started",
        "executor_invoked",
        "intermediate",  # what a yields is not an output of this run (output_from), still an event
        "executor_completed",
        "superstep_completed",
        "superstep_started",
        "executor_invoked",
        "output",
        "executor_completed",
        "superstep_completed",
        "completed",
    ]


async def test_an_executor_that_raises_fails_the_run_and_leaves_nothing_behind():
    first = RecordingAgent("first")
    broken = RecordingAgent("broken", fail=ValueError("model down"))
    ex_first = AgentExecutor(first)
    wf = WorkflowBuilder(start_executor=ex_first).add_edge(ex_first, broken).build()
    before = (ex_first.conversation, ex_first.cache)
    events = []
    with pytest.raises(StepFailed) as info:
        async for event in wf.run("hello", stream=True):
            events.append(event.type)
    err = info.value
    assert err.executor_id == "broken" and err.superstep == 2
    assert "executor 'broken' failed in superstep 2" in str(err) and "ValueError: model down" in str(err)
    assert isinstance(err.__cause__, ValueError)
    assert events[-2:] == ["executor_failed", "failed"]
    assert (ex_first.conversation, ex_first.cache) == before  # the successful first hop was undone
    assert err.result.trace.last("broken").status == "failed"
    # the next run starts clean
    broken.fail = None
    result = await wf.run("again")
    assert [len(m) for m in broken.seen] == [2, 2]
    assert result.status == "completed"


async def test_when_one_executor_fails_its_siblings_are_cancelled():
    gate, ends = Gate(), []  # the gate is never opened: the slow sibling can only end by being cancelled

    class Slow(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
            try:
                await gate.reached()
                ends.append("finished")
            except asyncio.CancelledError:
                ends.append("cancelled")
                raise

    class Boom(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
            await gate.started.wait()  # fail only once the sibling is running
            raise RuntimeError("boom")

    start = Relay("start")
    wf = WorkflowBuilder(start_executor=start).add_fan_out_edges(start, [Slow("slow"), Boom("boom")]).build()
    with pytest.raises(StepFailed, match="boom"):
        await asyncio.wait_for(wf.run("x"), 5)  # a safety net: without the cancellation the run would never end
    assert ends == ["cancelled"]


async def test_one_run_at_a_time():
    gate = Gate()
    wf = WorkflowBuilder(start_executor=Relay("a", gate=gate)).build()
    first = asyncio.ensure_future(wf.run("x"))
    await gate.started.wait()  # the first run is inside its executor
    with pytest.raises(WorkflowBusyError, match="already running"):
        await wf.run("y")
    gate.open()
    assert (await first).get_outputs() == ["x>a"]
    assert (await wf.run("z")).get_outputs() == ["z>a"]  # free again


async def test_streaming_yields_updates_as_output_events_and_sets_result():
    agent = RecordingAgent("talker")
    wf = WorkflowBuilder(start_executor=agent).build()
    stream = wf.run("hi", stream=True)
    outputs = [e.data async for e in stream if e.type == "output"]
    assert all(isinstance(u, AgentResponseUpdate) for u in outputs)
    assert "".join(u.text for u in outputs) == "talker saw 1"
    assert stream.result is not None and stream.result.trace.last("talker").response.text == "talker saw 1"
    assert [e async for e in stream] == []  # exhausted


async def test_the_stream_is_an_async_iterator():
    stream = WorkflowBuilder(start_executor=Relay("a")).build().run("x", stream=True)
    assert (await anext(stream)).type == "started"
    assert (await anext(stream)).type == "superstep_started"
    await stream.aclose()


async def test_leaving_a_stream_early_cancels_the_run_rolls_back_and_frees_the_workflow():
    gate, ends = Gate(), []
    gates = [gate]  # the first run stops at a gate that is never opened; later runs go straight on

    class Stuck(Executor):
        @handler
        async def on(self, response: AgentExecutorResponse, ctx: WorkflowContext) -> None:
            if gates:
                try:
                    await gates.pop().reached()
                except asyncio.CancelledError:
                    ends.append("cancelled")
                    raise

    ex = AgentExecutor(RecordingAgent("first"))
    wf = WorkflowBuilder(start_executor=ex).add_edge(ex, Stuck("slow")).build()
    async with wf.run("x", stream=True) as stream:
        async for event in stream:
            if event.type == "executor_invoked" and event.executor_id == "slow":
                break
        await asyncio.wait_for(gate.started.wait(), 5)  # the slow executor is running
        with pytest.raises(WorkflowBusyError, match="already running"):
            await wf.run("meanwhile")  # still busy while the stream is open
    assert ends == ["cancelled"]
    assert len(ex.conversation) == 0  # the first hop of the cancelled run was undone
    again = await asyncio.wait_for(wf.run("again"), 5)  # free again: the next run is accepted and completes
    assert again.status == "completed" and ex.conversation.to_list()[0].text == "again"


def test_run_sync_in_a_plain_script():
    wf = WorkflowBuilder(start_executor=Relay("a")).build()
    assert wf.run_sync("x").get_outputs() == ["x>a"]


async def test_run_sync_inside_a_running_loop():
    code = textwrap.dedent(
        """
        import asyncio
        from agent_nb import WorkflowBuilder, ChatAgent, EchoChatClient
        wf = WorkflowBuilder(start_executor=ChatAgent(EchoChatClient(), name="e")).build()
        async def cell():  # what a notebook cell does: sync call inside the kernel's running loop
            return wf.run_sync("inside").get_outputs()[0].text
        print(asyncio.run(cell()))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "inside"


async def test_run_needs_an_input_and_run_sync_cannot_stream():
    wf = WorkflowBuilder(start_executor=Relay("a")).build()
    with pytest.raises(UsageError, match="needs at least one input"):
        wf.run()
    with pytest.raises(UsageError, match="cannot stream"):
        wf.run_sync("x", stream=True)


async def test_per_executor_kwargs_reach_the_right_agent():
    a, b = RecordingAgent("a"), RecordingAgent("b")
    wf = WorkflowBuilder(start_executor=a).add_edge(a, b).build()
    await wf.run(
        "q",
        client_kwargs={"*": {"temperature": 0, "seed": 1}, "b": {"temperature": 1}},
        function_invocation_kwargs={"a": {"user_id": "u1"}},
    )
    assert a.calls[0]["client_kwargs"] == {"temperature": 0, "seed": 1}
    assert a.calls[0]["function_invocation_kwargs"] == {"user_id": "u1"}
    assert b.calls[0]["client_kwargs"] == {"temperature": 1, "seed": 1}
    assert "function_invocation_kwargs" not in b.calls[0]
    await wf.run("q")
    assert "client_kwargs" not in a.calls[1]  # nothing passed when a run sets nothing


async def test_unknown_kwargs_key_suggests_the_executor():
    wf = WorkflowBuilder(start_executor=RecordingAgent("writer")).build()
    with pytest.raises(UsageError, match=r"no executor 'wrtier'.*did you mean 'writer'\?.*'\*'"):
        wf.run("q", client_kwargs={"wrtier": {}})
    with pytest.raises(UsageError, match="must be a dict"):
        wf.run("q", client_kwargs={"writer": 3})


async def test_output_from_limits_outputs_but_not_the_trace():
    a, b = RecordingAgent("a"), RecordingAgent("b")
    result = await WorkflowBuilder(start_executor=a, output_from=[b]).add_edge(a, b).build().run("q")
    assert [o.text for o in result.get_outputs()] == ["b saw 2"]
    assert result.trace.last("a").outputs[0].text == "a saw 1"
    assert result.text == "b saw 2"


async def test_concurrent_streaming_agents_interleave_their_updates():
    from agent_nb import ChatAgent, MirrorChatClient

    start = Relay("start")
    left, right = (ChatAgent(MirrorChatClient(), name=n) for n in ("left", "right"))
    wf = (
        WorkflowBuilder(start_executor=start, output_from=["left", "right"])
        .add_fan_out_edges(start, [left, right])
        .build()
    )
    order = [e.executor_id async for e in wf.run("x", stream=True) if e.type == "output"]
    assert order[:4] == ["left", "right", "left", "right"]  # tokens arrive as produced, not agent by agent


async def test_a_condition_only_sees_messages_its_target_can_take():
    class Mixed(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[str | int]) -> None:
            await ctx.send_message(7)
            await ctx.send_message(text)

    seen = []

    def short(text: str) -> bool:
        seen.append(text)
        return len(text) < 5

    m = Mixed("m")
    wf = (
        WorkflowBuilder(start_executor=m, output_from=["r"])
        .add_edge(m, Relay("r"), short)
        .add_edge(m, Loop("n"))
        .build()
    )
    result = await wf.run("hey")
    assert seen == ["hey"] and result.get_outputs() == ["hey>r"]
    assert [s.targets for s in result.trace.last("m").sent] == [("n",), ("r",)]


class Counter(Executor):
    """Counts the texts it has seen in the shared state, and reads what the other counter wrote."""

    def __init__(self, id, seen=None):
        super().__init__(id)
        self.seen = seen if seen is not None else []

    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        as_it_stood = {k: ctx.get_state(k) for k in ("a", "b", "note")}  # before this invocation's own update
        self.seen.append((ctx.superstep, {k: v for k, v in as_it_stood.items() if v is not None}))
        ctx.set_state(self.id, ctx.get_state(self.id, 0) + 1)
        assert ctx.get_state(self.id) >= 1  # its own update at once
        if text == "boom" and ctx.superstep == 2:
            raise RuntimeError("boom")
        if ctx.superstep < 3:
            await ctx.send_message(text)


async def test_shared_state_starts_from_the_run_argument_and_lands_after_each_superstep():
    a, b = Counter("a"), Counter("b")
    workflow = WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(b, a).build()
    start = {"a": 10, "note": "kept"}
    result = await workflow.run("x", state=start)
    assert dict(result.state) == {"a": 12, "b": 1, "note": "kept"}
    assert start == {"a": 10, "note": "kept"}  # the mapping passed in is never changed
    assert b.seen[0] == (2, {"a": 11, "note": "kept"})  # a's update is visible in the next superstep
    with pytest.raises(TypeError):
        result.state["a"] = 0  # read-only


async def test_a_failed_run_keeps_none_of_its_state_updates():
    a, b = Counter("a"), Counter("b")
    workflow = WorkflowBuilder(start_executor=a).add_edge(a, b).build()
    with pytest.raises(StepFailed) as caught:
        await workflow.run("boom", state={"a": 1})  # a's update landed after superstep 1; b fails in 2
    assert b.seen[0][1] == {"a": 2}
    assert dict(caught.value.result.state) == {"a": 1}


@pytest.mark.parametrize(("argument", "bad"), [("client_kwargs", ["temperature"]), ("state", "k=v")])
def test_per_run_mappings_that_are_not_mappings_are_refused_before_anything_runs(argument, bad):
    agent = RecordingAgent("a")
    wf = WorkflowBuilder(start_executor=agent).build()
    with pytest.raises(TypeError, match=rf"workflow '[^']*': run\(\): {argument}=.* is not accepted; give a dict"):
        wf.run("x", **{argument: bad})
    assert agent.calls == []


async def test_an_executor_records_into_its_trace_record_and_only_the_fields_that_are_its_own() -> None:
    from agent_nb import ArgumentError, Message
    from agent_nb.trace import ContextSnapshot

    class Records(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[str, str]) -> None:
            ctx.record_context({"kind": "notes", "state": {"seen": text}}, given=(Message("user", text),))
            ctx.warn("a little off")
            if text == "take the index":
                ctx.record_context(index=99)  # the runner's: numbered in the order invocations started
            await ctx.yield_output(text)

    workflow = WorkflowBuilder(start_executor=Records("r")).build()
    result = await workflow.run("hi")
    (snapshot,) = result.trace
    assert type(snapshot) is ContextSnapshot
    assert (snapshot.kind, snapshot.state, snapshot.given[0].text) == ("notes", {"seen": "hi"}, "hi")
    assert (snapshot.warnings, snapshot.outputs, snapshot.index, snapshot.received) == (
        ("a little off",),
        ("hi",),
        0,
        "hi",
    )

    with pytest.raises(Exception) as failed:
        await workflow.run("take the index")
    assert isinstance(failed.value.__cause__, ArgumentError)
    assert "record_context()" in str(failed.value.__cause__) and "index" in str(failed.value.__cause__)


async def test_a_run_is_watched_by_the_observers_registered_when_it_starts() -> None:
    from agent_nb.workflow.observers import observe

    seen: list[tuple[str, str]] = []
    gate = Gate()
    workflow = WorkflowBuilder(start_executor=Relay("a", gate=gate)).add_edge("a", Relay("b")).build()
    stream = workflow.run("x", stream=True)
    first = await stream.__anext__()
    await gate.started.wait()  # the run is under way, unwatched
    stop = observe(lambda run, event: seen.append((run.workflow.name, event.type)))
    try:
        gate.open()
        rest = [e async for e in stream]
        assert first.type == "started" and rest[-1].type == "completed" and seen == []  # not half a run
        watched = await workflow.run("y")  # started now: watched from its first event to its last
        assert seen == [(workflow.name, e.type) for e in watched.events]
    finally:
        stop()
    await workflow.run("z")
    assert len(seen) == len(watched.events)  # stopped
