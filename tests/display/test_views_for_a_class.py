"""The views a class uses: runs named by what differs, a picker that works without script, one executor
across runs, the compact graph, restored executors, Mermaid, and plots that read in both themes."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from agent_nb import AgentExecutor, ChatAgent, MirrorChatClient, RoutingChatClient, WorkflowBuilder
from agent_nb.display import RunView, graph_of, graph_svg, run_view
from agent_nb.display.graph import layout
from agent_nb.display.runs import run_labels
from agent_nb.workflow import InMemoryCheckpointStorage
from agent_nb.workflow.filters import user_messages

QUESTION = "Plan a rainy Sunday in Lisbon for two"


def trip(**writer_mode):
    mirror = MirrorChatClient()
    agents = [AgentExecutor(ChatAgent(mirror, name=n)) for n in ("planner", "researcher")]
    writer = AgentExecutor(ChatAgent(mirror, name="writer"), **writer_mode)
    builder = WorkflowBuilder(start_executor=agents[0], name="trip").add_chain([*agents, writer])
    return builder, writer


async def three_modes():
    builder, writer = trip()
    wf = builder.build()
    full = await wf.run(QUESTION)
    writer.context_mode = "last_agent"
    last = await wf.run(QUESTION)
    writer.set_context_mode("custom", user_messages)
    return [full, last, await wf.run(QUESTION)]


class Details(HTMLParser):
    """The <details> blocks of a view: (open?, summary text)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[list[object]] = []
        self._in_summary = False

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.blocks.append([dict(attrs).get("open", "no") is None, "", dict(attrs).get("name")])
        self._in_summary = self._in_summary or tag == "summary"

    def handle_endtag(self, tag):
        self._in_summary = self._in_summary and tag != "summary"

    def handle_data(self, data):
        if self._in_summary:
            self.blocks[-1][1] += data


def details(html: str) -> list[list[object]]:
    parser = Details()
    parser.feed(html)
    return [b for b in parser.blocks if b[2]]  # the runs' blocks, not a folded long message


async def test_runs_are_named_by_the_mode_that_differs_and_the_picker_opens_the_one_asked_for():
    runs = await three_modes()
    assert run_labels([r.trace for r in runs]) == [
        "writer: full",
        "writer: last_agent",
        "writer: custom(user_messages)",
    ]
    view = RunView(runs, turn=1)
    blocks = details(view.html())
    assert [b[1].split(" completed")[0].strip() for b in blocks] == [
        "writer: full",
        "writer: last_agent",
        "writer: custom(user_messages)",
    ]
    assert [b[0] for b in blocks] == [False, True, False]  # the picked one is open, the others open on a click
    assert len({b[2] for b in blocks}) == 1  # one group: opening one closes the others
    assert "turn 2 of 3" not in view.html() and "writer: last_agent (also: writer: full;" in view.to_text()
    assert [b[0] for b in details(RunView(runs).html())] == [False, False, True]  # the last by default


async def test_routes_inputs_and_given_labels_name_runs_and_repeats_are_told_apart():
    mirror = MirrorChatClient()
    router = RoutingChatClient({"fast": mirror, "smart": MirrorChatClient()}, default_route="fast")
    agent = ChatAgent(router, name="solo")
    session = agent.create_session()
    wf = WorkflowBuilder(start_executor=AgentExecutor(agent, session=session), name="solo").build()
    first = await wf.run("hi")
    router.set_active_route(session, "smart")
    second = await wf.run("hi")
    router.set_active_route(session, "fast")
    third = await wf.run("hi")
    assert run_labels([first.trace, second.trace, third.trace]) == [
        "route fast (run 1)",
        "route smart",
        "route fast (run 3)",
    ]
    turns = [await wf.run("one"), await wf.run("two")]
    assert run_labels([t.trace for t in turns]) == ["turn 1: one", "turn 2: two"]
    same = [await wf.run("x"), await wf.run("x")]
    assert run_labels([t.trace for t in same]) == ["run 1", "run 2"]
    html = RunView({"before": first, "after <b>": second}).html()
    assert "after &lt;b&gt;" in html and "<b>after <b>" not in html  # given labels, escaped
    with pytest.raises(ValueError, match="2 labels for 3 runs"):
        RunView([first, second, third], labels=["a", "b"])
    with pytest.raises(TypeError, match="unknown run view option"):
        RunView([first, second], max_mesages=3)


