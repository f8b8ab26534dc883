"""The run view: the graph with each executor's status, and beside it every executor's context.

``run_view`` shows one run; given several (the turns of one conversation, or one question under
three context modes), it shows the one picked and names it by what differs from the others
(``runs.py``). ``RunView`` shows them all, each one a block that opens (no script: a notebook
opened untrusted keeps them working), or one executor across the runs, side by side.
``compact=True`` draws the graph across the page, above the columns, for a projector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import did_you_mean
from ..messages import AgentResponseUpdate, Message
from ..rendering import Displayable
from ..workflow.result import folded
from .chat import chat_column
from .context import column_html, columns_html, legend
from .graph import Direction, graph_html, graph_of
from .html import Theme, container, escape
from .runs import as_runs, labelled_runs

if TYPE_CHECKING:
    from ..workflow.result import RunResult

__all__ = ["RunView", "run_view"]


def _counts(result: RunResult) -> str:
    supersteps = max((s.superstep for s in result.trace), default=0)
    outputs = sum(not isinstance(o, AgentResponseUpdate) for o in result.get_outputs())  # not streamed pieces
    counts = [result.status, f"{supersteps} superstep{'' if supersteps == 1 else 's'}"]
    if outputs:
        counts.append(f"{outputs} output{'' if outputs == 1 else 's'}")
    return " · ".join(counts)


def _index(turn: int | None, count: int) -> int:
    index = count - 1 if turn is None else turn
    if not -count <= index < count:
        raise IndexError(f"turn {turn} does not exist: there are {count} turns (0 to {count - 1})")
    return index % count


def _body(
    result: RunResult,
    *,
    max_messages: int,
    max_chars: int,
    max_cards: int,
    graph: bool,
    compact: bool,
    chat: Sequence[Message] | None,
    chat_marks: Mapping[str, str] | None,
) -> str:
    """One run's waiting requests, legend, graph and columns (no heading, no stylesheet)."""
    head = ""
    if result.pending_requests:
        items = "".join(
            f"<li><b>{escape(p.executor_id)}</b> asks <code>{escape(p.request_id)}</code>: {escape(p.prompt)}</li>"
            for p in result.pending_requests
        )
        head += f'<div class="meta">waiting for an answer (<code>run(responses=...)</code>):<ul>{items}</ul></div>'
    if result.trace.restored_from is not None:
        head += f'<div class="meta">resumed from checkpoint <code>{escape(result.trace.restored_from)}</code></div>'
    wf = result.workflow
    columns = columns_html(
        result.trace, max_messages=max_messages, max_chars=max_chars, max_cards=max_cards, workflow=wf
    )
    if chat is not None:
        column = chat_column(chat, chat_marks or {}, max_messages=max_messages, max_chars=max_chars)
        columns = columns.replace('<div class="cols">', f'<div class="cols">{column}', 1)
    direction: Direction = "LR" if compact else "TB"
    picture = graph_html(graph_of(wf, result.trace), direction=direction) if graph and wf is not None else ""
    picture = f'<div class="graph">{picture}</div>' if picture else ""
    if compact:  # the graph across the top, the columns below it at the page's width
        return f'{head}{legend(result.trace)}<div class="run compact">{picture}<div class="side">{columns}</div></div>'
    # side by side while the columns fit at their narrowest beside the graph, below it otherwise
    basis = min(len(result.trace.executor_ids) + (chat is not None), 5) * 242
    side = f'<div class="side" style="flex-basis:{basis}px">{columns}</div>'
    return f'{head}{legend(result.trace)}<div class="run">{picture}{side}</div>'


def run_view(
    results: RunResult | Sequence[RunResult] | Mapping[str, RunResult],
    *,
    turn: int | None = None,
    labels: Sequence[str] | None = None,
    theme: Theme = "auto",
    max_messages: int = 40,
    max_chars: int = 400,
    max_cards: int = 20,
    graph: bool = True,
    compact: bool = False,
    chat: Sequence[Message] | None = None,
    chat_marks: Mapping[str, str] | None = None,
    stylesheet: bool = True,
) -> str:
    """The run view as an HTML fragment (stylesheet included; no script, nothing loaded).

    Args:
        results: one run; or several: the turns of one conversation (a list: the header says
            "turn 2 of 3"), or runs named by a mapping of label to run.
        turn: which of ``results`` to show, counting from 0 (negative from the end); the last by default.
        labels: a name per run, said in the header instead of its turn.
        max_messages: bubbles shown per list of messages; beyond, the first and last are shown and
            the rest counted.
        max_chars: characters of a message shown before it folds.
        max_cards: invocations shown per executor (a long cycle folds the middle ones).
        theme: ``"auto"`` follows the notebook's theme; ``"light"`` or ``"dark"`` force one.
        graph: draw the graph beside the columns.
        compact: the graph across the page, above the columns (a projector shows both on one screen).
        chat: the user's chat up to this turn, shown as the first column (a harness conversation).
        chat_marks: a badge per chat message id (such as "never reached the orchestrator").
        stylesheet: include the stylesheet (leave it out where the page already holds it).
    """
    named = labels is not None or isinstance(results, Mapping)  # else: the turns of one conversation
    runs, names = labelled_runs(results, labels) if named else (as_runs(results), [])
    index = _index(turn, len(runs))
    result = runs[index]
    name = result.workflow.name if result.workflow is not None else "workflow"
    if not named:
        which = f"turn {index + 1} of {len(runs)} · "
    else:
        which = escape(names[index]) + (f" · {index + 1} of {len(runs)}" if len(runs) > 1 else "") + " · "
    head = f'<h2>{escape(name)} <span class="meta">{which}{escape(_counts(result))}</span></h2>'
    body = _body(
        result, max_messages=max_messages, max_chars=max_chars, max_cards=max_cards, graph=graph,
        compact=compact, chat=chat, chat_marks=chat_marks,
    )  # fmt: skip
    return container(head + body, theme, stylesheet=stylesheet)


