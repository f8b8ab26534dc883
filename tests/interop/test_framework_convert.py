"""Messages, responses and updates cross between agent_nb and Agent Framework (the real package) without loss."""

from __future__ import annotations

import json

import agent_framework as maf
import pytest

from agent_nb import Message
from agent_nb.contents import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UriContent,
    UserInputRequestContent,
    UserInputResponseContent,
)
from agent_nb.errors import ArgumentError
from agent_nb.interop.agent_framework import (
    agent_response_from_framework,
    agent_response_to_framework,
    messages_from_framework,
    messages_to_framework,
    response_from_framework,
    response_to_framework,
    update_from_framework,
    update_to_framework,
)
from agent_nb.interop.agent_framework.convert import usage_from_framework, usage_to_framework
from agent_nb.messages import AgentResponse, ChatResponse, ChatResponseUpdate, Usage

CALL = FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Oslo"})


def conversation() -> list[Message]:
    return [
        Message("system", "Answer briefly."),
        Message("user", "Weather in Oslo?", author_name="user", message_id="m1"),
        Message("assistant", ["Let me look.", CALL], author_name="planner", message_id="m2"),
        Message("tool", [FunctionResultContent(call_id="c1", result={"temperature": 18, "sky": ["clear"]})]),
        Message("tool", [FunctionResultContent(call_id="c2", result="plain text")]),
        Message("tool", [FunctionResultContent(call_id="c3", exception="TimeoutError: no answer")]),
        Message(
            "assistant",
            [UserInputRequestContent(request_id="r1", prompt="Book it?", options=("yes", "no"), function_call=CALL)],
        ),
        Message("user", [UserInputResponseContent(request_id="r1", approved=True, text="go ahead")]),
        Message("assistant", [UserInputRequestContent(request_id="r2", prompt="Which day?")]),
        Message("user", [UserInputResponseContent(request_id="r2", text="Sunday")]),
        Message(
            "user",
            [
                DataContent(data=b"\x89PNG\r\n", media_type="image/png"),
                UriContent(uri="https://example.org/a.png", media_type="image/png"),
            ],
        ),
    ]


def test_a_conversation_of_every_content_crosses_to_agent_framework_and_back_unchanged() -> None:
    messages = conversation()
    crossed = messages_to_framework(messages)
    assert [[c.type for c in m.contents] for m in crossed] == [
        ["text"],
        ["text"],
        ["text", "function_call"],
        ["function_result"],
        ["function_result"],
        ["function_result"],
        ["function_approval_request"],
        ["function_approval_response"],  # the call it approves was asked above: Agent Framework's answer names it
        ["text"],  # an input request that approves no call: its prompt as text, itself kept beside
        ["text"],
        ["data", "uri"],
    ]
    assert crossed[1].author_name == "user" and crossed[1].message_id == "m1"
    assert crossed[3].contents[0].result == json.dumps({"temperature": 18, "sky": ["clear"]})  # Agent Framework's text
    assert crossed[7].contents[0].function_call.name == "weather" and crossed[7].contents[0].approved is True
    assert crossed[8].text == "Which day?"
    assert messages_from_framework(crossed) == messages


def test_agent_framework_messages_cross_to_agent_nb_and_back_as_they_were() -> None:
    call = maf.Content.from_function_call("c9", "lookup", arguments='{"q": "tides"}')
    native = [
        maf.Message("user", ["Tides in Brest?"], author_name="sailor", message_id="u1"),
        maf.Message("assistant", [call], author_name="navigator"),
        maf.Message("tool", [maf.Content.from_function_result("c9", result="high at 14:02")]),
        maf.Message("assistant", [maf.Content.from_function_approval_request("a1", call)]),
        maf.Message("user", [maf.Content.from_function_approval_response(False, "a1", call)]),
        maf.Message("user", [maf.Content.from_data(data=b"\x00\x01", media_type="application/octet-stream")]),
    ]
    ours = messages_from_framework(native)
    assert ours[1].contents[0] == FunctionCallContent(call_id="c9", name="lookup", arguments='{"q": "tides"}')
    assert ours[2].contents[0].result == "high at 14:02"
    assert ours[3].contents[0].function_call.call_id == "c9" and ours[4].contents[0].approved is False
    assert ours[5].contents[0].data == b"\x00\x01"
    back = messages_to_framework(ours)
    assert [m.to_dict() for m in back] == [m.to_dict() for m in native]


def test_usage_route_repairs_and_finish_reason_cross_with_responses_and_updates() -> None:
    usage = Usage(input_tokens=12, output_tokens=5)
    response = ChatResponse(
        [Message("assistant", "Sunny.", author_name="forecaster")],
        response_id="resp-1",
        model="small",
        usage=usage,
        route="fast",
        repairs=("a tool call without its result was dropped",),
        finish_reason="stop",
    )
    crossed = response_to_framework(response)
    assert crossed.usage_details == {"input_token_count": 12, "output_token_count": 5, "total_token_count": 17}
    assert crossed.messages[0].additional_properties["agent_nb"]["route"] == "fast"  # kept where agents keep things
    assert response_from_framework(crossed)[0] == response

    update = ChatResponseUpdate(["Sun"], author_name="forecaster", model="small", usage=usage, route="fast")
    crossed_update = update_to_framework(update)
    assert [c.type for c in crossed_update.contents] == ["text", "usage"]  # usage streams as a content there
    assert update_from_framework(crossed_update)[0] == update

    answer = AgentResponse([Message("assistant", "Sunny.", author_name="forecaster")], usage=usage, route="smart")
    assert agent_response_from_framework(agent_response_to_framework(answer))[0] == answer


