"""The trace: per executor invocation, what it had in its active context.

Every display, widget, analysis and test reads these records. ``snapshots`` holds the
records (``ContextSnapshot``, ``Trace``), ``text`` their plain-text report, and
``who_has`` the analysis of who had a fact in its context, wrote it or passed it on.
"""

from .snapshots import ContextSnapshot, Sent, Trace
from .who_has import ContextTable, Fact, FactTable, Holder, Where, context_table

__all__ = ["ContextSnapshot", "ContextTable", "Fact", "FactTable", "Holder", "Sent", "Trace", "Where", "context_table"]
