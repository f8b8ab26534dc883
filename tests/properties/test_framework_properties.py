"""Every agent_nb message, and every usage, crosses to Agent Framework and back unchanged, whatever it holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from strategies import examples, message_lists, text

from agent_nb.interop.agent_framework import messages_from_framework, messages_to_framework
from agent_nb.interop.agent_framework.convert import usage_from_framework, usage_to_framework
from agent_nb.messages import Usage

counts = st.integers(min_value=0, max_value=10**9)
usages = st.builds(
    Usage,
    input_tokens=counts,
    output_tokens=counts,
    total=st.none() | counts,
    details=st.none() | st.dictionaries(text.filter(lambda k: not k.endswith("put_token_count")), counts, min_size=1),
)


@examples(150)
@given(message_lists)
def test_any_conversation_crosses_to_agent_framework_and_back_unchanged(messages: list) -> None:
    crossed = messages_to_framework(messages)
    assert [m.role for m in crossed] == [m.role for m in messages]
    assert messages_from_framework(crossed) == messages


@examples(150)
@given(message_lists)
def test_every_additional_property_crosses_to_agent_framework_where_its_users_find_it(messages: list) -> None:
    for ours, theirs in zip(messages, messages_to_framework(messages), strict=True):
        assert theirs.additional_properties == (ours.additional_properties or {})


@examples(150)
@given(usages)
def test_any_usage_crosses_to_agent_framework_and_back_with_every_count(usage: Usage) -> None:
    crossed = usage_to_framework(usage)
    assert crossed is not None and crossed["total_token_count"] == usage.total_tokens
    back = usage_from_framework(crossed)
    assert back is not None and back.total_tokens == usage.total_tokens and back.details == usage.details
    if usage.total is None or usage.total != usage.input_tokens + usage.output_tokens:
        assert back == usage  # a total equal to input + output is said once, as their sum
