"""How an experiment's table, comparison, cell and result draw in a notebook (HTML that needs no script).

Registered with ``agent_nb.rendering`` when the package is imported; every text is escaped. A
table is plain ``<table>`` markup, so it stays readable where a notebook is sanitised or static.
"""

from __future__ import annotations

from ..display.html import container, escape
from ..rendering import register
from .cells import Cell
from .result import ExperimentResult, ExperimentTable, PairedComparison

__all__: list[str] = []


def table_html(table: ExperimentTable, note: str = "") -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns())
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in table.values(row)) + "</tr>" for row in table.rows)
    cells = sum(r.cells for r in table.rows)
    caption = f"experiment {escape(table.name)}: {cells} cells · mean [95% interval]"
    note_html = f'<div class="meta">{escape(note)}</div>' if note else ""
    return container(f'<div class="meta">{caption}</div><table><tr>{head}</tr>{body}</table>{note_html}')


def result_html(result: ExperimentResult) -> str:
    note = "" if result.complete else f"{len(result)} of {result.planned} cells stored: run again with the same store"
    return table_html(result.table(), note)


def comparison_html(comparison: PairedComparison) -> str:
    return container(f"<p>{escape(comparison.to_text())}</p>")


def cell_html(cell: Cell) -> str:
    return container(f"<pre>{escape(cell.to_text())}</pre>")


register(ExperimentTable, "html", table_html)
register(ExperimentResult, "html", result_html)
register(PairedComparison, "html", comparison_html)
register(Cell, "html", cell_html)
