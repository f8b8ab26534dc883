import re

from agent_nb import AgentExecutor, ChatAgent, EchoChatClient, Message, MirrorChatClient, WorkflowBuilder
from agent_nb.demo import QUESTION, build_demo
from agent_nb.display import escape, page, trace_html
from agent_nb.display.html import bubble

EVIL = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'


async def test_everything_from_models_users_and_ids_is_escaped():
    agent = ChatAgent(EchoChatClient(), name="a<b>", instructions=EVIL)
    ex = AgentExecutor(agent, id='ex"<i>')
    trace = (await WorkflowBuilder(start_executor=ex, name=EVIL).build().run(EVIL)).trace
    html = trace_html(trace, title=EVIL)
    assert "<script>" not in html and "<img" not in html and "<i>" not in html and "a<b>" not in html
    assert "&lt;script&gt;" in html and "ex&quot;&lt;i&gt;" in html
    assert "<script" not in page(EVIL, html)


async def test_dropped_messages_are_struck_through_and_reassigned_ones_marked():
    html = trace_html((await build_demo().run(QUESTION)).trace)
    assert html.count('class="msg dropped"') == 2  # researcher drops the plan, writer drops the question
    assert "text-decoration:line-through" in html
    assert html.count("handed over as user") == 1
    assert re.search(r"given to the agent \(1 · ~\d+ tokens\)", html)
    for executor in ("planner", "researcher", "writer"):
        assert f"<h3>{executor} " in html


async def test_executors_that_did_not_run_get_a_column():
    a = AgentExecutor(ChatAgent(MirrorChatClient(), name="a"))
    b = AgentExecutor(ChatAgent(MirrorChatClient(), name="b"))
    wf = WorkflowBuilder(start_executor=a).add_edge(a, b, lambda r: False).build()
    html = trace_html((await wf.run("q")).trace)
    assert "did not run" in html and "<h3>b " in html


def test_long_messages_fold_with_a_count():
    html = bubble(Message("user", "x" * 500), max_chars=100)
    assert "<details><summary>400 more characters</summary>" in html


def test_page_is_standalone():
    doc = page("t", "<p>body</p>")
    assert doc.startswith("<!DOCTYPE html>") and "http" not in doc.replace("http-equiv", "")
    assert "<script" not in doc
    assert escape("<&>\"'") == "&lt;&amp;&gt;&quot;&#x27;"
