import pytest
from doubles import RecordingAgent

from agent_nb import (
    AgentExecutor,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowValidationError,
    handler,
)


class Text(Executor):
    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)


class Number(Executor):
    @handler
    async def on(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)


def build_error(builder) -> WorkflowValidationError:
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    return info.value


def test_agents_are_wrapped_once_per_instance():
    a, b = RecordingAgent("a"), RecordingAgent("b")
    wf = WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(b, a).build()
    assert isinstance(wf.executors["a"], AgentExecutor)
    assert list(wf.executors) == ["a", "b"]
    assert wf.executors["a"].agent is a


def test_duplicate_ids_are_named():
    err = build_error(WorkflowBuilder(start_executor=Text("x")).add_edge("x", Text("x")))
    assert "2 different executors share the id 'x'" in str(err)
    assert err.executor_ids == ("x",)


def test_two_agents_with_the_same_name_collide():
    err = build_error(WorkflowBuilder(start_executor=RecordingAgent("a")).add_edge("a", RecordingAgent("a")))
    assert "share the id 'a'" in str(err)


def test_unknown_reference_suggests_a_close_id():
    err = build_error(WorkflowBuilder(start_executor=Text("writer")).add_edge("writer", "writter"))
    assert "'writter' is used as an executor id but no executor has it; did you mean 'writer'?" in str(err)


def test_start_executor_missing_or_not_in_graph():
    assert "no start executor" in str(build_error(WorkflowBuilder().add_edge(Text("a"), Text("b"))))
    err = build_error(WorkflowBuilder(start_executor=Text("lonely")).add_edge(Text("a"), Text("b")))
    assert "start executor 'lonely' is not in the graph" in str(err)
    assert "lonely" in err.executor_ids


def test_unreachable_executors_are_named():
    a, b, c = Text("a"), Text("b"), Text("c")
    err = build_error(WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(c, b))
    assert "'c' cannot be reached from the start executor 'a'" in str(err)
    assert err.executor_ids == ("c",)


def test_duplicate_edges():
    a, b = Text("a"), Text("b")
    err = build_error(WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(a, b))
    assert "duplicate edge a → b" in str(err)
    err = build_error(WorkflowBuilder(start_executor=a).add_fan_out_edges(a, [b, b]))
    assert "duplicate edge a → b" in str(err)


def test_edges_whose_types_cannot_match():
    a, n = Text("a"), Number("n")
    err = build_error(WorkflowBuilder(start_executor=a).add_edge(a, n))
    assert "edge a → n: 'a' sends str but 'n' accepts only int" in str(err)
    assert err.executor_ids == ("a", "n")


def test_agent_executor_types_are_checked_too():
    agent = RecordingAgent("agent")
    err = build_error(WorkflowBuilder(start_executor=agent).add_edge(agent, Number("n")))
    assert "'agent' sends AgentExecutorResponse but 'n' accepts only int" in str(err)
    WorkflowBuilder(start_executor=Text("t")).add_edge("t", agent).build()  # str into an agent is fine


def test_all_problems_are_reported_at_once():
    a = Text("a")
    err = build_error(WorkflowBuilder(start_executor=a).add_edge(a, Number("n")).add_edge(Text("z"), Text("y")))
    text = str(err)
    assert "'z' cannot be reached" in text and "'y' cannot be reached" in text and "'a' sends str" in text


def test_a_single_executor_is_a_graph():
    wf = WorkflowBuilder(start_executor=Text("only")).build()
    assert wf.start_executor_id == "only" and wf.edges == ()


def test_superstep_limit_default_grows_with_the_graph():
    nodes = [Text(f"n{i}") for i in range(150)]
    wf = WorkflowBuilder(start_executor=nodes[0]).add_chain(nodes).build()
    assert wf.max_supersteps == 151
    assert WorkflowBuilder(start_executor=Text("x")).build().max_supersteps == 100


def test_nodes_must_be_executors_agents_or_ids():
    with pytest.raises(TypeError, match=r"node=42 \(int\) is not accepted; a node is an Executor, an agent"):
        WorkflowBuilder(start_executor=42)  # type: ignore[arg-type]


def test_edges_record_kind_and_label():
    a, b, c, d = Text("a"), Text("b"), Text("c"), Text("d")

    def is_long(text: str) -> bool:
        return len(text) > 3

    wf = (
        WorkflowBuilder(start_executor=a)
        .add_edge(a, b, is_long)
        .add_fan_out_edges(b, [c, d])
        .add_fan_in_edges([c, d], Collect("e"))
        .build()
    )
    kinds = [(e.source, e.target, e.kind, e.label) for e in wf.edges]
    assert kinds == [
        ("a", "b", "direct", "is_long"),
        ("b", "c", "fan_out", None),
        ("b", "d", "fan_out", None),
        ("c", "e", "fan_in", None),
        ("d", "e", "fan_in", None),
    ]


class Collect(Executor):
    @handler
    async def on(self, items: list[str], ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output("+".join(items))


def test_fan_in_target_must_take_a_list():
    a, b, c = Text("a"), Text("b"), Text("c")
    err = build_error(
        WorkflowBuilder(start_executor=a).add_fan_out_edges(a, [b, c]).add_fan_in_edges([b, c], Text("t"))
    )
    assert "'b' sends list[str] but 't' accepts only str" in str(err)