async def test_one_executor_across_runs_side_by_side():
    runs = await three_modes()
    view = RunView(runs, executor="writer")
    html = view.html()
    cols = re.findall(r'<section class="col" data-executor="writer"><header><h3>(.*?)</h3>', html)
    assert cols == ["writer: full", "writer: last_agent", "writer: custom(user_messages)"]
    assert "planner" not in re.sub(r"<[^>]+>", " ", html.split('<section class="col"', 2)[2]).split("dropped")[0]
    full, last, custom = html.split('<section class="col"')[1:]
    assert "dropped by last_agent (2)" in last and "dropped" not in full and "dropped by user_messages (2)" in custom
    assert "── writer: last_agent" in view.to_text()
    with pytest.raises(KeyError, match="did you mean 'writer'"):
        RunView(runs, executor="writr")


async def test_the_compact_view_lays_the_graph_across_above_the_columns():
    runs = await three_modes()
    wf = runs[0].workflow
    down, across = layout(graph_of(wf), "TB"), layout(graph_of(wf), "LR")
    assert down.width < down.height and across.width > 3 * across.height  # a chain: a column, then one row
    ys = {y for _, y in across.pos.values()}
    assert len(ys) == 1 and sorted(x for x, _ in across.pos.values()) == [x for x, _ in across.pos.values()]
    html = run_view(runs[0], compact=True)
    assert '<div class="run compact">' in html and f'width="{across.width:.0f}"' in html
    assert 'class="side" style="flex-basis' not in html  # the columns take the page's width under it
    with pytest.raises(ValueError, match="direction must be 'TB'"):
        graph_svg(graph_of(wf), direction="RL")


async def test_a_cycle_across_the_page_curves_below_every_node():
    mirror = MirrorChatClient()
    a, b, c = (AgentExecutor(ChatAgent(mirror, name=n)) for n in "abc")
    wf = (
        WorkflowBuilder(start_executor=a, max_supersteps=4)
        .add_edge(a, b)
        .add_edge(b, c)
        .add_edge(c, a, condition=lambda _: False)
        .build()
    )
    lay = layout(graph_of(wf), "LR")
    svg = graph_svg(graph_of(wf), direction="LR")
    back = re.findall(r'd="M\d+,(\d+) C\d+,(\d+) \d+,\d+ \d+,\d+"[^>]*stroke-dasharray', svg)
    bottom = max(y for _, y in lay.pos.values()) + 46  # the lowest node's bottom edge
    assert back and all(int(bulge) > bottom for _, bulge in back)  # under every node, not through one
    assert all(int(bulge) < lay.height for _, bulge in back)  # and inside the picture


async def test_executors_put_back_from_a_checkpoint_are_restored_not_not_run():
    storage = InMemoryCheckpointStorage()
    mirror = MirrorChatClient()
    ex = [AgentExecutor(ChatAgent(mirror, name=n)) for n in ("planner", "researcher", "writer")]
    wf = WorkflowBuilder(start_executor=ex[0], name="trip", checkpoint_storage=storage).add_chain(ex).build()
    await wf.run(QUESTION)
    after_planner = next(i for i in storage.list() if i.superstep == 1)
    resumed = await wf.run(checkpoint_id=after_planner.id, checkpoint_storage=storage)
    trace = resumed.trace
    assert trace.restored_from == after_planner.id and trace.restored == ("planner",)
    assert graph_of(wf, trace).node("planner").status == "restored"
    assert graph_of(wf, trace).node("writer").status == "ran"
    html = run_view(resumed)
    assert f"restored from checkpoint {after_planner.id}; did not run in this run" in html
    assert "did not run in this turn" not in html
    assert str(trace).startswith(f"resumed from checkpoint {after_planner.id}: restored planner")
    fresh = await wf.run(QUESTION)
    assert fresh.trace.restored == () and "restored" not in str(fresh.trace).split("\n")[0]
    from agent_nb.trace.codec import dump_trace, load_trace

    again = load_trace(dump_trace(trace))
    assert (again.restored_from, again.restored) == (trace.restored_from, trace.restored)
    assert trace.to_dict()["restored"] == ["planner"]
    planner, writer = trace.for_executor("planner"), trace.for_executor("writer")  # one column keeps it
    assert (planner.restored_from, planner.restored) == (after_planner.id, ("planner",))
    assert "restored from checkpoint" in planner._repr_html_() and writer.restored == ()


