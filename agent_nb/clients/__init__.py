"""Chat clients: the seam between agents and models.

The offline clients here need no network and answer deterministically; they are the
default everywhere in agent_nb. Real providers live in their own modules
(``agent_nb.clients.openai``), and their SDKs are imported only when used.
"""

from .base import Capabilities, ChatClient, OfflineChatClient
from .offline import EchoChatClient, FunctionChatClient, MirrorChatClient, ScriptedChatClient

__all__ = [
    "Capabilities",
    "ChatClient",
    "EchoChatClient",
    "FunctionChatClient",
    "MirrorChatClient",
    "OfflineChatClient",
    "ScriptedChatClient",
]
