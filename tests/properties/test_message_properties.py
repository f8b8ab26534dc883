"""Messages and contents: JSON round trips (alone, in lists, through every history provider),
frozen values, lone surrogates refused, and a streamed answer equal to the whole one.

Found here, and fixed: a lone surrogate was refused only in text contents, while every other
string field (``author_name``, ``message_id``, call ids, tool names, arguments, results, URIs,
prompts, ...) took one and the message then could not be written as JSON; and a history loaded
from a session's dicts was not checked at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from pydantic import TypeAdapter
from strategies import (
    ROLES,
    any_text,
    contents,
    examples,
    message_lists,
    messages,
    names,
    surrogate_text,
    text,
)

from agent_nb import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    ArgumentError,
    ChatResponse,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HistoryError,
    InMemoryHistoryProvider,
    Message,
    ScriptedChatClient,
    SQLiteHistoryProvider,
    TextContent,
    UriContent,
    UserInputRequestContent,
    UserInputResponseContent,
)

MESSAGES = TypeAdapter(list[Message])


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- 1. JSON round trips ------------------------------------------------------------------------


@examples(100)
@given(messages)
def test_a_message_is_equal_to_itself_after_a_json_round_trip(message: Message) -> None:
    dumped = message.model_dump_json()
    if len(dumped) > 50_000:
        event("a huge message")
    assert Message.model_validate_json(dumped) == message
    assert Message.model_validate(json.loads(dumped)) == message  # through the standard library's JSON
    assert Message.model_validate(message.model_dump(mode="json")) == message  # as InMemoryHistoryProvider stores it


@examples(60)
@given(message_lists)
def test_a_list_of_messages_is_equal_to_itself_after_a_json_round_trip(items: list[Message]) -> None:
    assert MESSAGES.validate_json(MESSAGES.dump_json(items)) == items


@examples(40)
@given(
    message_lists, st.none() | st.builds(dict, input_tokens=st.integers(0, 10**6), output_tokens=st.integers(0, 10**6))
)
def test_a_response_is_equal_to_itself_after_a_json_round_trip(items: list[Message], usage: Any) -> None:
    response = AgentResponse(items, response_id="r1", model="m", route="fast", repairs=("x",), usage=usage)
    assert AgentResponse.model_validate_json(response.model_dump_json()) == response
    chat = ChatResponse(items, finish_reason="stop")
    assert ChatResponse.model_validate_json(chat.model_dump_json()) == chat


@examples(25)
@given(st.lists(message_lists, min_size=1, max_size=3), st.integers(0, 2))
def test_the_in_memory_history_gives_back_what_was_saved_also_after_the_session_went_through_json(
    turns: list[list[Message]], shared: int
) -> None:
    async def check() -> None:
        history = InMemoryHistoryProvider()
        session = AgentSession("s")
        for turn in turns:
            await history.save(session, turn)
        saved = [m for turn in turns for m in turn]
        assert await history.load(session) == saved
        again = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))  # another process
        assert await InMemoryHistoryProvider().load(again) == saved

    run(check())


@examples(25)
@given(st.lists(st.tuples(st.sampled_from(["s1", "s2", "s 3"]), message_lists), min_size=1, max_size=4))
def test_the_sqlite_history_gives_back_what_was_saved_to_another_provider_on_the_same_file(
    writes: list[tuple[str, list[Message]]],
) -> None:
    async def check(path: Path) -> None:
        sessions = {sid: AgentSession(sid) for sid, _ in writes}
        expected: dict[str, list[Message]] = {sid: [] for sid in sessions}
        with SQLiteHistoryProvider(path) as history:
            for sid, turn in writes:
                await history.save(sessions[sid], turn)
                expected[sid].extend(turn)
                assert await history.load(sessions[sid]) == expected[sid]  # the cached path
        with SQLiteHistoryProvider(path) as reopened:  # the file alone
            for sid, saved in expected.items():
                assert await reopened.load(AgentSession(sid)) == saved
        with contextlib.closing(sqlite3.connect(path)) as db:  # a connection of our own counts the rows
            (rows,) = db.execute("SELECT COUNT(*) FROM agent_nb_messages").fetchone()
        assert rows == sum(len(ms) for ms in expected.values())

    with tempfile.TemporaryDirectory() as directory:
        run(check(Path(directory) / "history.sqlite"))


# -- frozen values --------------------------------------------------------------------------


@examples(40)
@given(messages, st.sampled_from(["role", "contents", "author_name", "message_id"]))
def test_a_message_cannot_be_changed(message: Message, field: str) -> None:
    before = message.model_dump_json()
    with pytest.raises((pydantic.ValidationError, TypeError, AttributeError)):
        setattr(message, field, None)
    assert isinstance(message.contents, tuple)
    for content in message.contents:
        with pytest.raises((pydantic.ValidationError, TypeError, AttributeError)):
            content.type = "text"  # type: ignore[misc]
    assert message.model_dump_json() == before


# -- lone surrogates -------------------------------------------------------------------------


@examples(60)
@given(surrogate_text(), st.sampled_from(ROLES), st.sampled_from(["content", "message", "message list", "update"]))
def test_a_text_with_a_lone_surrogate_is_refused_with_an_argument_error(bad: str, role: str, how: str) -> None:
    make = {
        "content": lambda: TextContent(bad),
        "message": lambda: Message(role, bad),
        "message list": lambda: Message(role, ["fine", bad]),
        "update": lambda: AgentResponseUpdate([bad]),
    }[how]
    with pytest.raises(ArgumentError) as refused:
        make()
    assert isinstance(refused.value, (TypeError, ValueError))
    assert "lone surrogate" in str(refused.value)


def _with_surrogate(field: str, bad: str) -> Message:
    """A message whose ``field`` (anything but a text content) holds ``bad``."""
    call = FunctionCallContent(call_id="c1", name="f")
    build: dict[str, Any] = {
        "author_name": lambda: Message("user", "x", author_name=bad),
        "message_id": lambda: Message("user", "x", message_id=bad),
        "call_id": lambda: Message("assistant", [FunctionCallContent(call_id=bad, name="f")]),
        "tool name": lambda: Message("assistant", [FunctionCallContent(call_id="c1", name=bad)]),
        "arguments": lambda: Message("assistant", [FunctionCallContent(call_id="c1", name="f", arguments={"q": bad})]),
        "result": lambda: Message("tool", [FunctionResultContent(call_id="c1", result=[bad])]),
        "exception": lambda: Message("tool", [FunctionResultContent(call_id="c1", exception=bad)]),
        "prompt": lambda: Message(
            "assistant", [UserInputRequestContent(request_id="r", prompt=bad, function_call=call)]
        ),
        "answer": lambda: Message("user", [UserInputResponseContent(request_id="r", text=bad)]),
        "uri": lambda: Message("user", [UriContent(uri=bad)]),
        "media_type": lambda: Message("user", [DataContent(data=b"x", media_type=bad)]),
    }
    return build[field]()


SURROGATE_FIELDS = [
    "author_name", "message_id", "call_id", "tool name", "arguments", "result", "exception", "prompt", "answer", "uri",
    "media_type",
]  # fmt: skip


@examples(60)
@given(st.sampled_from(SURROGATE_FIELDS), surrogate_text())
def test_a_lone_surrogate_anywhere_is_refused_or_the_message_still_round_trips(field: str, bad: str) -> None:
    """The invariant: a message either cannot be made, or can be written as JSON and read back."""
    try:
        message = _with_surrogate(field, bad)
    except ArgumentError:
        return
    assert Message.model_validate_json(message.model_dump_json()) == message


@pytest.mark.parametrize("field", SURROGATE_FIELDS)
def test_a_lone_surrogate_in_any_field_is_refused_naming_it(field: str) -> None:
    with pytest.raises(ArgumentError, match="lone surrogate"):
        _with_surrogate(field, "a\ud800b")


def test_a_stored_history_with_a_lone_surrogate_is_refused_on_load_and_left_as_it_was() -> None:
    """``json.loads`` turns an escaped surrogate into one; loading it is refused, naming the message."""
    stored = json.loads('{"session_id": "s", "state": {"history": [{"role": "user", "contents": [{"type": "text", '
                        '"text": "fine"}]}, {"role": "user", "contents": [{"type": "text", "text": "half \\ud83d emoji"}]}]}}')  # fmt: skip
    session = AgentSession.from_dict(stored)
    before = json.loads(json.dumps(session.state, ensure_ascii=True))
    with pytest.raises(HistoryError, match=r"session 's' under state\['history'\]: message 1 holds a lone surrogate"):
        run(InMemoryHistoryProvider().load(session))
    assert json.loads(json.dumps(session.state, ensure_ascii=True)) == before


# -- a streamed answer is the whole answer -----------------------------------------------------


@examples(60)
@given(
    st.lists(st.one_of(st.builds(TextContent, any_text), contents), max_size=4),
    st.none() | names,
    st.integers(1, 2),
)
def test_an_offline_stream_adds_up_to_the_whole_answer(parts: list[Any], author: str | None, count: int) -> None:
    replies = [Message("assistant", parts, author_name=author, message_id=f"m{i}") for i in range(count)]
    answer = ChatResponse(replies, finish_reason="stop")

    async def both() -> tuple[ChatResponse, ChatResponse]:
        whole = await ScriptedChatClient([answer]).get_response([Message("user", "hi")])
        updates = [u async for u in ScriptedChatClient([answer]).get_streaming_response([Message("user", "hi")])]
        return whole, ChatResponse.from_updates(updates)

    whole, streamed = run(both())
    assert streamed.text == whole.text
    non_text = [[c for c in m.contents if c.type != "text"] for m in whole.messages]
    assert [c for m in streamed.messages for c in m.contents if c.type != "text"] == [c for cs in non_text for c in cs]
    assert all(m.author_name == author for m in streamed.messages)


@examples(30)
@given(text)
def test_text_of_a_message_is_its_text_contents_joined(first: str) -> None:
    message = Message("user", [first, FunctionCallContent(call_id="c", name="f"), first])
    assert message.text == f"{first} {first}"


# -- the constructor's own path for the common shape --------------------------------------------


@given(
    st.sampled_from(ROLES),
    st.lists(st.one_of(any_text, contents), max_size=4),
    st.sampled_from([list, tuple]),
    st.none() | any_text,
    st.none() | any_text,
    st.booleans(),
)
def test_a_message_made_by_its_constructor_is_the_one_pydantic_validates(
    role: str, items: list[Any], form: type, author: str | None, message_id: str | None, name_them: bool
) -> None:
    """``Message(role, contents, author_name=...)`` is made without pydantic's validation; nothing may tell."""
    keywords = {"author_name": author, "message_id": message_id} if name_them else {}
    made = Message(role, form(items), **keywords)
    validated = Message.model_validate(
        {
            "role": role,
            "contents": [TextContent.model_validate({"text": i}) if isinstance(i, str) else i for i in items],
            **keywords,
        }
    )
    assert made == validated
    with contextlib.suppress(TypeError):  # a content holding a dict (a call's arguments) is unhashable either way
        assert hash(made) == hash(validated)
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert made.model_dump_json() == validated.model_dump_json()
    assert Message.model_validate_json(made.model_dump_json()) == made
    assert all(type(c) is type(v) for c, v in zip(made.contents, validated.contents, strict=True))
    assert made.contents == validated.contents and [c.model_fields_set for c in made.contents] == [
        c.model_fields_set for c in validated.contents
    ]
    with pytest.raises(pydantic.ValidationError):
        made.role = "user"  # type: ignore[misc]


