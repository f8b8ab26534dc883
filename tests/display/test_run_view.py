import re

import pytest

from agent_nb import (
    AgentExecutor,
    AgentSession,
    ChatAgent,
    EchoChatClient,
    FunctionCallContent,
    FunctionResultContent,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    RoutingChatClient,
    WorkflowBuilder,
)
from agent_nb.demo import QUESTION, build_demo
from agent_nb.display import MessagesView, RunView, run_view, timeline_html, trace_html
from agent_nb.display.plots import context_sizes, route_costs

EVIL = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2"> "quoted" \' & ünïcødé 🙂'


async def demo_run():
    return await build_demo().run(QUESTION)


def column(html: str, executor: str) -> str:
    start = html.index(f'data-executor="{executor}"')
    end = html.find('<section class="col"', start)
    return html[start : end if end > 0 else len(html)]


async def test_one_column_per_executor_with_dropped_struck_and_reassigned_marked():
    html = run_view(await demo_run())
    assert html.count('<section class="col"') == 3
    assert column(html, "planner").count('class="msg dropped"') == 0
    assert column(html, "researcher").count('class="msg dropped"') == 1  # the plan, by user_messages
    assert column(html, "writer").count('class="msg dropped"') == 1  # the question, by last_agent
    assert column(html, "writer").count("handed over as user") == 1
    writer = column(html, "writer")  # what its model received: its instructions, then the researcher's reply
    assert re.search(r"sent to the model \(2 · ~\d+ tokens\)", writer)
    assert "instructions 1 · handed over 1 · 1 of them given by its executor" in writer
    assert re.findall(r'<span class="badge origin">([a-z ]+)</span>', writer) == ["instructions", "handed over"]
    assert "text-decoration:line-through" in html and "<svg" in html


async def test_the_output_is_deterministic():
    first, second = run_view(await demo_run()), run_view(await demo_run())
    assert first == second
    assert not re.search(r"\d ms\b", first)  # no timings unless asked (timeline)


async def test_everything_from_content_is_escaped():
    agent = ChatAgent(EchoChatClient(), name="a<b>", instructions=EVIL)
    wf = WorkflowBuilder(start_executor=AgentExecutor(agent, id=EVIL), name=EVIL).build()
    result = await wf.run(EVIL)
    for html in (run_view(result), trace_html(result.trace, title=EVIL), timeline_html(result.trace)):
        # the only image is the graph's own picture: the hostile <img> is text
        assert "<script>" not in html and not re.search(r'<img(?! class="graph-still" alt=")', html)
        assert "a<b>" not in html
        assert "&lt;script&gt;" in html and "ünïcødé 🙂" in html
        assert 'onerror="' not in html


async def test_tool_calls_results_and_routes_are_shown():
    history = InMemoryHistoryProvider()
    router = RoutingChatClient({"mirror": MirrorChatClient()})
    session = AgentSession("s")
    await history.save(session, [
        Message("user", "weather?"),
        Message("assistant", [FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Porto"})], author_name="w"),
        Message("tool", [FunctionResultContent(call_id="c1", result="18C")], author_name="w"),
    ])  # fmt: skip
    agent = ChatAgent(router, name="w", history=history)
    wf = WorkflowBuilder(start_executor=AgentExecutor(agent, session=session)).build()
    html = run_view(await wf.run("and tomorrow?"))
    assert "answered · route mirror · mirror" in html and "route mirror" in column(html, "w")


async def test_a_conversation_of_many_turns_shows_the_turn_picked():
    wf = build_demo()
    turns = [await wf.run(QUESTION), await wf.run("second"), await wf.run("third")]
    html = run_view(turns, turn=1)
    assert "turn 2 of 3" in html and "second" in html and "third" not in html
    assert "<b>[" not in html  # no list of turns that looks like a picker and is not one (RunView has one)
    assert "turn 3 of 3" in run_view(turns)
    with pytest.raises(IndexError, match="there are 3 turns"):
        RunView(turns, turn=5)
    assert set(RunView(turns, turn=0)._repr_mimebundle_()) == {"text/plain", "text/html"}


def test_long_messages_and_long_conversations_fold_with_a_count():
    from agent_nb.display.html import bubble

    html = bubble(Message("user", "x" * 500), max_chars=100)
    assert "<details><summary>400 more characters</summary>" in html


async def test_32_executors_with_1000_messages_each_fold_and_stay_small():
    prior = [Message("user" if i % 2 else "assistant", f"message {i:04d} " + "lorem ipsum " * 8) for i in range(1000)]
    executors = [AgentExecutor(ChatAgent(EchoChatClient(), name=f"agent_{i:02d}")) for i in range(32)]
    result = await WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build().run(prior)
    # full mode: every agent is given the 1,000 messages and the replies before it
    html = run_view(result)  # how fast: bench/display_bench.py
    assert len(html.encode()) < 2_000_000, len(html.encode())
    assert html.count("messages not shown") == 32


async def test_plots_from_runs():
    wf = build_demo()
    turns = [await wf.run(QUESTION), await wf.run("again")]
    fig = context_sizes(turns)
    bars = {c.get_label(): [b.get_height() for b in c] for c in fig.axes[0].containers}
    assert list(bars) == ["planner", "researcher", "writer"]
    assert bars["planner"] == [2, 2]  # its instructions and the question: what its model received
    ticks = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_xticklabels()]
    assert ticks == [f"turn 1: {QUESTION[:31]}…", "turn 2: again"]  # the runs by their input, wrapped
    costs = route_costs(turns)
    assert [t.get_text() for t in costs.axes[0].get_xticklabels()] == ["mirror"]
    with pytest.raises(ValueError, match="measure must be"):
        context_sizes(turns, measure="bytes")
    assert fig._repr_png_().startswith(b"\x89PNG")  # a notebook shows it without pyplot


async def test_timeline_with_and_without_durations():
    trace = (await demo_run()).trace
    timed = timeline_html(trace)
    assert timed.count("<tr>") == 4 and " ms" in timed
    assert " ms" not in timeline_html(trace, durations=False)


async def test_every_object_a_user_looks_at_has_a_bundle():
    result = await demo_run()
    router = RoutingChatClient({"echo": EchoChatClient()})
    session = AgentSession(
        "s1", {"history": [Message("user", "hi").model_dump(mode="json")], "routes": {"router": "echo"}}
    )
    for obj in (
        result,
        result.trace,
        result.trace[0],
        build_demo(),
        session,
        router,
        MessagesView([Message("user", "hi")]),
    ):
        bundle = obj._repr_mimebundle_()
        assert set(bundle) == {"text/plain", "text/html"}, type(obj)
        assert set(obj._repr_mimebundle_(exclude=["text/html"])) == {"text/plain"}
        # text/plain is always there: it is what a terminal, a log or a sanitising renderer falls back on
        assert set(obj._repr_mimebundle_(include=["text/html"])) == {"text/plain", "text/html"}
        assert str(obj) == bundle["text/plain"]
    assert "stored history · 1 messages" in session._repr_mimebundle_()["text/html"]
    assert "echo (default)" in router._repr_mimebundle_()["text/html"]


def test_themes():
    from agent_nb.display.html import container

    assert container("x").startswith('<div class="anb"><style>')
    assert container("x", "dark").startswith('<div class="anb theme-dark">')
    with pytest.raises(ValueError, match="theme must be"):
        container("x", "neon")  # type: ignore[arg-type]
