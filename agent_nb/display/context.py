"""Every executor's active context, side by side: one column per executor, one card per invocation.

A card shows what arrived, what the context mode or filter dropped (struck through and
greyed), the exact messages its model received, each marked with where it came from (its
instructions, its history, another agent's reply handed over as user, this turn's input, its
tool work), what it answered and which route answered. Columns carry the message count and an
estimated token count of what the executor's model last received.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..messages import Message, estimate_tokens
from ..trace import ContextSnapshot, Trace
from ..trace.text import describe_state, describe_value, model_got, repaired, roles_before
from .graph import graph_html, graph_of
from .html import Theme, badge_html, bubble, container, escape, fold_list

if TYPE_CHECKING:
    from ..workflow.workflow import Workflow

__all__ = ["column_html", "columns_html", "snapshot_html", "trace_html"]


_NOT_RUN = '<div class="card meta">did not run in this turn</div>'
_STRUCK = "<del>struck through</del>: dropped by the context mode or filter"
_MOVED = badge_html("moved", "handed over as user") + ": another agent's reply, given as a user message"


def legend(trace: Trace) -> str:
    """The legend of what this trace shows: struck-through messages, reassigned ones (nothing if neither)."""
    parts = []
    if any(s.dropped for s in trace):
        parts.append(_STRUCK)
    if any(any(s.reassigned) for s in trace):
        parts.append(_MOVED)
    return f'<div class="meta">{" · ".join(parts)}</div>' if parts else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _messages(
    messages: Sequence[Message],
    limit: int,
    max_chars: int,
    *,
    dropped: bool = False,
    was: Sequence[Message] = (),
    origins: Sequence[str] = (),
) -> str:
    def render(i: int, m: Message) -> str:
        moved = was[i].role if was and was[i] is not m and was[i].role != m.role else None
        return bubble(m, dropped=dropped, moved_from=moved, max_chars=max_chars, origin=origins[i] if origins else None)

    return fold_list(messages, limit, render)


def _sub_workflow(workflow: Workflow | None, executor_id: str) -> Workflow | None:
    """The workflow an executor of ``workflow`` runs whole (a ``WorkflowExecutor``'s, an agent's made of one)."""
    executor = workflow.executors.get(executor_id) if workflow is not None else None
    sub = getattr(executor, "workflow", None) or getattr(getattr(executor, "agent", None), "workflow", None)
    return sub if sub is not None and hasattr(sub, "executors") else None


def _inner_html(s: ContextSnapshot, inner: Trace, workflow: Workflow | None, max_messages: int, max_chars: int) -> str:
    """A sub-workflow's run, opened on demand (no script: works untrusted): its graph, then its columns.

    The graph is the run view's own picture (inline SVG, and the same as an image where a notebook
    is not trusted), with the statuses of this invocation's run; without the workflow (a stored
    trace), the columns only.
    """
    sub = _sub_workflow(workflow, s.executor_id)
    ran = ", ".join(dict.fromkeys(x.executor_id for x in inner))
    picture = f'<div class="graph">{graph_html(graph_of(sub, inner))}</div>' if sub is not None else ""
    return (
        f'<details class="inner"><summary>its own workflow: {_count(len(inner), "invocation")} '
        f"({escape(ran)})</summary>{picture}"
        f"{columns_html(inner, workflow=sub, max_messages=max_messages, max_chars=max_chars)}</details>"
    )


def snapshot_html(
    s: ContextSnapshot, *, max_messages: int = 40, max_chars: int = 400, workflow: Workflow | None = None
) -> str:
    """One invocation as a card; ``workflow`` (the run's) draws a sub-workflow's graph in its block."""
    head = f"superstep {s.superstep}"
    if s.context_mode:
        head += f" · {escape(s.context_mode)}"
    if s.context_filter:
        head += f" ({escape(s.context_filter)})"
    status = "ran" if s.status in ("answered", "ran") else s.status
    out = [
        f'<div class="card {escape(s.status)}"><div class="meta">{head} <span class="sep">· </span>'
        f'<span class="status {escape(status)}">{escape(s.status)}</span></div>',
        f'<div class="label">received</div><div>{escape(describe_value(s.received))}</div>',
    ]
    if s.dropped:
        by = s.context_filter or s.context_mode or "filter"
        out.append(f'<div class="label">dropped by {escape(by)} ({len(s.dropped)})</div>')
        out.append(_messages(s.dropped, max_messages, max_chars, dropped=True))
    request, fixes = s.model_input, repaired(s)
    if request is not None:
        got, origins = request.messages, request.origins
        out.append(
            f'<div class="label">sent to the model ({len(got)} · ~{estimate_tokens(got)} tokens)</div>'
            f'<div class="meta">{escape(model_got(s, origins))} · '
            f"{len(s.given or ())} of them given by its executor</div>"
        )
        out.append(_messages(got, max_messages, max_chars, was=roles_before(s, got), origins=origins))
        if fixes:
            out.append(f'<div class="meta">repaired by the router: {escape("; ".join(fixes))}</div>')
    elif s.given is not None:
        tokens = estimate_tokens(s.given)
        what = "given to the agent" if s.kind == "agent" else "active context"
        out.append(f'<div class="label">{what} ({len(s.given)} · ~{tokens} tokens)</div>')
        was = s.cached if len(s.cached) == len(s.given) else ()
        out.append(_messages(s.given, max_messages, max_chars, was=was))
    elif s.kind == "agent" and s.kept:
        out.append(f'<div class="label">cached for its turn ({len(s.kept)})</div>')
        out.append(_messages(s.kept, max_messages, max_chars))
    if s.response is not None:
        answered_by = [f"route {s.response.route}"] if s.response.route else []
        answered_by += [s.response.model] if s.response.model else []
        note = " · " + escape(" · ".join(answered_by)) if answered_by else ""
        out.append(f'<div class="label">answered{note}</div>')
        notes = [n for n in s.response.repairs if n not in fixes and not any(n in w for w in s.warnings)]
        if notes:
            out.append(f'<div class="meta">noted: {escape("; ".join(notes))}</div>')
        out.append(_messages(s.response.messages, max_messages, max_chars))
    if s.wrote:
        out.append(f'<div class="label">wrote to the chat ({len(s.wrote)})</div>')
        out.append(_messages(s.wrote, max_messages, max_chars))
    if s.state:
        rows = "".join(f"<dt>{escape(k)}</dt>{_state_value(v, max_messages, max_chars)}" for k, v in s.state.items())
        out.append(f'<div class="label">state</div><dl class="kv">{rows}</dl>')
    if s.inner is not None:  # a sub-workflow: its own graph and columns, opened on demand
        out.append(_inner_html(s, s.inner, workflow, max_messages, max_chars))
    for sent in s.sent:
        to = ", ".join(sent.targets) or "nobody"
        out.append(f'<div class="meta">sent {escape(describe_value(sent.message))} → {escape(to)}</div>')
    for warning in s.warnings:
        out.append(f'<div class="label">warning</div><div class="error">{escape(warning)}</div>')
    if s.error is not None:
        out.append(f'<div class="label">error</div><div class="error">{escape(s.error)}</div>')
    out.append("</div>")
    return "".join(out)


def _state_value(value: Any, max_items: int, max_chars: int) -> str:
    """A state entry: a list of several things one per line (components, plan, steps), anything else in one."""
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        return f"<dd>{escape(describe_state(value, max_chars))}</dd>"
    lines = [f"<dd>{escape(describe_state(v, max_chars))}</dd>" for v in value[:max_items]]
    if len(value) > max_items:
        lines.append(f"<dd>… {len(value) - max_items} more</dd>")
    return "".join(lines)


def column_html(
    title: str,
    snaps: Sequence[ContextSnapshot],
    trace: Trace,
    *,
    executor_id: str,
    max_messages: int = 40,
    max_chars: int = 400,
    max_cards: int = 20,
    workflow: Workflow | None = None,
) -> str:
    """One executor's column in ``trace``: its invocations (``snaps``) as cards under ``title``.

    An executor that did not run says why: restored from the trace's checkpoint, or not run.
    ``workflow`` (the run's) lets a sub-workflow's card draw its graph.
    """
    restored = executor_id in trace.restored
    kind = snaps[0].kind if snaps else "restored" if restored else "not run"
    last = next((s for s in reversed(snaps) if s.given is not None or s.model_input is not None), None)
    facts = [kind, _count(len(snaps), "invocation")]
    if last is not None:
        context = last.context()
        facts.append(f"{_count(len(context), 'message')} · ~{estimate_tokens(context)} tokens")
        if last.response is not None and last.response.route:
            facts.append(f"route {last.response.route}")
    cards = fold_list(
        snaps,
        max_cards,
        lambda _, s: snapshot_html(s, max_messages=max_messages, max_chars=max_chars, workflow=workflow),
        "invocations",
    )
    return (
        f'<section class="col" data-executor="{escape(executor_id)}"><header><h3>{escape(title)}</h3>'
        f'<div class="meta">{escape(" · ".join(facts))}</div></header>'
        f"{cards or (_restored(trace) if restored else _NOT_RUN)}</section>"
    )


def _restored(trace: Trace) -> str:
    what = f"restored from checkpoint {trace.restored_from}; did not run in this run"
    return f'<div class="card meta restored">{escape(what)}</div>'


def columns_html(
    trace: Trace,
    *,
    max_messages: int = 40,
    max_chars: int = 400,
    max_cards: int = 20,
    workflow: Workflow | None = None,
) -> str:
    """The columns (no stylesheet: embed in a ``container``); ``workflow`` is the run's, for sub-workflows' graphs."""
    by_executor: dict[str, list[ContextSnapshot]] = {eid: [] for eid in trace.executor_ids}
    for s in trace:
        by_executor.setdefault(s.executor_id, []).append(s)
    cols = [
        column_html(
            eid,
            snaps,
            trace,
            executor_id=eid,
            max_messages=max_messages,
            max_chars=max_chars,
            max_cards=max_cards,
            workflow=workflow,
        )
        for eid, snaps in by_executor.items()
    ]
    return f'<div class="cols">{"".join(cols)}</div>'


def trace_html(
    trace: Trace,
    *,
    title: str | None = None,
    theme: Theme = "auto",
    stylesheet: bool = True,
    workflow: Workflow | None = None,
    **limits: Any,
) -> str:
    """The trace as a display: a heading and the columns (``workflow``, the run's, draws sub-workflows' graphs)."""
    heading = f"<h2>{escape(title)}</h2>" if title else ""
    return container(heading + columns_html(trace, workflow=workflow, **limits), theme, stylesheet=stylesheet)
