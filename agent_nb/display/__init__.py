"""Displays: workflows and traces as HTML and text. Pure functions of data, everything escaped."""

from .context import trace_html
from .html import escape, page

__all__ = ["escape", "page", "trace_html"]
