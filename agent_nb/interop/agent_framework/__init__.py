"""A bridge to Microsoft Agent Framework (``pip install 'agent_nb[agent-framework]'``, for agent-framework-core 1.23).

- ``FrameworkChatClient(af_client)``: an Agent Framework chat client as an agent_nb ``ChatClient``
  (a ``ChatAgent``'s client, a route of a ``RoutingChatClient``, recorded and replayed by cassettes);
- ``FrameworkAgent(af_agent)``: an Agent Framework agent as an agent_nb agent (an ``AgentExecutor``,
  a builder, the ``Playground``, an experiment), each request its model got in the trace;
- ``AgentNbChatClient(client)``: an agent_nb client — a ``RoutingChatClient`` above all — as an Agent
  Framework chat client, so an Agent Framework agent keeps each session on its own route;
- ``messages_to_framework`` / ``messages_from_framework`` and the response converters, both ways.
"""

from .agents import FrameworkAgent
from .clients import AgentNbChatClient, FrameworkChatClient, options_from_framework, options_to_framework
from .convert import (
    Converted,
    agent_response_from_framework,
    agent_response_to_framework,
    agent_update_from_framework,
    messages_from_framework,
    messages_to_framework,
    response_from_framework,
    response_to_framework,
    update_from_framework,
    update_to_framework,
)

__all__ = [
    "AgentNbChatClient",
    "Converted",
    "FrameworkAgent",
    "FrameworkChatClient",
    "agent_response_from_framework",
    "agent_response_to_framework",
    "agent_update_from_framework",
    "messages_from_framework",
    "messages_to_framework",
    "options_from_framework",
    "options_to_framework",
    "response_from_framework",
    "response_to_framework",
    "update_from_framework",
    "update_to_framework",
]