async def test_mermaid_is_offered_to_the_front_end_and_stays_text():
    builder, _ = trip()
    wf = builder.build()
    text = wf.to_mermaid()
    bundle = text._repr_mimebundle_()
    assert bundle["text/vnd.mermaid"] == bundle["text/plain"] == text and text.startswith("flowchart TD")
    assert isinstance(text, str) and f"{text}" == str(text)
    assert wf.to_mermaid(direction="LR").startswith("flowchart LR")
    with pytest.raises(ValueError, match="direction must be one of"):
        wf.to_mermaid(direction="TD; click n0 href")


async def test_the_context_sizes_plot_names_runs_on_its_axis_in_bars_and_reads_in_both_themes():
    from matplotlib.colors import to_rgba

    from agent_nb.display.plots import context_sizes

    runs = await three_modes()
    fig = context_sizes(runs)
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["writer: full", "writer: last_agent", "writer:\ncustom(user_messages)"]  # words kept whole
    heights = {c.get_label(): [round(b.get_height()) for b in c] for c in ax.containers}
    assert heights["planner"] == [1, 1, 1]  # the question, in every run
    assert heights["writer"][0] > heights["writer"][1]  # last_agent: fewer messages reach its model
    assert fig.patch.get_alpha() == 0.0  # auto: transparent, grey text readable on light and dark
    grey = to_rgba("#8b949e")
    assert to_rgba(ax.title.get_color()) == grey and to_rgba(ax.xaxis.label.get_color()) == grey
    dark = context_sizes({"a": runs[0], "b": runs[1]}, theme="dark")
    assert to_rgba(dark.patch.get_facecolor()) == to_rgba("#0d1117")
    assert [t.get_text() for t in dark.axes[0].get_xticklabels()] == ["a", "b"]
    with pytest.raises(ValueError, match="theme must be"):
        context_sizes(runs, theme="blue")


async def test_one_run_in_a_run_view_is_not_named_unless_asked():
    runs = await three_modes()
    view = RunView(runs[0], compact=True)
    assert view.to_text() == runs[0].to_text() and "run 1" not in view.html()
    assert "turn 1 of 1" in view.html()
    assert '<h2>trip <span class="meta">first try · completed' in RunView({"first try": runs[0]}).html()


def test_mermaid_shows_as_its_text_in_a_plain_text_front_end():
    from IPython.core.formatters import DisplayFormatter

    builder, _ = trip()
    data, _ = DisplayFormatter().format(builder.build().to_mermaid())
    assert data["text/plain"].startswith("flowchart TD\n") and data["text/vnd.mermaid"] == data["text/plain"]


def test_the_graph_as_a_picture_lays_its_layers_across_too():
    builder, _ = trip()
    wf = builder.build()
    down, across = wf.to_figure(), wf.to_figure(direction="LR")
    (dw, dh), (aw, ah) = down.get_size_inches(), across.get_size_inches()
    assert dh > dw and aw > 3 * ah  # a chain of three: a column, then a row
    assert across._repr_png_().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="direction must be 'TB'"):
        wf.to_figure(direction="BT")


def test_the_graph_picture_says_what_it_shows_with_one_executor_too():
    from agent_nb.display.graph import graph_html

    solo = WorkflowBuilder(start_executor=AgentExecutor(ChatAgent(MirrorChatClient(), name="guide")), name="g").build()
    assert 'alt="workflow g: executor guide"' in graph_html(graph_of(solo))
    builder, _ = trip()
    assert 'alt="workflow trip: planner → researcher, researcher → writer"' in graph_html(graph_of(builder.build()))