def test_a_content_agent_nb_cannot_hold_is_refused_naming_it_unless_it_may_be_dropped() -> None:
    thinking = maf.Message(
        "assistant", [maf.Content.from_text_reasoning(text="The user wants…"), "It is sunny."], author_name="forecaster"
    )
    with pytest.raises(
        ArgumentError,
        match=r"assistant message of 'forecaster': its 'text_reasoning' content has no agent_nb counterpart.*unsupported='drop'",
    ):
        messages_from_framework([thinking])
    response = maf.ChatResponse(messages=[thinking])
    converted, seen = response_from_framework(response, unsupported="drop")
    assert converted.text == "It is sunny."
    assert seen.dropped == {"text_reasoning": 1}
    assert "1 text_reasoning" in (seen.note() or "")


def test_a_role_agent_nb_does_not_have_is_refused_with_the_roles_it_has() -> None:
    with pytest.raises(ArgumentError, match=r"role.*'developer'.*one of system, user, assistant, tool"):
        messages_from_framework([maf.Message("developer", ["be terse"])])
    with pytest.raises(ArgumentError, match="'refuse' or 'drop'"):
        messages_from_framework([], unsupported="keep")  # type: ignore[arg-type]


def test_an_approval_answer_names_its_call_when_the_request_is_known_elsewhere() -> None:
    answer = [Message("user", [UserInputResponseContent(request_id="r1", approved=True)])]
    alone = messages_to_framework(answer)
    assert alone[0].contents[0].type == "text"  # no call known: it crosses as it is, nothing invented
    assert messages_from_framework(alone) == answer
    known = messages_to_framework(answer, asked={"r1": CALL})
    assert known[0].contents[0].type == "function_approval_response"
    assert known[0].contents[0].function_call.arguments == {"city": "Oslo"}


def test_every_additional_property_of_a_message_and_its_contents_crosses_both_ways() -> None:
    extra = {"trace_id": "t-1", "scores": [0.5, {"kind": "toxicity"}]}
    call = FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Oslo"}, additional_properties={"x": 1})
    ours = [
        Message(
            "assistant",
            [TextContent("Let me look.", additional_properties={"cited": True}), call],
            author_name="planner",
            additional_properties=extra,
        ),
        Message(
            "tool", [FunctionResultContent(call_id="c1", result={"t": 18}, additional_properties={"cache": "hit"})]
        ),
        Message(
            "assistant",
            [
                UserInputRequestContent(
                    request_id="r1", prompt="Go?", function_call=call, additional_properties={"y": 2}
                )
            ],
        ),
        Message("user", [UserInputResponseContent(request_id="r2", text="Sunday", additional_properties={"z": None})]),
    ]
    crossed = messages_to_framework(ours)
    assert crossed[0].additional_properties == extra  # where Agent Framework's own code reads it
    assert crossed[0].contents[0].additional_properties == {"cited": True}
    assert crossed[0].contents[1].additional_properties == {"x": 1}
    assert crossed[1].contents[0].additional_properties == {"cache": "hit", "agent_nb": {"result": {"t": 18}}}
    assert crossed[2].contents[0].function_call.additional_properties == {"x": 1}
    assert messages_from_framework(crossed) == ours

    call = maf.Content.from_function_call("c9", "lookup", arguments="{}", additional_properties={"provider_id": "p9"})
    native = [
        maf.Message(
            "user", [maf.Content.from_text("hi", additional_properties={"lang": "en"})], additional_properties={"n": 1}
        ),
        maf.Message("assistant", [call], additional_properties={"thread": {"id": 7, "tags": ["a"]}}),
        maf.Message("tool", [maf.Content.from_function_result("c9", result="ok", additional_properties={"ms": 12})]),
        maf.Message(
            "user",
            [
                maf.Content.from_uri(
                    "https://example.org/a.png", media_type="image/png", additional_properties={"alt": "a"}
                )
            ],
        ),
    ]
    back = messages_to_framework(messages_from_framework(native))
    assert [m.to_dict() for m in back] == [m.to_dict() for m in native]


def test_a_value_that_is_not_json_is_refused_naming_its_message_and_key() -> None:
    odd = maf.Message("user", ["hi"], author_name="sailor", additional_properties={"client": object()})
    with pytest.raises(ArgumentError, match=r"user message of 'sailor'.*additional_properties.client"):
        messages_from_framework([odd])
    odd = maf.Message("user", [maf.Content.from_text("hi", additional_properties={"raw": object()})])
    with pytest.raises(ArgumentError, match=r"user message, its 'text' content.*additional_properties.raw"):
        messages_from_framework([odd])


def test_every_usage_count_crosses_both_ways() -> None:
    details = {
        "input_token_count": 120,
        "output_token_count": 40,
        "total_token_count": 190,  # reasoning counted apart: not input + output
        "cache_read_input_token_count": 100,
        "reasoning_output_token_count": 30,
        "provider_special_count": 7,
    }
    ours = usage_from_framework(details)
    assert ours == Usage(
        input_tokens=120,
        output_tokens=40,
        total=190,
        details={"cache_read_input_token_count": 100, "reasoning_output_token_count": 30, "provider_special_count": 7},
    )
    assert ours.total_tokens == 190 and usage_to_framework(ours) == details
    response = ChatResponse([Message("assistant", "Sunny.")], usage=ours)
    assert response_from_framework(response_to_framework(response))[0] == response
    summed = ours + Usage(input_tokens=1, output_tokens=1, details={"cache_read_input_token_count": 1})
    assert summed.total_tokens == 192 and summed.details["cache_read_input_token_count"] == 101
    plain = usage_from_framework({"input_token_count": 3, "output_token_count": 4, "total_token_count": 7})
    assert plain == Usage(input_tokens=3, output_tokens=4)  # a total that is their sum is said once
