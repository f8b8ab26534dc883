"""Routing: chat clients that wrap chat clients.

``RoutingChatClient`` moves a conversation between models and providers mid-way and keeps
its history; ``FallbackChatClient`` tries the next client when one fails with a retryable
error; ``check_history`` and ``repair_history`` say whether a route will accept a
conversation, and fix what can be fixed.
"""

from .fallback import FallbackChatClient
from .history_check import Problem, check_history, repair_history
from .router import HistoryPolicy, RoutingChatClient

__all__ = ["FallbackChatClient", "HistoryPolicy", "Problem", "RoutingChatClient", "check_history", "repair_history"]
