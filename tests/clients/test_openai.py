"""The OpenAI clients against the SDK's own HTTP hook: exact payloads, real-shaped answers, no network."""

import json

import pytest
from openai import AsyncOpenAI

try:  # the SDK's own HTTP library: httpx2 since openai 3, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from agent_nb import (
    AgentSession,
    ChatAgent,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
    UsageError,
)
from agent_nb.clients.openai import OpenAIChatClient, OpenAIResponsesClient, import_conversation
from agent_nb.errors import ServiceManagedHistoryError
from agent_nb.routing import RoutingChatClient

KEY = "sk-test-SECRET-0123456789abcdef"

# These clients talk to the SDK's mock transport, not to a network; the plugin cannot tell.
pytestmark = pytest.mark.allow_model_calls


class Server:
    """An httpx MockTransport that answers like an OpenAI server and keeps every request."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, httpx.Response):
            return answer
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, list):  # server-sent events
            body = "".join(f"data: {json.dumps(e)}\n\n" for e in answer) + "data: [DONE]\n\n"
            return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=answer)

    def sdk(self) -> AsyncOpenAI:
        return AsyncOpenAI(
            api_key=KEY,
            base_url="http://model.test/v1",
            max_retries=0,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self)),
        )

    def body(self, i: int = -1) -> dict:
        return json.loads(self.requests[i].content)


def completion(content="Hello!", tool_calls=None, finish="stop"):
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gemma-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }  # fmt: skip


def chunk(delta, finish=None, usage=None):
    return {
        "id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1, "model": "gemma-test",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": usage,
    }  # fmt: skip


CONVERSATION = [
    Message("system", "Be brief."),
    Message("user", ["What is the weather?", DataContent(data=b"\x89PNG", media_type="image/png")]),
    Message("assistant", [FunctionCallContent(call_id="call_1", name="weather", arguments={"city": "Lisbon"})]),
    Message("tool", [FunctionResultContent(call_id="call_1", result={"temp": 18})]),
    Message("user", "Thanks", author_name="planner"),
]


async def test_chat_request_payload_is_exact():
    server = Server(completion())
    client = OpenAIChatClient("gemma-test", client=server.sdk(), temperature=0, seed=7)

    def weather(city: str) -> str:
        """The weather in a city."""
        return city

    await client.get_response(CONVERSATION, {"tools": [weather], "max_tokens": 20})
    request = server.requests[0]
    assert request.url.path == "/v1/chat/completions"
    assert server.body() == {
        "model": "gemma-test",
        "temperature": 0,
        "seed": 7,
        "max_tokens": 20,
        "tools": [{"type": "function", "function": {
            "name": "weather", "description": "The weather in a city.",
            "parameters": {"additionalProperties": False, "properties": {"city": {"type": "string"}},
                           "required": ["city"], "type": "object"}}}],
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is the weather?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Lisbon"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 18}'},
            {"role": "user", "content": "Thanks"},
        ],
    }  # fmt: skip
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_chat_response_is_parsed():
    calls = [{"id": "call_9", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Porto"}'}}]
    server = Server(completion(content=None, tool_calls=calls, finish="tool_calls"))
    r = await OpenAIChatClient("gemma-test", client=server.sdk()).get_response([Message("user", "hi")])
    assert r.messages == (
        Message("assistant", [FunctionCallContent(call_id="call_9", name="weather", arguments={"city": "Porto"})]),
    )
    assert (r.model, r.finish_reason, r.response_id) == ("gemma-test", "tool_calls", "chatcmpl-1")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (11, 3)


async def test_chat_stream_yields_text_then_calls_and_usage():
    server = Server([
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Let me"}),
        chunk({"content": " check."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_3", "type": "function", "function": {"name": "weather", "arguments": '{"ci'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Faro"}'}}]}, finish="tool_calls"),
        chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}),
    ])  # fmt: skip
    updates = [
        u
        async for u in OpenAIChatClient("gemma-test", client=server.sdk()).get_streaming_response(
            [Message("user", "hi")]
        )
    ]
    assert [u.text for u in updates] == ["Let me", " check.", ""]
    assert updates[-1].contents == (FunctionCallContent(call_id="call_3", name="weather", arguments={"city": "Faro"}),)
    assert updates[-1].usage.output_tokens == 4 and updates[-1].finish_reason == "tool_calls"
    body = server.body()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("status", "error", "fragment"),
    [
        (429, ModelRateLimited, "rate limited (429): slow down"),
        (503, ModelUnavailable, "the server failed (503): slow down"),
        (400, ModelBadRequest, "refused the request (400): slow down"),
        (401, ModelBadRequest, "refused the API key (401)"),
    ],
)
async def test_server_errors_become_agent_nb_errors_without_the_key(status, error, fragment):
    body = {"error": {"message": f"slow down (you sent {KEY})", "type": "x"}}
    server = Server(httpx.Response(status, json=body))
    with pytest.raises(error) as info:
        await OpenAIChatClient("gemma-test", client=server.sdk()).get_response([Message("user", "hi")])
    assert fragment in str(info.value)
    assert_no_key(info.value)
    assert info.value.retryable == (status in (429, 503))


@pytest.mark.parametrize("client", [OpenAIChatClient, OpenAIResponsesClient])
@pytest.mark.parametrize("stream", [False, True])
async def test_both_apis_translate_errors_the_same_way_streamed_or_not(client, stream):
    body = {"error": {"message": f"slow down (you sent {KEY})", "type": "x"}}
    server = Server(httpx.Response(429, json=body))
    model = client("gemma-test", client=server.sdk())
    with pytest.raises(ModelRateLimited, match=r"rate limited \(429\): slow down \(you sent \*\*\*\)") as info:
        if stream:
            async for _ in model.get_streaming_response([Message("user", "hi")]):
                pass
        else:
            await model.get_response([Message("user", "hi")])
    assert_no_key(info.value)


def assert_no_key(error: BaseException) -> None:
    """The key is nowhere in the error, its message, or anything it chains to (the request lives there)."""
    assert error.__cause__ is None and error.__context__ is None, "the SDK's exception (with the request) is attached"
    assert KEY not in str(error) and KEY not in repr(error)
    assert all(KEY not in note for note in getattr(error, "__notes__", []))


async def test_timeouts_and_unreachable_servers():
    server = Server(httpx.ReadTimeout("slow"), httpx.ConnectError("refused"))
    client = OpenAIChatClient("gemma-test", client=server.sdk())
    with pytest.raises(ModelTimeout, match="did not answer in time") as timeout:
        await client.get_response([Message("user", "hi")])
    with pytest.raises(ModelUnavailable, match="cannot reach the server") as unreachable:
        await client.get_response([Message("user", "hi")])
    assert_no_key(timeout.value)
    assert_no_key(unreachable.value)


def test_the_key_never_appears_in_a_repr(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    client = OpenAIChatClient("gpt-test")
    assert client.sdk.api_key == KEY
    assert KEY not in repr(client) and KEY not in str(vars(client).get("defaults"))
    assert (
        repr(OpenAIResponsesClient("m", base_url="http://x/v1")) == "OpenAIResponsesClient('m', base_url='http://x/v1')"
    )


def test_no_key_is_a_clear_error_unless_the_server_is_local():
    with pytest.raises(UsageError, match=r"has no API key: pass api_key=\.\.\., set OPENAI_API_KEY"):
        _ = OpenAIChatClient("gpt-test").sdk
    assert OpenAIChatClient("local", base_url="http://127.0.0.1:1/v1").sdk.api_key == "not-needed"


def test_unknown_options_are_refused_with_a_hint():
    with pytest.raises(UsageError, match="does not know the option 'temprature'; did you mean 'temperature'"):
        OpenAIChatClient("m", base_url="http://x/v1", temprature=0)


async def test_responses_payload_and_parsing():
    server = Server({
        "id": "resp_1", "object": "response", "created_at": 1, "model": "gemma-test", "status": "completed",
        "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_2", "name": "weather", "arguments": "{}", "status": "completed"},
        ],
        "usage": {"input_tokens": 20, "output_tokens": 6, "total_tokens": 26,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    })  # fmt: skip
    client = OpenAIResponsesClient("gemma-test", client=server.sdk())
    r = await client.get_response(CONVERSATION, {"max_tokens": 30})
    assert server.requests[0].url.path == "/v1/responses"
    assert server.body() == {
        "model": "gemma-test",
        "max_output_tokens": 30,
        "store": False,
        "input": [
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Be brief."}]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "What is the weather?"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"}]},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Lisbon"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 18}'},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
        ],
    }  # fmt: skip
    assert [c.type for c in r.messages[0].contents] == ["text", "function_call"]
    assert r.text == "It is sunny." and r.finish_reason == "tool_calls" and r.usage.input_tokens == 20


async def test_responses_stream():
    events = [
        {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "Sun", "sequence_number": 1, "logprobs": []},
        {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "ny", "sequence_number": 2, "logprobs": []},
        {"type": "response.completed", "sequence_number": 3, "response": {
            "id": "resp_2", "object": "response", "created_at": 1, "model": "gemma-test", "status": "completed", "output": [],
            "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}},
    ]  # fmt: skip
    server = Server(events)
    updates = [
        u
        async for u in OpenAIResponsesClient("gemma-test", client=server.sdk()).get_streaming_response(
            [Message("user", "hi")]
        )
    ]
    assert "".join(u.text for u in updates) == "Sunny"
    assert updates[-1].response_id == "resp_2" and updates[-1].usage.output_tokens == 2


def responses_answer(rid, text):
    return {
        "id": rid, "object": "response", "created_at": 1, "model": "m", "status": "completed",
        "output": [{"type": "message", "id": "x", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }  # fmt: skip


async def test_stored_responses_are_service_managed_and_refused_as_routes():
    server = Server(responses_answer("resp_a", "one"), responses_answer("resp_b", "two"))
    stored = OpenAIResponsesClient("m", store=True, client=server.sdk())
    assert stored.history_mode == "service" and OpenAIResponsesClient("m", base_url="x").history_mode == "caller"
    session = AgentSession()
    await stored.get_response([Message("user", "first")], session=session)
    await stored.get_response(
        [Message("user", "first"), Message("assistant", "one"), Message("user", "second")], session=session
    )
    second = server.body()
    assert second["previous_response_id"] == "resp_a" and second["store"] is True
    assert second["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "second"}]}
    ]
    with pytest.raises(ServiceManagedHistoryError, match=r"store=False.*import_conversation"):
        RoutingChatClient({"stored": stored})


async def test_a_route_set_to_store_after_it_was_registered_is_refused_at_request_time_and_sends_nothing():
    server = Server(responses_answer("resp_a", "one"))
    later = OpenAIResponsesClient("m", client=server.sdk())
    router = RoutingChatClient({"later": later})
    later.store = True  # after registration: the router must still not let the history leave
    session = AgentSession()
    for call in (router.get_response, router.get_streaming_response):
        with pytest.raises(ServiceManagedHistoryError, match=r"route 'later' of router 'router', now.*store=False"):
            result = call([Message("user", "hi")], session=session)
            if hasattr(result, "__aiter__"):
                async for _ in result:
                    pass
            else:
                await result
    assert server.requests == []  # nothing was sent


async def test_import_conversation_rebuilds_the_history():
    items = {
        "object": "list", "first_id": "a", "last_id": "c", "has_more": False,
        "data": [
            {"type": "message", "id": "a", "role": "user", "status": "completed", "content": [{"type": "input_text", "text": "Hi"}]},
            {"type": "function_call", "id": "b", "call_id": "call_1", "name": "weather", "arguments": "{}", "status": "completed"},
            {"type": "function_call_output", "id": "c", "call_id": "call_1", "output": "18", "status": "completed"},
        ],
    }  # fmt: skip
    server = Server(items, responses_answer("resp_z", "It is 18."))
    messages = await import_conversation(OpenAIResponsesClient("m", store=True, client=server.sdk()), "resp_z")
    assert [(m.role, m.text or m.contents[0].type) for m in messages] == [
        ("user", "Hi"),
        ("assistant", "function_call"),
        ("tool", "function_result"),
        ("assistant", "It is 18."),
    ]
    assert server.requests[0].url.path == "/v1/responses/resp_z/input_items"
    with pytest.raises(UsageError, match="exactly one of"):
        await import_conversation(server.sdk())


async def test_a_chat_agent_runs_a_tool_round_trip_over_the_api():
    calls = [{"id": "call_5", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Braga"}'}}]
    server = Server(completion(content=None, tool_calls=calls, finish="tool_calls"), completion("Braga: 18C."))

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"18C in {city}"

    agent = ChatAgent(OpenAIChatClient("gemma-test", client=server.sdk()), name="w", tools=[weather])
    r = await agent.run("weather in Braga?")
    assert r.text == "Braga: 18C."
    second = server.body(1)["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_5"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_5", "content": "18C in Braga"}


async def test_broken_call_arguments_travel_as_an_empty_object():
    server = Server(completion())
    broken = Message("assistant", [FunctionCallContent(call_id="c1", name="f", arguments='{"cut off')])
    await OpenAIChatClient("m", client=server.sdk()).get_response([Message("user", "q"), broken])
    assert server.body()["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"


def responses_stream(*events):
    return [dict(e, sequence_number=i) for i, e in enumerate(events)]


COMPLETED = {
    "type": "response.completed",
    "response": {
        "id": "resp_s", "object": "response", "created_at": 1, "model": "m", "status": "completed", "output": [],
        "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    },
}  # fmt: skip


async def test_responses_stream_with_a_tool_call():
    done = {
        "type": "response.output_item.done", "output_index": 0,
        "item": {"type": "function_call", "id": "fc", "call_id": "call_7", "name": "weather", "arguments": '{"city": "Evora"}', "status": "completed"},
    }  # fmt: skip
    server = Server(responses_stream(done, COMPLETED))
    updates = [
        u async for u in OpenAIResponsesClient("m", client=server.sdk()).get_streaming_response([Message("user", "hi")])
    ]
    assert updates[-1].contents == (FunctionCallContent(call_id="call_7", name="weather", arguments={"city": "Evora"}),)
    assert updates[-1].finish_reason == "tool_calls"


async def test_a_failed_response_stream_keeps_the_servers_words_and_no_key():
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_f", "object": "response", "created_at": 1, "model": "m", "status": "failed", "output": [],
            "error": {"code": "server_error", "message": f"overloaded, key {KEY}"},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        },
    }  # fmt: skip
    server = Server(responses_stream(failed))
    with pytest.raises(ModelError, match=r"the response failed: overloaded, key \*\*\*") as info:
        async for _ in OpenAIResponsesClient("m", client=server.sdk()).get_streaming_response([Message("user", "hi")]):
            pass
    assert_no_key(info.value)


async def test_options_carry_over_between_the_two_apis():
    server = Server(completion(), responses_answer("r", "ok"))
    shared = {"seed": 3, "stop": ["END"], "max_tokens": 9, "tool_choice": {"type": "function", "function": {"name": "f"}},
              "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}},
              "instructions": "Be brief.", "presence_penalty": 0.5}  # fmt: skip
    await OpenAIChatClient("m", client=server.sdk()).get_response([Message("user", "hi")], shared)
    chat = server.body()
    assert (chat["seed"], chat["stop"], chat["max_tokens"], chat["presence_penalty"]) == (3, ["END"], 9, 0.5)
    assert chat["messages"][0] == {"role": "system", "content": "Be brief."}
    await OpenAIResponsesClient("m", client=server.sdk()).get_response([Message("user", "hi")], shared)
    resp = server.body()
    assert "seed" not in resp and "stop" not in resp and "presence_penalty" not in resp
    assert resp["max_output_tokens"] == 9 and resp["instructions"] == "Be brief."
    assert resp["tool_choice"] == {"type": "function", "name": "f"}
    assert resp["text"] == {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}}


def test_the_service_cannot_be_smuggled_in_through_extra_body():
    with pytest.raises(UsageError, match=r"store in extra_body would hand the conversation to the service"):
        OpenAIResponsesClient("m", base_url="http://x/v1", extra_body={"store": True})


async def test_import_from_the_conversations_api():
    page = {
        "object": "list", "first_id": "a", "last_id": "b", "has_more": False,
        "data": [
            {"type": "message", "id": "a", "role": "user", "status": "completed", "content": [{"type": "input_text", "text": "Hi"}]},
            {"type": "message", "id": "b", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Hello", "annotations": []}]},
        ],
    }  # fmt: skip
    server = Server(page)
    messages = await import_conversation(server.sdk(), conversation_id="conv_1")
    assert [(m.role, m.text) for m in messages] == [("user", "Hi"), ("assistant", "Hello")]
    assert server.requests[0].url.path == "/v1/conversations/conv_1/items"


async def test_a_client_passed_in_is_left_open_and_cannot_be_reconfigured():
    server = Server(completion())
    sdk = server.sdk()
    async with OpenAIChatClient("m", client=sdk) as client:
        await client.get_response([Message("user", "hi")])
    assert not sdk.is_closed()
    with pytest.raises(UsageError, match=r"either client= .* or api_key, base_url, timeout and max_retries"):
        OpenAIChatClient("m", client=sdk, timeout=3)


HEADER_TOKEN = "hdr-tok-0123456789abcdef"
EXTRA_TOKEN = "xtr-tok-fedcba9876543210"
OPTION_SECRET = "opt-sec-a1b2c3d4e5f6a7b8"


@pytest.mark.parametrize("client", [OpenAIChatClient, OpenAIResponsesClient])
@pytest.mark.parametrize("status", [400, 401, 429, 503])
async def test_secrets_of_headers_and_options_never_reach_an_error(client, status):
    """Not only the API key: every header and option that names a secret is scrubbed when a server echoes it."""

    def echoing(request: httpx.Request) -> httpx.Response:
        said = f"headers {dict(request.headers)} body {request.content.decode()}"
        return httpx.Response(status, json={"error": {"message": said, "type": "x"}})

    sdk = AsyncOpenAI(
        api_key=KEY,
        base_url="http://model.test/v1",
        max_retries=0,
        default_headers={"X-Auth-Token": HEADER_TOKEN},
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(echoing)),
    )
    model = client("gemma-test", client=sdk, extra_body={"client_secret": OPTION_SECRET})
    options = {"extra_headers": {"Authorization": f"Bearer {EXTRA_TOKEN}"}}
    with pytest.raises(ModelError) as info:
        await model.get_response([Message("user", "hi")], options)
    text = str(info.value)
    assert "***" in text
    for secret in (KEY, HEADER_TOKEN, EXTRA_TOKEN, OPTION_SECRET):
        assert secret not in text and secret not in repr(info.value), secret
    assert_no_key(info.value)


async def test_default_headers_are_sent_and_known_as_secrets():
    seen = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("x-api-key"))
        return httpx.Response(401, json={"error": {"message": f"bad key {request.headers.get('x-api-key')}"}})

    import openai

    made = openai.AsyncOpenAI

    def factory(**kwargs):
        return made(http_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)), **kwargs)

    client = OpenAIChatClient("m", base_url="http://model.test/v1", default_headers={"X-Api-Key": HEADER_TOKEN})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(openai, "AsyncOpenAI", factory)
        with pytest.raises(ModelBadRequest, match=r"refused the API key \(401\): bad key \*\*\*"):
            await client.get_response([Message("user", "hi")])
    assert seen == [HEADER_TOKEN]
    with pytest.raises(UsageError, match="default_headers"):
        OpenAIChatClient("m", client=AsyncOpenAI(api_key="x"), default_headers={"X-Api-Key": "y"})


def test_a_base_url_with_credentials_is_shown_without_them():
    client = OpenAIChatClient("m", base_url="http://user:pa55word-123@proxy.test/v1?api-key=qs-secret-99&x=1")
    assert repr(client) == "OpenAIChatClient('m', base_url='http://user:***@proxy.test/v1?api-key=***&x=1')"
