"""Every agent_nb message crosses to Agent Framework and back unchanged, whatever it holds."""

from __future__ import annotations

from hypothesis import given
from strategies import examples, message_lists

from agent_nb.interop.agent_framework import messages_from_framework, messages_to_framework


@examples(150)
@given(message_lists)
def test_any_conversation_crosses_to_agent_framework_and_back_unchanged(messages: list) -> None:
    crossed = messages_to_framework(messages)
    assert [m.role for m in crossed] == [m.role for m in messages]
    assert messages_from_framework(crossed) == messages
