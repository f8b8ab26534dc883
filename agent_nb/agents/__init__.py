"""Agents: what a workflow executor wraps (``agent.py``), and one turn of a ``ChatAgent`` (``turn.py``)."""

from .agent import ChatAgent, SupportsAgentRun

__all__ = ["ChatAgent", "SupportsAgentRun"]
