"""The run view: the graph with each executor's status, and beside it every executor's context.

It shows one turn (one ``workflow.run``); given the results of several turns of one
conversation, it shows the one picked (the last by default) and lists the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..messages import AgentResponseUpdate, Message
from ..rendering import Displayable
from ..workflow.result import folded
from .chat import chat_column
from .context import columns_html, legend
from .graph import graph_html, graph_of
from .html import Theme, container, escape

if TYPE_CHECKING:
    from ..workflow.result import RunResult

__all__ = ["RunView", "run_view"]


def _turns(results: Sequence[RunResult], turn: int) -> str:
    marks = []
    for i, r in enumerate(results):
        label = f"turn {i + 1}" + ("" if r.status == "completed" else f" ({r.status})")
        marks.append(f"<b>[{escape(label)}]</b>" if i == turn else escape(label))
    return f'<div class="meta">{" · ".join(marks)}</div>'


def run_view(
    results: RunResult | Sequence[RunResult],
    *,
    turn: int | None = None,
    theme: Theme = "auto",
    max_messages: int = 40,
    max_chars: int = 400,
    max_cards: int = 20,
    graph: bool = True,
    chat: Sequence[Message] | None = None,
    chat_marks: Mapping[str, str] | None = None,
) -> str:
    """The run view as an HTML fragment (stylesheet included; no script, nothing loaded).

    Args:
        results: one run, or the runs (turns) of one conversation.
        turn: which of ``results`` to show, counting from 0 (negative from the end); the last by default.
        max_messages: bubbles shown per list of messages; beyond, the first and last are shown and
            the rest counted.
        max_chars: characters of a message shown before it folds.
        max_cards: invocations shown per executor (a long cycle folds the middle ones).
        theme: ``"auto"`` follows the notebook's theme; ``"light"`` or ``"dark"`` force one.
        graph: draw the graph beside the columns.
        chat: the user's chat up to this turn, shown as the first column (a harness conversation).
        chat_marks: a badge per chat message id (such as "never reached the orchestrator").
    """
    runs = [results] if not isinstance(results, Sequence) else list(results)
    if not runs:
        raise ValueError("run_view needs at least one RunResult")
    index = len(runs) - 1 if turn is None else turn
    if not -len(runs) <= index < len(runs):
        raise IndexError(f"turn {turn} does not exist: there are {len(runs)} turns (0 to {len(runs) - 1})")
    index %= len(runs)
    result = runs[index]
    wf = result.workflow
    name = wf.name if wf is not None else "workflow"
    supersteps = max((s.superstep for s in result.trace), default=0)
    outputs = sum(not isinstance(o, AgentResponseUpdate) for o in result.get_outputs())  # not streamed pieces
    counts = [f"{supersteps} superstep{'' if supersteps == 1 else 's'}"]
    if outputs:
        counts.append(f"{outputs} output{'' if outputs == 1 else 's'}")
    head = (
        f'<h2>{escape(name)} <span class="meta">turn {index + 1} of {len(runs)} · {escape(result.status)} · '
        f"{' · '.join(counts)}</span></h2>"
    )
    if len(runs) > 1:
        head += _turns(runs, index)
    if result.pending_requests:
        items = "".join(
            f"<li><b>{escape(p.executor_id)}</b> asks <code>{escape(p.request_id)}</code>: {escape(p.prompt)}</li>"
            for p in result.pending_requests
        )
        head += f'<div class="meta">waiting for an answer (<code>run(responses=...)</code>):<ul>{items}</ul></div>'
    columns = columns_html(result.trace, max_messages=max_messages, max_chars=max_chars, max_cards=max_cards)
    if chat is not None:
        column = chat_column(chat, chat_marks or {}, max_messages=max_messages, max_chars=max_chars)
        columns = columns.replace('<div class="cols">', f'<div class="cols">{column}', 1)
    picture = f'<div class="graph">{graph_html(graph_of(wf, result.trace))}</div>' if graph and wf is not None else ""
    # side by side while the columns fit at their narrowest beside the graph, below it otherwise
    basis = min(len(result.trace.executor_ids) + (chat is not None), 5) * 242
    side = f'<div class="side" style="flex-basis:{basis}px">{columns}</div>'
    return container(f'{head}{legend(result.trace)}<div class="run">{picture}{side}</div>', theme)


class RunView(Displayable):
    """The run view as a display object: ``RunView([turn1, turn2, turn3], turn=1)`` in a cell."""

    def __init__(self, results: RunResult | Sequence[RunResult], *, turn: int | None = None, **options: Any) -> None:
        self.results = [results] if not isinstance(results, Sequence) else list(results)
        self.turn = turn
        self.options = options
        run_view(self.results, turn=turn, graph=False, max_messages=1)  # fail now on a bad turn, not when shown

    def to_text(self) -> str:
        index = len(self.results) - 1 if self.turn is None else self.turn % len(self.results)
        return folded(f"turn {index + 1} of {len(self.results)}", self.results[index].trace)

    def html(self) -> str:
        """The view as an HTML fragment."""
        return run_view(self.results, turn=self.turn, **self.options)
