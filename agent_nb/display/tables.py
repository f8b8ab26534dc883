"""Tables: who has a fact, the facts of a run against every viewpoint, and the gaps found."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..trace.who_has import LEGEND
from .html import container, escape

if TYPE_CHECKING:
    from ..harness.gaps import Findings
    from ..trace.who_has import ContextTable, FactTable

__all__ = ["context_table_html", "fact_table_html", "findings_html"]


def _cell(where: tuple[object, ...]) -> str:
    if not where:
        return '<td class="no">·</td>'
    detail = escape("; ".join(map(str, where)))
    return f'<td class="yes" title="{detail}">✓ <span class="meta">{detail}</span></td>'


def fact_table_html(table: FactTable) -> str:
    """One fact: a row per viewpoint, ✓ with where, for context / wrote / returned."""
    rows = "".join(
        f'<tr><th>{escape(r.viewpoint)} <span class="meta">{escape(r.kind)}</span></th>'
        f"{_cell(r.in_context)}{_cell(r.wrote)}{_cell(r.returned)}</tr>"
        for r in table.rows
    )
    head = "<tr><th>viewpoint</th><th>in its active context</th><th>wrote it to the chat</th><th>returned it</th></tr>"
    return container(f"<h2>who has {escape(table.label)}?</h2><table>{head}{rows}</table>")


def context_table_html(table: ContextTable) -> str:
    """Facts across, viewpoints down: C in context, W wrote, R returned."""
    head = "".join(f"<th>{escape(label)}</th>" for label in table.labels)
    body = []
    for viewpoint, kind, marks in table.rows():
        cells = "".join(f'<td class="{"yes" if m.strip("·") else "no"}">{escape(m)}</td>' for m in marks)
        body.append(f'<tr><th>{escape(viewpoint)} <span class="meta">{escape(kind)}</span></th>{cells}</tr>')
    legend = f'<div class="meta">{escape(LEGEND)}</div>'
    return container(f"<table><tr><th>viewpoint</th>{head}</tr>{''.join(body)}</table>{legend}")


def findings_html(findings: Findings) -> str:
    """The gaps: kind, part, turn, what happened, evidence, remedy (the rule on hover)."""
    if not findings:
        return container('<div class="meta">no gaps found: no duplicate or missed answers</div>')
    rows = "".join(
        f'<tr><td class="gap">{escape(f.kind)}</td><td>{escape(f.component)}</td><td>{f.turn}</td>'
        f'<td>{escape(f.detail)}<div class="meta">evidence: {escape(", ".join(f.evidence))}</div></td>'
        f'<td title="{escape(f.rule)}">{escape(f.remedy)}</td></tr>'
        for f in findings
    )
    head = "<tr><th>gap</th><th>part</th><th>turn</th><th>what happened</th><th>remedy</th></tr>"
    return container(f"<table>{head}{rows}</table>")