def runs_html(
    runs: Sequence[RunResult],
    labels: Sequence[str],
    *,
    open_index: int,
    theme: Theme = "auto",
    **options: Any,
) -> str:
    """Every run as a block that opens, the picked one open.

    Opening one closes the others where the browser can (``<details name=...>``); no script.
    """
    shown = runs[open_index].workflow
    name = shown.name if shown is not None else "workflow"
    group = "anb-runs-" + hashlib.sha1("\0".join([name, *labels]).encode()).hexdigest()[:10]
    blocks = []
    for i, (result, label) in enumerate(zip(runs, labels, strict=True)):
        body = _body(result, chat=None, chat_marks=None, **_limits(options))
        opened = " open" if i == open_index else ""
        blocks.append(
            f'<details class="run-pick" name="{group}"{opened}><summary><b>{escape(label)}</b> '
            f'<span class="meta">{escape(_counts(result))}</span></summary>{body}</details>'
        )
    head = f'<h2>{escape(name)} <span class="meta">{len(runs)} runs: open one to see it</span></h2>'
    return container(head + "".join(blocks), theme)


_SHARED = ("max_messages", "max_chars", "max_cards", "graph", "compact")
"""The options every view of several runs takes, with ``run_view``'s defaults."""


def _limits(options: Mapping[str, Any]) -> dict[str, Any]:
    defaults = run_view.__kwdefaults__ or {}
    known = {name: defaults[name] for name in _SHARED}
    unknown = set(options) - set(known)
    if unknown:
        raise TypeError(f"unknown run view option(s): {', '.join(sorted(unknown))} (options: {', '.join(known)})")
    return known | dict(options)


def across_runs_html(
    runs: Sequence[RunResult], labels: Sequence[str], executor: str, *, theme: Theme = "auto", **options: Any
) -> str:
    """One executor in every run, side by side: a column per run, headed by what differs."""
    limits = _limits(options)
    cols = []
    for result, label in zip(runs, labels, strict=True):
        trace = result.trace
        snaps = [s for s in trace if s.executor_id == executor]
        cols.append(
            column_html(
                label, snaps, trace, executor_id=executor,
                max_messages=limits["max_messages"], max_chars=limits["max_chars"], max_cards=limits["max_cards"],
                workflow=result.workflow,
            )
        )  # fmt: skip
    head = f'<h2>{escape(executor)} <span class="meta">in {len(runs)} runs</span></h2>'
    return container(f'{head}<div class="cols">{"".join(cols)}</div>', theme)


class RunView(Displayable):
    """Several runs in one view: ``RunView([full, last_agent, custom])``, or ``RunView({"full": a, ...})``.

    Each run is named by what differs between them (or by ``labels``); every run is a block that
    opens, the one picked by ``turn`` (the last by default) open. ``executor="writer"`` shows that
    executor across the runs, side by side. ``compact=True`` lays each graph across the page.
    Other options go to the run view (``theme``, ``max_messages``, ...).
    """

    def __init__(
        self,
        results: RunResult | Sequence[RunResult] | Mapping[str, RunResult],
        *,
        turn: int | None = None,
        labels: Sequence[str] | None = None,
        executor: str | None = None,
        **options: Any,
    ) -> None:
        self.results, self.labels = labelled_runs(results, labels)
        self.named = labels is not None or isinstance(results, Mapping)  # one run is named only when asked
        self.index = _index(turn, len(self.results))  # fail now on a bad turn, not when shown
        self.theme: Theme = options.pop("theme", "auto")
        _limits(options)  # and on an unknown option
        self.options = options
        if executor is not None:
            known = list(dict.fromkeys(e for r in self.results for e in r.trace.executor_ids))
            if executor not in known:
                raise KeyError(
                    f"no executor {executor!r} in these runs (executors: {', '.join(known)})"
                    + did_you_mean(executor, known)
                )
        self.executor = executor

    def to_text(self) -> str:
        if self.executor is not None:
            parts = []
            for result, label in zip(self.results, self.labels, strict=True):
                trace = result.trace
                ran = self.executor in trace.executor_ids and len(trace.for_executor(self.executor)) > 0
                body = trace.for_executor(self.executor).to_text() if ran else f"{self.executor}: did not run"
                parts.append(f"── {label}\n{body}")
            return "\n".join(parts)
        if len(self.results) == 1 and not self.named:
            return self.results[0].to_text()
        others = [label for i, label in enumerate(self.labels) if i != self.index]
        also = f" (also: {'; '.join(others)})" if others else ""
        return folded(f"{self.labels[self.index]}{also}", self.results[self.index].trace)

    def html(self) -> str:
        """The view as an HTML fragment."""
        if self.executor is not None:
            return across_runs_html(self.results, self.labels, self.executor, theme=self.theme, **self.options)
        if len(self.results) == 1:
            labels = self.labels if self.named else None
            return run_view(self.results, labels=labels, theme=self.theme, **self.options)
        return runs_html(self.results, self.labels, open_index=self.index, theme=self.theme, **self.options)
