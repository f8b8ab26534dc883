"""A workflow inside a workflow (``as_agent``, ``WorkflowExecutor``): it runs whole, and the trace nests."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from doubles import RecordingAgent

from agent_nb import (
    AgentExecutor,
    ChatAgent,
    ConcurrentBuilder,
    Executor,
    Message,
    MirrorChatClient,
    ScriptedChatClient,
    SequentialBuilder,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    tool,
)
from agent_nb.display.context import trace_html
from agent_nb.display.graph import graph_of
from agent_nb.errors import StepFailed
from agent_nb.messages import FunctionCallContent
from agent_nb.trace.codec import dump_trace, load_trace
from agent_nb.workflow import (
    FileCheckpointStorage,
    GroupChatBuilder,
    HandoffBuilder,
    RequestResponse,
    WorkflowAgent,
    WorkflowExecutor,
)
from agent_nb.workflow.filters import user_messages


def research() -> tuple[object, RecordingAgent, RecordingAgent]:
    searcher, summarizer = RecordingAgent("searcher"), RecordingAgent("summarizer")
    return SequentialBuilder([searcher, summarizer], name="research").build(), searcher, summarizer


def planner_then_research() -> Any:
    """A planner, then the research workflow as one node (its id has markup, for the views' escaping)."""
    inner, _, _ = research()
    return (
        WorkflowBuilder(start_executor=RecordingAgent("planner"))
        .add_edge("planner", WorkflowExecutor(inner, id="research <b>"))
        .build()
    )


async def test_a_workflow_used_as_an_agent_runs_whole_and_its_trace_nests_in_the_parents() -> None:
    inner, searcher, _ = research()
    planner, writer = RecordingAgent("planner"), RecordingAgent("writer")
    agent = inner.as_agent()
    parent = WorkflowBuilder(start_executor=planner).add_chain([planner, agent, writer]).build()
    assert isinstance(parent.executors["research"], WorkflowExecutor)
    result = await parent.run("Plan a rainy Sunday")
    assert [m.text for m in searcher.seen[0]] == ["Plan a rainy Sunday", "planner saw 1"]
    assert [(m.author_name, m.text) for m in writer.seen[0]][-1] == ("summarizer", "summarizer saw 3")
    node = result.trace.last("research")
    assert node.kind == "workflow" and [s.executor_id for s in node.inner] == ["searcher", "summarizer"]
    assert len(node.inner.last("summarizer").given) == 3  # what the sub-workflow's own agents were given
    report = str(result.trace)
    assert "ran       its own workflow: 2 invocations (searcher, summarizer)" in report
    assert "    │ [2] summarizer · agent · context_mode=full · answered" in report


async def test_a_stored_trace_and_the_run_view_keep_the_sub_workflows_run() -> None:
    parent = planner_then_research()
    result = await parent.run("q")
    again = load_trace(dump_trace(result.trace))
    assert str(again) == str(result.trace) and again.last("research <b>").inner is not None
    (_, node) = result.trace.to_dict()["snapshots"]
    assert [s["executor_id"] for s in node["inner"]["snapshots"]] == ["searcher", "summarizer"]
    bundle = result._repr_mimebundle_()
    html = bundle[0]["text/html"] if isinstance(bundle, tuple) else bundle["text/html"]
    assert "<summary>its own workflow: 2 invocations (searcher, summarizer)</summary>" in html
    assert 'data-executor="summarizer"' in html and "research <b>" not in html  # escaped
    assert "workflow · 2 executors" in parent.to_mermaid()


async def test_as_agent_answers_with_the_workflows_output_and_keeps_the_last_result() -> None:
    inner, _, _ = research()
    agent = inner.as_agent(name="researcher", description="Finds and sums up")
    assert isinstance(agent, WorkflowAgent) and agent.name == "researcher"
    response = await agent.run("q")
    assert response.text == "summarizer saw 2" and agent.last_result is not None
    assert [s.executor_id for s in agent.last_result.trace] == ["searcher", "summarizer"]
    updates = [u async for u in agent.run([Message("user", "q")], stream=True)]
    assert "".join(u.text for u in updates) == "summarizer saw 2"


async def test_a_failed_parent_run_puts_the_sub_workflow_back_as_it_was() -> None:
    agent = ChatAgent(MirrorChatClient(), name="searcher")
    inner = SequentialBuilder([agent], name="research").build()
    before = inner.executors["searcher"].snapshot_state()
    parent = (
        WorkflowBuilder(start_executor=RecordingAgent("planner"))
        .add_chain(["planner", WorkflowExecutor(inner), RecordingAgent("writer", fail=RuntimeError("down"))])
        .build()
    )
    with pytest.raises(StepFailed, match="down"):
        await parent.run("q")
    assert inner.executors["searcher"].snapshot_state()["conversation"] == before["conversation"]


@tool(requires_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return "refunded"


def desk(answered: bool = False) -> object:
    call = FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7"})
    script = ["Refunded."] if answered else [Message("assistant", [call]), "Refunded."]
    support = ChatAgent(ScriptedChatClient(script), name="support", tools=[refund])
    return WorkflowBuilder(start_executor=AgentExecutor(support), name="desk").build()


async def test_a_sub_workflows_request_becomes_the_parents_and_its_answer_lets_the_sub_workflow_go_on() -> None:
    writer = RecordingAgent("writer")
    parent = WorkflowBuilder(start_executor=WorkflowExecutor(desk())).add_edge("desk", writer).build()
    first = await parent.run("Refund A7")
    (request,) = first.pending_requests
    assert first.status == "waiting" and request.executor_id == "desk" and "refund" in request.prompt
    assert writer.calls == [] and first.trace.last("desk").inner.last("support").status == "waiting"
    done = await parent.run(responses={request.request_id: True})
    assert done.status == "completed"
    seen = [m.text for m in writer.seen[0]]
    assert seen[0] == "Refund A7" and seen[-1] == "Refunded."  # the sub-workflow's answer, its tool work handed over
    assert done.trace.last("desk").inner.last("support").response.text == "Refunded."


async def test_a_failed_answering_run_leaves_the_sub_workflow_waiting_as_it_was() -> None:
    parent = (
        WorkflowBuilder(start_executor=WorkflowExecutor(desk()))
        .add_edge("desk", RecordingAgent("writer", fail=RuntimeError("down")))
        .build()
    )
    (request,) = (await parent.run("Refund A7")).pending_requests
    inner = parent.executors["desk"].workflow
    with pytest.raises(StepFailed, match="down"):
        await parent.run(responses={request.request_id: True})
    assert [r.executor_id for r in inner.pending_requests] == ["support"]  # put back, as the parent's run was


async def test_a_workflow_used_as_an_agent_cannot_wait_and_says_what_to_do() -> None:
    parent = WorkflowBuilder(start_executor=AgentExecutor(desk().as_agent())).build()
    with pytest.raises(
        StepFailed, match=r"sub-workflow 'desk' stopped to wait for answers .*use the workflow as a node"
    ):
        await parent.run("Refund A7")


async def test_a_waiting_sub_workflow_is_checkpointed_and_answered_in_a_new_process(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)

    def build(answered: bool, writer: RecordingAgent) -> object:
        start = WorkflowExecutor(desk(answered))
        return WorkflowBuilder(start_executor=start, checkpoint_storage=storage).add_edge("desk", writer).build()

    first = await build(False, RecordingAgent("writer")).run("Refund A7")
    assert first.status == "waiting" and first.checkpoint_id is not None
    (request,) = first.pending_requests
    writer = RecordingAgent("writer")
    again = build(True, writer)  # built anew, as in another process: only the storage is shared
    done = await again.run(checkpoint_id=first.checkpoint_id, responses={request.request_id: True})
    assert done.status == "completed"
    support = done.trace.last("desk").inner.last("support")
    results = [c.result for m in support.response.messages for c in m.contents if c.type == "function_result"]
    assert results == ["refunded"] and support.response.text == "Refunded."  # the approved call ran, then
    assert [m.text for m in writer.seen[0]][-1] == "Refunded."


async def test_an_experiment_over_a_workflow_used_as_an_agent_measures_its_own_agents() -> None:
    from agent_nb.experiments import Experiment, scorers

    def build(config: dict[str, object]) -> object:
        return research()[0].as_agent()

    result = await Experiment(build, inputs=["a", "b"], scorers=[scorers.contains("saw")], name="nested").run(
        progress=False
    )
    (cell, _) = list(result.cells())
    assert set(cell.executors) == {"searcher", "summarizer"} and cell.scores == {"contains('saw')": True}


async def test_the_graph_draws_a_sub_workflow_as_a_box_holding_its_own_graph_and_run() -> None:
    from agent_nb.display.graph import NEST_HEAD, NODE_H, graph_of, graph_svg, layout
    from agent_nb.display.plots import graph_figure

    inner, _, _ = research()
    planner, writer = RecordingAgent("planner"), RecordingAgent("writer")
    parent = WorkflowBuilder(start_executor=planner).add_chain([planner, inner.as_agent(), writer]).build()
    assert graph_of(parent).node("research").inner.nodes[0].status is None  # no run: no statuses
    result = await parent.run("q")
    graph = graph_of(parent, result.trace)
    box = graph.node("research")
    assert [(n.id, n.status, n.start) for n in box.inner.nodes] == [
        ("searcher", "ran", True),
        ("summarizer", "ran", False),
    ]
    for direction in ("TB", "LR"):
        lay = layout(graph, direction)
        (x, y), (w, h) = lay.pos["research"], lay.size["research"]
        sub = lay.inner["research"]
        left, top = x + (w - sub.width) / 2, y + NEST_HEAD  # where the box draws its own graph
        for n in ("searcher", "summarizer"):
            (ix, iy), (iw, ih) = sub.pos[n], sub.size[n]
            assert x < left + ix and left + ix + iw < x + w and y + NEST_HEAD <= top + iy and top + iy + ih < y + h
        after = lay.pos["writer"]
        assert (after[1] >= y + h) if direction == "TB" else (after[0] >= x + w)  # the next node clears the box
    assert layout(graph).size["research"][1] > 2 * NODE_H  # two layers of its own
    svg = graph_svg(graph)
    nested = svg[svg.index('<g class="inner"') :]
    assert "searcher" in nested and "summarizer" in nested and "planner" not in nested
    assert 'class="n ran nest"' in svg
    mermaid = parent.to_mermaid()
    assert 'subgraph n1["research<br/>' in mermaid and "n1_0 --> n1_1" in mermaid and "n0 --> n1" in mermaid
    texts = {t.get_text() for t in graph_figure(graph).axes[0].texts}
    assert {"research", "searcher", "summarizer"} <= texts


@dataclass(frozen=True)
class Draft:
    text: str


@dataclass(frozen=True)
class Verdict:
    publish: bool
    note: str = ""


class Editor(Executor):
    """Asks a person for a verdict on a draft: a request of its own types, which only its workflow names."""

    @handler
    async def review(self, messages: list[Message], ctx: WorkflowContext[Draft, Verdict]) -> None:
        ctx.request_info(Draft(messages[-1].text), Verdict)

    @handler
    async def on_answer(self, answer: RequestResponse, ctx: WorkflowContext[Draft, Verdict]) -> None:
        await ctx.yield_output(answer.value)


async def test_a_sub_workflows_request_of_its_own_types_is_answered_from_a_checkpoint_in_a_new_process(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)

    def build() -> object:
        inner = WorkflowBuilder(start_executor=Editor("editor"), name="editing").build()
        return WorkflowBuilder(start_executor=WorkflowExecutor(inner), checkpoint_storage=storage).build()

    first = await build().run("A line on rain")
    (request,) = first.pending_requests
    assert request.data == Draft("A line on rain") and request.response_type is Verdict
    done = await build().run(checkpoint_id=first.checkpoint_id, responses={request.request_id: Verdict(True, "lovely")})
    assert done.status == "completed" and done.get_outputs() == [Verdict(True, "lovely")]


def triage_to(name: str) -> ChatAgent:
    call = FunctionCallContent(call_id="h1", name=f"handoff_to_{name}", arguments={})
    return ChatAgent(ScriptedChatClient([Message("assistant", [call])]), name="triage")


BUILDERS = {
    "workflow": lambda sub: WorkflowBuilder(start_executor=(p := RecordingAgent("planner"))).add_edge(p, sub).build(),
    "sequential": lambda sub: SequentialBuilder([RecordingAgent("planner"), sub]).build(),
    "concurrent": lambda sub: ConcurrentBuilder([sub, RecordingAgent("critic")]).build(),
    "group chat": lambda sub: GroupChatBuilder([sub, RecordingAgent("critic")], max_rounds=2).build(),
    "hand-off": lambda sub: HandoffBuilder(triage_to("desk"), [sub]).build(),
}


@pytest.mark.parametrize("builder", BUILDERS)
async def test_every_builder_nests_a_workflow_used_as_an_agent_and_passes_its_approvals_through(builder: str) -> None:
    wf = BUILDERS[builder](desk().as_agent())
    assert isinstance(wf.executors["desk"], WorkflowExecutor)
    assert "subgraph n" in wf.to_mermaid() and "support" in wf.to_mermaid()  # drawn as a box holding its graph
    first = await wf.run("Refund A7")
    (request,) = first.pending_requests  # the sub-workflow's approval, asked by the parent's run
    assert first.status == "waiting" and request.executor_id == "desk" and "refund" in request.prompt
    assert first.trace.last("desk").inner.last("support").status == "waiting"
    done = await wf.run(responses={request.request_id: True})
    assert done.status == "completed"
    node = done.trace.last("desk")
    assert node.kind == "workflow" and node.inner.last("support").response.text == "Refunded."
    box = graph_of(wf, done.trace).node("desk")
    assert box.status == "ran" and [(n.id, n.status) for n in box.inner.nodes] == [("support", "ran")]
    assert "Refunded." in str(done.trace)


async def test_a_nested_workflow_reads_what_it_is_handed_through_its_context_mode() -> None:
    inner, searcher, _ = research()
    planner, critic = RecordingAgent("planner"), RecordingAgent("critic")
    chain = SequentialBuilder([planner, inner.as_agent()], chain_only_agent_responses=True).build()
    assert chain.executors["research"].context_mode == "last_agent"
    result = await chain.run("Plan a rainy Sunday")
    assert [m.text for m in searcher.seen[0]] == ["planner saw 1"]  # the planner's reply only
    assert [m.text for m in result.trace.last("research").dropped] == ["Plan a rainy Sunday"]

    inner, searcher, _ = research()
    recent = WorkflowExecutor(inner, context_mode="custom", context_filter=user_messages)
    chat = GroupChatBuilder([critic, recent], max_rounds=2).build()
    result = await chat.run("Plan a rainy Sunday")
    assert [m.text for m in searcher.seen[0]] == ["Plan a rainy Sunday"]  # its filter kept the user's words
    assert result.trace.last("research").mode == "custom(user_messages)"
    assert "research<br/><small>workflow · 2 executors · custom(user_messages)</small>" in chat.to_mermaid()

    inner, searcher, _ = research()
    await (
        HandoffBuilder(triage_to("research"), [inner.as_agent()], context="since_handoff")
        .build()
        .run([Message("user", "Hello"), Message("assistant", "Hi", author_name="triage"), Message("user", "Rain?")])
    )
    assert [m.text for m in searcher.seen[0]] == ["Rain?"]  # the hand-off's setting applies to the sub-workflow


async def test_a_workflow_used_as_the_concurrent_aggregator_reads_every_answer_and_nests() -> None:
    inner, searcher, _ = research()
    wf = ConcurrentBuilder([RecordingAgent("analyst"), RecordingAgent("poet")], aggregator=inner.as_agent()).build()
    result = await wf.run("Plan a rainy Sunday")
    assert [m.text for m in searcher.seen[0]] == ["Plan a rainy Sunday", "analyst saw 1", "poet saw 1"]
    assert result.trace.last("research").inner is not None and result.text == "summarizer saw 4"


async def test_the_run_view_opens_a_sub_workflows_graph_with_its_run_above_its_columns() -> None:
    parent = planner_then_research()
    result = await parent.run("q")
    html = result._repr_mimebundle_()["text/html"]
    block = html[html.index('<details class="inner">') :]
    block = block[: block.index("</details>")]
    graph, columns = block.split('<div class="cols">', 1)
    assert 'aria-label="workflow research: 2 executors, 1 edges, start searcher"' in graph  # its own graph
    live = graph[graph.index('<div class="graph-live" style="display:none"><svg') :]  # shown where trusted
    still = re.search(
        r'<img class="graph-still" alt="workflow research: searcher → summarizer"[^>]*base64,([^"]+)"', graph
    )
    assert still is not None  # and as a picture, which an untrusted notebook keeps
    assert base64.b64decode(still.group(1)).decode() in live  # the same picture
    assert live.count('class="n ran"') + live.count('class="n start ran"') == 2  # this invocation's statuses
    assert 'data-executor="searcher"' in columns and 'data-executor="summarizer"' in columns
    assert "research <b>" not in html  # escaped

    stored = load_trace(dump_trace(result.trace))  # no workflow to draw: the columns only
    alone = trace_html(stored)
    assert '<details class="inner">' in alone and '<div class="graph-live"' not in alone
