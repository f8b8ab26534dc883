import pytest

from agent_nb import (
    ChatClient,
    ChatResponse,
    EchoChatClient,
    FunctionCallContent,
    FunctionChatClient,
    Message,
    MirrorChatClient,
    ScriptedChatClient,
    ScriptExhausted,
)
from agent_nb.messages import ChatResponseUpdate

Q = [Message("system", "Be brief."), Message("user", "What is the plan for today?")]


async def collect(client, messages):
    return [u async for u in client.get_streaming_response(messages)]


@pytest.mark.parametrize(
    "client", [EchoChatClient(), MirrorChatClient(), ScriptedChatClient(["a"]), FunctionChatClient(lambda m, o: "x")]
)
def test_every_offline_client_meets_the_protocol(client):
    assert isinstance(client, ChatClient)


async def test_echo_answers_with_the_last_user_text():
    r = await EchoChatClient().get_response([*Q, Message("assistant", "ok"), Message("user", "again")])
    assert r.text == "again" and r.messages[0].role == "assistant" and r.model == "echo"
    assert (await EchoChatClient().get_response([Message("system", "x")])).text == "(no user message to echo)"


async def test_mirror_describes_exactly_what_it_received():
    given = [*Q, Message("user", "Plan it", author_name="planner"), Message("assistant", "Done.", author_name="me")]
    r = await MirrorChatClient().get_response(given)
    assert r.text == (
        'I see 4 messages: system "Be brief." · user "What is the plan for…" · '
        'user from planner "Plan it" · assistant from me "Done."'
    )
    assert (await MirrorChatClient().get_response([])).text == "I see 0 messages."


async def test_mirror_shows_tool_calls_and_results():
    from agent_nb import FunctionResultContent

    given = [
        Message("assistant", [FunctionCallContent(call_id="c1", name="weather")]),
        Message("tool", [FunctionResultContent(call_id="c1", result=18)]),
    ]
    r = await MirrorChatClient(words=2).get_response(given)
    assert r.text == 'I see 2 messages: assistant "" calls weather · tool "" answers c1'


async def test_scripted_answers_in_order_and_records_requests():
    call = Message("assistant", [FunctionCallContent(call_id="1", name="f", arguments={"x": 1})])
    client = ScriptedChatClient(["first", call])
    assert (await client.get_response(Q, {"temperature": 0})).text == "first"
    assert (await client.get_response(Q)).messages[0] == call
    assert client.used == 2
    assert client.requests[0] == (Q, {"temperature": 0})


async def test_scripted_running_out_says_how_many_were_scripted_and_used():
    client = ScriptedChatClient(["only"])
    await client.get_response(Q)
    with pytest.raises(ScriptExhausted, match=r"scripted with 1 reply and all 1 was used; request 2") as info:
        await client.get_response(Q)
    assert (info.value.scripted, info.value.used) == (1, 1)
    assert client.used == 1


async def test_function_client_accepts_sync_and_async_functions():
    async def shout(messages, options):
        return messages[-1].text.upper()

    assert (await FunctionChatClient(shout).get_response(Q)).text == "WHAT IS THE PLAN FOR TODAY?"
    whole = ChatResponse([Message("assistant", "as is")], model="mine")
    assert (await FunctionChatClient(lambda m, o: whole).get_response(Q)) is whole


async def test_function_client_rejects_other_return_types():
    def bad(messages, options):
        return 42

    with pytest.raises(TypeError, match="function 'bad' of FunctionChatClient returned int"):
        await FunctionChatClient(bad).get_response(Q)


@pytest.mark.parametrize("client", [EchoChatClient(), MirrorChatClient(), ScriptedChatClient(["one two  three"])])
async def test_streams_word_by_word_and_aggregates_to_the_same_answer(client):
    whole = await type(client)().get_response(Q) if not isinstance(client, ScriptedChatClient) else None
    updates = await collect(client, Q)
    assert all(isinstance(u, ChatResponseUpdate) for u in updates)
    words = [u.text for u in updates]
    assert all(len(w.split()) == 1 for w in words)
    text = "".join(words)
    assert text == (whole.text if whole else "one two  three")
    assert updates[-1].usage is not None and updates[-1].finish_reason == "stop"


async def test_stream_of_a_tool_call_ends_with_the_call():
    call = FunctionCallContent(call_id="1", name="f")
    client = ScriptedChatClient([Message("assistant", ["let me check", call])])
    updates = await collect(client, Q)
    assert [u.text for u in updates] == ["let", " me", " check", ""]
    assert updates[-1].contents == (call,)


async def test_usage_is_estimated_offline():
    r = await EchoChatClient().get_response(Q)
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
