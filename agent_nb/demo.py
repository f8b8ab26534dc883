"""The demo of ``agent-nb demo``: three agents, three context modes, one question.

Every agent runs on the offline ``MirrorChatClient``, so each reply *is* a description
of what that agent had in its active context.
"""

from __future__ import annotations

from .agents import ChatAgent
from .clients import MirrorChatClient
from .display.html import container, escape, page
from .display.run import run_view
from .display.timeline import timeline_html
from .trace import Trace
from .workflow import AgentExecutor, RunResult, Workflow, WorkflowBuilder
from .workflow.filters import user_messages

__all__ = ["QUESTION", "build_demo", "demo_html", "summary", "who_saw"]

QUESTION = "Plan a rainy Sunday in Lisbon for two"


def build_demo() -> Workflow:
    """Planner (``full``) → researcher (``custom``: user messages only) → writer (``last_agent``)."""
    client = MirrorChatClient()
    planner = AgentExecutor(ChatAgent(client, name="planner", instructions="Split the request into steps."))
    researcher = AgentExecutor(
        ChatAgent(client, name="researcher", instructions="Find places for each step."),
        context_mode="custom",
        context_filter=user_messages,
    )
    writer = AgentExecutor(
        ChatAgent(client, name="writer", instructions="Write the final plan."),
        context_mode="last_agent",
    )
    return WorkflowBuilder(start_executor=planner, name="demo").add_chain([planner, researcher, writer]).build()


def who_saw(trace: Trace) -> list[tuple[str, str, list[bool]]]:
    """Per agent executor: its mode, and whether it was given the question and each earlier reply."""
    replies = [(s.executor_id, s.response.messages) for s in trace if s.response is not None][:-1]
    rows = []
    for s in trace:
        if s.given is None:
            continue
        texts = {m.text for m in s.given}
        saw = [QUESTION in texts] + [any(m.text in texts for m in msgs) for eid, msgs in replies]
        mode = s.context_mode or ""
        if s.context_filter:
            mode += f" ({s.context_filter})"
        rows.append((s.executor_id, mode, saw))
    return rows


def summary(trace: Trace) -> str:
    """``who_saw`` as a plain-text table."""
    replies = [s.executor_id for s in trace if s.response is not None][:-1]
    header = ["agent", "context mode", "question"] + [f"{r}'s reply" for r in replies]
    rows = [[eid, mode] + ["yes" if x else "-" for x in saw] for eid, mode, saw in who_saw(trace)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["Who was given what:"]
    for r in [header, *rows]:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def demo_html(result: RunResult) -> str:
    """The standalone page ``agent-nb demo`` writes: who saw what, the run view, the timeline."""
    trace = result.trace
    replies = [f"{s.executor_id}'s reply" for s in trace if s.response is not None][:-1]
    head = "".join(f"<th>{escape(c)}</th>" for c in ["agent", "context mode", "question", *replies])
    rows = "".join(
        f"<tr><td>{escape(eid)}</td><td>{escape(mode)}</td>"
        + "".join(f"<td>{'yes' if x else '—'}</td>" for x in saw)
        + "</tr>"
        for eid, mode, saw in who_saw(trace)
    )
    intro = (
        f"<h1>agent_nb demo</h1><p>Question: <b>{escape(QUESTION)}</b></p>"
        "<p>Three agents on the offline <code>MirrorChatClient</code>: each reply describes exactly what "
        "that agent was given. The planner keeps the <code>full</code> conversation, the researcher a "
        "<code>custom</code> filter (user messages only), the writer only the <code>last_agent</code>'s reply.</p>"
        f"<h2>Who was given what</h2><table><tr>{head}</tr>{rows}</table>"
    )
    return page(
        "agent_nb demo",
        container(intro)
        + "<h2>Every executor's active context</h2>"
        + run_view(result)
        + "<h2>Timeline</h2>"
        + timeline_html(trace),
    )