@given(st.sampled_from(ROLES), surrogate_text(), st.sampled_from(["text", "author_name", "message_id"]))
def test_the_constructors_own_path_refuses_a_lone_surrogate_as_the_full_one_does(
    role: str, bad: str, where: str
) -> None:
    with pytest.raises(ArgumentError, match="lone surrogate"):
        if where == "text":
            Message(role, ["fine", bad])
        else:
            Message(role, ["fine"], **{where: bad})


@given(message_lists, st.sampled_from([list, tuple]), st.sampled_from(["agent", "chat"]))
def test_a_response_made_by_its_constructor_is_the_one_pydantic_validates(
    messages: list[Message], form: type, kind: str
) -> None:
    model = AgentResponse if kind == "agent" else ChatResponse
    made, validated = model(form(messages)), model.model_validate({"messages": messages})
    assert made == validated and type(made) is model
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_dump_json() == validated.model_dump_json()
    assert model.model_validate_json(made.model_dump_json()) == made

    class Longer(model):  # type: ignore[misc, valid-type]
        note: str = "a field of its own"

    longer = Longer(form(messages))  # a subclass goes through pydantic: its own fields get their defaults
    assert longer.note == "a field of its own" and longer.messages == made.messages


@given(messages, st.sampled_from(ROLES))
def test_a_message_under_another_role_is_the_one_pydantic_would_copy(message: Message, role: str) -> None:
    before = message.model_dump_json()
    moved, copied = message.with_role(role), message.model_copy(update={"role": role})  # type: ignore[arg-type]
    assert moved == copied and moved.role == role and type(moved) is Message
    assert moved.model_fields_set == copied.model_fields_set | {"role"}
    assert moved.model_dump_json() == copied.model_dump_json()
    assert message.model_dump_json() == before  # the original unchanged


def test_a_subclass_of_a_message_or_a_text_gets_its_own_fields() -> None:
    class Noted(Message):
        note: str = "kept"

    class Marked(TextContent):
        mark: int = 7

    assert Noted("user", ["hi"], author_name="ann").note == "kept"
    assert Marked("hi").mark == 7
    assert Noted("user", ["hi"]).with_role("assistant").note == "kept"
