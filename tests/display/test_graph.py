from agent_nb import AgentExecutor, ChatAgent, Executor, MirrorChatClient, WorkflowBuilder, WorkflowContext, handler
from agent_nb.demo import QUESTION, build_demo
from agent_nb.display import graph_of, graph_svg, to_mermaid
from agent_nb.display.graph import NODE_H, NODE_W, layout
from agent_nb.workflow.filters import user_messages

MIRROR = MirrorChatClient()


def agents(*names):
    return [AgentExecutor(ChatAgent(MIRROR, name=n)) for n in names]


def support_workflow():
    triage, billing, tech, summary, review = agents("triage", "billing", "tech", "summary", "review")
    return (
        WorkflowBuilder(start_executor=triage, name="support")
        .add_fan_out_edges(triage, [billing, tech])
        .add_fan_in_edges([billing, tech], summary)
        .add_edge(summary, review)
        .add_edge(review, summary, lambda r: len(r.full_conversation) < 6, label="needs work")
        .build()
    )


def test_layers_follow_the_longest_path_and_cycles_are_broken():
    graph = graph_of(support_workflow())
    lay = layout(graph)
    rows = {nid: y for nid, (x, y) in lay.pos.items()}
    assert rows["triage"] < rows["billing"] == rows["tech"] < rows["summary"] < rows["review"]
    assert lay.back == {("review", "summary")}


def test_no_two_nodes_overlap_even_with_50_executors():
    chain = agents(*[f"a{i:02d}" for i in range(25)])
    wide = agents(*[f"w{i:02d}" for i in range(24)])
    builder = WorkflowBuilder(start_executor=chain[0]).add_chain(chain).add_fan_out_edges(chain[-1], wide)
    lay = layout(graph_of(builder.add_fan_in_edges(wide, agents("end")[0]).build()))
    boxes = list(lay.pos.values())
    assert len(boxes) == 50
    for i, (x1, y1) in enumerate(boxes):
        for x2, y2 in boxes[i + 1 :]:
            assert abs(x1 - x2) >= NODE_W or abs(y1 - y2) >= NODE_H
    assert all(0 <= x <= lay.width - NODE_W and 0 <= y <= lay.height - NODE_H for x, y in boxes)


def test_svg_marks_start_modes_conditions_and_statuses():
    wf = build_demo()
    svg = graph_svg(graph_of(wf))
    assert svg.startswith('<svg class="anb-graph"') and svg.count('<g class="n') == 3
    assert 'class="n start"' in svg and "agent · custom(user_messages)" in svg and "agent · last_agent" in svg
    support = graph_svg(graph_of(support_workflow()))
    assert support.count('stroke-dasharray="5 4"') == 1 and ">needs work<" in support and ">all of<" in support


async def test_a_run_colours_each_executor_by_what_it_did():
    wf = build_demo()
    result = await wf.run(QUESTION)
    statuses = [n.status for n in graph_of(wf, result.trace).nodes]
    assert statuses == ["ran", "ran", "ran"]
    fresh = graph_of(build_demo(), None)
    assert [n.status for n in fresh.nodes] == [None, None, None]


async def test_the_graph_shows_the_mode_a_run_used():
    wf = build_demo()
    writer = wf.executors["writer"]
    result = await wf.run(QUESTION)
    writer.set_context_mode("custom", user_messages)
    assert graph_of(wf, result.trace).node("writer").mode == "last_agent"
    assert graph_of(wf).node("writer").mode == "custom(user_messages)"


def test_ids_and_labels_are_escaped():
    class Plain(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[str]) -> None: ...

    evil = '<img src=x onerror="alert(1)">'
    wf = (
        WorkflowBuilder(start_executor=(a := Plain(evil)), name=evil)
        .add_edge(a, Plain("b"), lambda t: True, label=evil)
        .build()
    )
    svg = graph_svg(graph_of(wf))
    assert "<img" not in svg and "&lt;img" in svg
    assert '"alert(1)"' not in svg


def test_mermaid_and_dot():
    wf = support_workflow()
    assert wf.to_mermaid() == (
        "flowchart TD\n"
        '    n0["▶ triage<br/><small>agent · full</small>"]\n'
        '    n1["billing<br/><small>agent · full</small>"]\n'
        '    n2["tech<br/><small>agent · full</small>"]\n'
        '    n3["summary<br/><small>agent · full</small>"]\n'
        '    n4["review<br/><small>agent · full</small>"]\n'
        "    n0 --> n1\n"
        "    n0 --> n2\n"
        '    n1 -->|"all of"| n3\n'
        '    n2 -->|"all of"| n3\n'
        "    n3 --> n4\n"
        '    n4 -.->|"needs work"| n3\n'
    )
    dot = wf.to_dot()
    assert dot.startswith('digraph "support" {') and '"review" -> "summary" [style=dashed, label="needs work"];' in dot
    assert '"triage" [label="triage\nagent · full", penwidth=2.5];' in dot
    quoted = to_mermaid(graph_of(WorkflowBuilder(start_executor=agents('say "hi"')[0]).build()))
    assert '"▶ say #quot;hi#quot;<br/>' in quoted


def test_the_figure_exports_a_png(tmp_path):
    fig = support_workflow().to_figure()
    path = tmp_path / "graph.png"
    fig.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_the_workflow_displays_as_its_graph():
    wf = build_demo()
    bundle = wf._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert "planner -> researcher" in bundle["text/plain"] and "<svg" in bundle["text/html"]
    assert set(wf._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
