"""The trace: per executor invocation, what it had in its active context.

Every display, widget, analysis and test reads these records. ``snapshots`` holds the
records (``ContextSnapshot``, ``Trace``), ``text`` their plain-text report, and
``who_has`` the analysis of who had a fact in its context, wrote it or passed it on.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .snapshots import ContextSnapshot, Sent, Trace

if TYPE_CHECKING:
    from .who_has import ContextTable, Fact, FactTable, Holder, Where, context_table

# The analysis is loaded on first use: a run records its trace without paying for it.
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    dict.fromkeys(["ContextTable", "Fact", "FactTable", "Holder", "Where", "context_table"], "who_has"),
)

__all__ = ["ContextSnapshot", "ContextTable", "Fact", "FactTable", "Holder", "Sent", "Trace", "Where", "context_table"]
