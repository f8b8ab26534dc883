"""Chat clients: the seam between agents and models.

The offline clients here need no network and answer deterministically; they are the
default everywhere in agent_nb. Real providers live in their own modules and are
imported only when used.
"""

from .base import ChatClient, OfflineChatClient
from .offline import EchoChatClient, FunctionChatClient, MirrorChatClient, ScriptedChatClient

__all__ = [
    "ChatClient",
    "EchoChatClient",
    "FunctionChatClient",
    "MirrorChatClient",
    "OfflineChatClient",
    "ScriptedChatClient",
]
