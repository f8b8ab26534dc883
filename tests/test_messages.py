from typing import Any

import pytest
from pydantic import ValidationError

from agent_nb import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    TextContent,
    UriContent,
    Usage,
    UserInputRequestContent,
    UserInputResponseContent,
)
from agent_nb.messages import estimate_tokens, to_messages


def test_positional_and_keyword_forms_are_equal():
    assert Message("user", ["hi"]) == Message(role="user", contents=["hi"])
    assert Message("user", "hi").contents == (TextContent("hi"),)


def test_text_joins_text_contents_and_skips_others():
    m = Message("assistant", ["a", FunctionCallContent(call_id="1", name="f"), "b"])
    assert m.text == "a b"
    assert Message("assistant", []).text == ""


@pytest.mark.parametrize("role", ["bot", "User", "", None])
def test_unknown_role_names_the_allowed_roles(role):
    with pytest.raises(ValueError) as info:
        Message(role=role, contents=["x"])
    for allowed in ("system", "user", "assistant", "tool"):
        assert allowed in str(info.value)


def test_a_missing_role_names_the_allowed_roles_too():
    with pytest.raises(ValueError, match=r"Message: role=None \(NoneType\) is not accepted; use one of: system, user"):
        Message(None, "x")


def test_a_dict_is_not_a_list_of_messages():
    with pytest.raises(TypeError, match=r"messages=\{'role': 'user'\} \(dict\) is not accepted; give a str, a Message"):
        to_messages({"role": "user"})


def test_messages_are_frozen():
    m = Message("user", "hi")
    with pytest.raises(ValidationError):
        m.role = "assistant"  # type: ignore[misc]
    assert isinstance(m.contents, tuple)


def test_unknown_content_type_from_json_is_a_clear_error():
    with pytest.raises(ValueError, match=r"'hologram' .* expected tags: 'text', 'function_call'"):
        Message.model_validate_json('{"role": "user", "contents": [{"type": "hologram"}]}')


EVERY_CONTENT = [
    TextContent("hello"),
    FunctionCallContent(call_id="c1", name="lookup", arguments={"city": "Lisbon", "days": [1, 2]}),
    FunctionCallContent(call_id="c2", name="raw", arguments='{"not": "parsed"'),
    FunctionResultContent(call_id="c1", result={"temp": 18.5, "ok": True}),
    FunctionResultContent(call_id="c2", exception="ValueError: bad"),
    UserInputRequestContent(
        request_id="r1", prompt="Approve?", function_call=FunctionCallContent(call_id="c3", name="pay")
    ),
    UserInputResponseContent(request_id="r1", text="yes", approved=True),
    DataContent(data=b"\x89PNG\x00\xff", media_type="image/png"),
    UriContent(uri="https://example.org/a.pdf", media_type="application/pdf"),
]


@pytest.mark.parametrize("content", EVERY_CONTENT, ids=lambda c: c.type)
def test_every_content_round_trips_through_json(content):
    m = Message("assistant", [content], author_name="a", message_id="m1")
    back = Message.model_validate_json(m.model_dump_json())
    assert back == m
    assert type(back.contents[0]) is type(content)


def test_responses_and_updates_round_trip():
    response = AgentResponse(
        [Message("assistant", EVERY_CONTENT, author_name="a")],
        response_id="r",
        model="mirror",
        usage=Usage(input_tokens=3, output_tokens=4),
    )
    assert AgentResponse.model_validate_json(response.model_dump_json()) == response
    update = AgentResponseUpdate(["par"], author_name="a", usage=Usage(output_tokens=1))
    assert AgentResponseUpdate.model_validate_json(update.model_dump_json()) == update
    chat = ChatResponse([Message("assistant", "x")], finish_reason="stop")
    assert ChatResponse.model_validate_json(chat.model_dump_json()) == chat


def test_response_text_and_update_text():
    r = AgentResponse([Message("assistant", "one"), Message("assistant", "two")])
    assert r.text == "one\ntwo"
    assert AgentResponseUpdate(["Hel", "lo"]).text == "Hello"


def test_from_updates_groups_by_message_and_joins_adjacent_text():
    call = FunctionCallContent(call_id="1", name="f")
    updates = [
        AgentResponseUpdate(["Hel"], author_name="a", usage=Usage(input_tokens=2)),
        AgentResponseUpdate(["lo"], author_name="a"),
        AgentResponseUpdate([call], author_name="a", usage=Usage(output_tokens=3)),
        AgentResponseUpdate(["bye"], author_name="b"),
        AgentResponseUpdate(["result"], role="tool", author_name="b"),
    ]
    r = AgentResponse.from_updates(updates)
    assert [(m.role, m.author_name, m.contents) for m in r.messages] == [
        ("assistant", "a", (TextContent("Hello"), call)),
        ("assistant", "b", (TextContent("bye"),)),
        ("tool", "b", (TextContent("result"),)),
    ]
    assert r.usage == Usage(input_tokens=2, output_tokens=3)
    assert AgentResponse.from_updates([]).messages == ()


def test_repr_is_short_and_leaves_out_defaults():
    assert repr(Message("user", "hi")) == "Message('user', 'hi')"
    long = repr(Message("assistant", "word " * 100, author_name="w"))
    assert len(long) < 110 and long.endswith("author_name='w')")


def test_to_messages_normalises_input():
    m = Message("assistant", "x")
    assert to_messages("hi") == [Message("user", "hi")]
    assert to_messages(m) == [m]
    assert to_messages(["a", m]) == [Message("user", "a"), m]
    assert to_messages(None) == []
    with pytest.raises(TypeError, match=r"messages=3 \(int\) is not accepted; give a str, a Message, or a list"):
        to_messages(["a", 3])  # type: ignore[list-item]


def test_estimate_tokens_is_deterministic():
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens([Message("user", "abcd")]) == 1 + 3


def test_estimate_tokens_counts_every_content_of_a_message_before_rounding_up():
    call = FunctionCallContent(call_id="1", name="lookup", arguments='{"q": "x"}')  # 6 + 10 characters
    assert estimate_tokens([Message("user", "abcde")]) == 2 + 3  # 5 characters: 2 tokens, rounded up
    assert estimate_tokens([Message("assistant", ["ab", call, "abc"])]) == 6 + 3  # 21 characters together
    assert estimate_tokens([Message("assistant", [])]) == 3  # a message costs its framing
    assert estimate_tokens([Message("user", "a"), Message("user", "a")]) == 2 * (1 + 3)  # rounded per message


def test_a_long_stream_is_joined_once_not_word_by_word(monkeypatch: Any) -> None:
    """Aggregating a stream makes one text per run of pieces: a 5,000-word answer must not cost 5,000 texts."""
    from agent_nb.contents import TextContent
    from agent_nb.messages import ChatResponse, ChatResponseUpdate

    updates = [ChatResponseUpdate([f"word{i} "], role="assistant", author_name="a") for i in range(5000)]
    made = []
    real = TextContent.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(TextContent, "__init__", counted)
    answer = ChatResponse.from_updates(updates)
    assert answer.text == "".join(f"word{i} " for i in range(5000))
    assert len(made) <= 2  # the joined text (and the message's own check of it), not one per piece
