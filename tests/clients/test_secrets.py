"""The secrets a client knows: found once, masked in one pass, and never made of a conversation.

A base URL's credentials (``http://user:password@host``) are secrets of the client, and so is the
``Basic`` credential the HTTP library makes of them; ``Basic`` credentials are recognised like
``Bearer`` ones; a URL that cannot be parsed is still shown masked. A client's own secrets are
computed once (again when its SDK client changes); a request adds only those of its own options,
never of its messages. One compiled scrubber serves every piece of an answer. Cassettes redact
with the same rules (``agent_nb.clients.redaction``), and a recording seals each interaction once.
"""

from __future__ import annotations

import base64
import json
import logging
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

try:  # the SDK's own HTTP library: httpx2 since openai 3, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from agent_nb import ChatAgent, FunctionCallContent, FunctionResultContent, Message, ScriptedChatClient
from agent_nb.clients import cassettes, redaction
from agent_nb.clients.openai import OpenAIChatClient, OpenAIResponsesClient, _common
from agent_nb.clients.redaction import TextScrubber, safe_url, scrub, secrets_in
from agent_nb.clients.replay import RecordingChatClient, ReplayChatClient, check, seal

pytestmark = pytest.mark.allow_model_calls  # the SDK's mock transport: no network


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def said(request: httpx.Request) -> str:
    """What a careless server prints: the URL it was asked, and every header."""
    return f"[url {request.url}] [headers " + "; ".join(f"{k}: {v}" for k, v in request.headers.items()) + "]"


def answer(request: httpx.Request, text: str) -> httpx.Response:
    """A good answer of the API asked (whole, or streamed in pieces of 5 characters), holding ``text``."""
    streamed = json.loads(request.content).get("stream")
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    if request.url.path.endswith("/responses"):
        whole = {
            "id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": "completed",
            "output": [{"type": "message", "id": "o", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "" if streamed else text, "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        }  # fmt: skip
        if not streamed:
            return httpx.Response(200, json=whole)
        events: list[dict[str, Any]] = [
            {"type": "response.output_text.delta", "item_id": "o", "output_index": 0, "content_index": 0,
             "delta": p, "sequence_number": i, "logprobs": []}
            for i, p in enumerate(pieces)
        ]  # fmt: skip
        events.append({"type": "response.completed", "sequence_number": len(pieces), "response": whole})
    else:
        head = {"id": "c1", "created": 1, "model": "m"}
        if not streamed:
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return httpx.Response(200, json={**head, "object": "chat.completion", "choices": [choice]})
        events = [
            {**head, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
            for p in pieces
        ]  # fmt: skip
        events.append(
            {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        )
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})


def serving(monkeypatch: pytest.MonkeyPatch, handler: Callable[[httpx.Request], httpx.Response]) -> list[httpx.Request]:
    """Every SDK client a client makes talks to ``handler``; the requests it got."""
    seen: list[httpx.Request] = []
    made = openai.AsyncOpenAI

    def keep(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    def factory(**kwargs: Any) -> openai.AsyncOpenAI:
        return made(
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(keep)),
            max_retries=0,
            **{k: v for k, v in kwargs.items() if k != "max_retries"},
        )

    monkeypatch.setattr(openai, "AsyncOpenAI", factory)
    return seen


def sdk_answering(text: Callable[[httpx.Request], str]) -> openai.AsyncOpenAI:
    def handler(request: httpx.Request) -> httpx.Response:
        return answer(request, text(request))

    return openai.AsyncOpenAI(
        api_key="sk-own-key-0123456789",
        base_url="http://model.test/v1",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )


async def text_of(client: Any, messages: list[Message], stream: bool, options: Any = None) -> str:
    if stream:
        return "".join([u.text async for u in client.get_streaming_response(messages, options)])
    return str((await client.get_response(messages, options)).text)


CLIENTS = [OpenAIChatClient, OpenAIResponsesClient]


# -- 1. the credentials of a base URL; Basic credentials; a URL that cannot be parsed -------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("cls", CLIENTS)
async def test_the_credentials_of_a_base_url_never_reach_an_answer(cls, stream, monkeypatch, tmp_path, caplog) -> None:
    """``Authorization: Basic base64(user:pw)`` is sent; an echo of it is masked; the URL logged holds no password."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen = serving(monkeypatch, lambda request: answer(request, f"You sent {said(request)}"))
    for url, user, password, secrets in [
        ("http://bob:pw@model.test/v1", "bob", "pw", ()),  # "pw" alone: too short to be masked anywhere
        ("http://bob:p%40ss-w0rd-77@model.test/v1", "bob", "p@ss-w0rd-77", ("p@ss-w0rd-77", "p%40ss-w0rd-77")),
        ("http://tok3n-alone-0042@model.test/v1", "tok3n-alone-0042", "", ("tok3n-alone-0042",)),
    ]:
        client = cls("m", base_url=url)
        path = tmp_path / f"{len(seen)}.json"
        text = await text_of(RecordingChatClient(client, path), [Message("user", "hi")], stream)
        basic = b64(f"{user}:{password}")
        assert seen[-1].headers["authorization"] == f"Basic {basic}"  # what goes on the wire
        assert "authorization: ***" in text or "authorization: Basic ***" in text, text
        written = path.read_text(encoding="utf-8")
        for secret in (basic, *secrets):
            assert secret not in text and secret not in written and secret not in caplog.text, (url, secret)
        assert basic not in repr(client) and f":{password}@" not in repr(client)


def test_a_url_that_cannot_be_parsed_is_shown_masked() -> None:
    client = OpenAIChatClient("m", base_url="http://bob:pw@[::1/v1")
    assert repr(client) == "OpenAIChatClient('m', base_url='http://bob:***@[::1/v1')"
    assert safe_url("http://[::1/v1?api-key=qs-secret-99&x=1") == "http://[::1/v1?api-key=***&x=1"
    assert safe_url("bob:s3cret-9@proxy.test/v1") == "bob:***@proxy.test/v1"  # no scheme: no netloc either
    assert safe_url("http://user:pa55@proxy.test/v1") == "http://user:***@proxy.test/v1"
    assert redaction.url_secrets("http://bob:pw@[::1/v1") == {b64("bob:pw")}


def test_basic_credentials_are_recognised_like_bearer_ones() -> None:
    token = b64("alice:wonder-land-7")
    assert {token, "wonder-land-7"} <= secrets_in({"X-Note": f"sent with Basic {token}"})
    assert {token, "wonder-land-7"} <= secrets_in({"Proxy-Authorization": f"Basic {token}"})
    for answer_ in (False, True):
        assert scrub(f"Authorization: Basic {token}.", [], answer=answer_) == "Authorization: Basic ***."
        prose = "Basic training, a basic idea, Basic math, basic YWJj"  # not base64 of user:password
        assert scrub(prose, [], answer=answer_) == prose
    pieces = TextScrubber([])
    text = f"the header was Basic {token} and that is all"
    shown = "".join(pieces.feed(text[i : i + 3]) for i in range(0, len(text), 3)) + pieces.flush()
    assert shown == "the header was Basic *** and that is all"


# -- 2. a client's own secrets, once; a request's own options, never its messages -----------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("cls", CLIENTS)
async def test_a_message_never_makes_a_secret(cls, stream) -> None:
    """``Bearer xyz…`` typed in a message made ``xyz…`` a "secret", masked wherever the answer said it."""
    sdk = sdk_answering(lambda request: "You typed abcd1234efgh5678, and the key sk-own-key-0123456789.")
    client = cls("m", client=sdk)
    text = await text_of(client, [Message("user", "my token: Bearer abcd1234efgh5678")], stream)
    assert text == "You typed abcd1234efgh5678, and the key ***."


def counted_secret_reads(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Counts the calls of ``secrets_in`` (``reads.n``), in the redaction module and where the clients call it."""
    reads = types.SimpleNamespace(n=0)
    real = redaction.secrets_in

    def counting(value: Any, **kwargs: Any) -> set[str]:
        reads.n += 1
        return real(value, **kwargs)

    monkeypatch.setattr(redaction, "secrets_in", counting)
    monkeypatch.setattr(_common, "secrets_in", counting)
    return reads


@pytest.mark.parametrize("cls", CLIENTS)
async def test_the_messages_are_not_read_for_secrets(cls, monkeypatch) -> None:
    """However long the conversation, finding a call's secrets reads the same few values."""
    reads = counted_secret_reads(monkeypatch)
    client = cls("m", client=sdk_answering(lambda request: "fine"), extra_body={"client_secret": "cs-0123456789"})
    await client.get_response([Message("user", "warm up")])
    counted = {}
    for n in (10, 1000):
        conversation = [Message("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(n)]
        reads.n = 0
        await client.get_response(conversation, {"extra_headers": {"X-Trace": "t"}})
        counted[n] = reads.n
    assert counted[10] == counted[1000], counted


async def test_a_requests_own_options_still_hold_secrets(monkeypatch) -> None:
    """``extra_headers``, ``extra_body``, ``extra_query`` and secret-named options: still secrets, echoed or not."""
    serving(monkeypatch, lambda request: answer(request, f"{said(request)} {request.content.decode()}"))
    client = OpenAIChatClient("m", base_url="http://model.test/v1", api_key="sk-own-key-0123456789")
    options = {
        "extra_headers": {"X-Auth-Token": "hdr-tok-0123456789"},
        "extra_body": {"password": "body-pw-0123456789"},
    }
    text = await text_of(client, [Message("user", "hi")], False, options)
    for secret in ("sk-own-key-0123456789", "hdr-tok-0123456789", "body-pw-0123456789"):
        assert secret not in text, secret
    payload = {
        **options,
        "extra_query": {"api-key": "query-key-0123456789", "page": "2"},
        "session_token": "opt-tok-0123456789",
        "metadata": {"note": "Bearer not-read-0123456789"},  # not a secret-named option: not read
        "messages": [{"role": "user", "content": "Bearer typed-0123456789"}],  # never read
    }
    assert redaction.option_secrets(payload) == {
        "hdr-tok-0123456789", "body-pw-0123456789", "query-key-0123456789", "opt-tok-0123456789",
    }  # fmt: skip


def test_the_clients_own_secrets_are_found_once_and_again_when_they_change(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-first-0001")
    reads = counted_secret_reads(monkeypatch)
    client = OpenAIChatClient("m", client=openai.AsyncOpenAI(api_key="sk-first-sdk-0001", base_url="http://h/v1"))
    assert client.scrub("sk-first-sdk-0001 sk-env-first-0001") == "*** ***"
    reads.n = 0
    for _ in range(3):
        assert client.scrub("sk-first-sdk-0001") == "***"
    assert reads.n == 0  # nothing read again
    client._client = openai.AsyncOpenAI(api_key="sk-second-sdk-0002", base_url="http://h/v1")  # replaced
    assert client.scrub("sk-second-sdk-0002") == "***"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-second-0002")
    assert client.scrub("sk-env-second-0002") == "***"
    made = OpenAIChatClient("m", base_url="http://h/v1", api_key="sk-made-0003")
    assert made.scrub("Bearer not-needed sk-made-0003") == "Bearer *** ***"
    made.sdk  # noqa: B018 - the SDK client made: its secrets are read again, the same
    assert made.scrub("sk-made-0003") == "***"


# -- 3. one compiled scrubber for every piece ---------------------------------------------------------


async def test_a_stream_compiles_its_secrets_once(monkeypatch) -> None:
    """The secrets' forms were rebuilt for every piece of a stream: now once, whatever its length."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    built = 0
    real = redaction._forms

    def counting(secret: str) -> list[str]:
        nonlocal built
        built += 1
        return real(secret)

    monkeypatch.setattr(redaction, "_forms", counting)
    counted = {}
    for words in (2, 80):  # pieces of 5 characters: 2 and 80 of them
        spoken = "word " * words
        client = OpenAIChatClient("m", client=sdk_answering(lambda request, spoken=spoken: spoken))
        client._client.api_key = f"sk-stream-{words:04d}-key"  # type: ignore[union-attr]  # nothing compiled for it yet
        built = 0
        assert await text_of(client, [Message("user", "hi")], True) == spoken
        counted[words] = built
    assert counted[2] == counted[80], counted


def test_overlapping_secrets_are_masked_whole() -> None:
    assert scrub("xxABCDEFyy", ["xABCD", "CDEFy"]) == "x***y"  # no character of either is left
    assert scrub('{"k": "a\\"quoted\\"-secret"}', ['a"quoted"-secret']) == '{"k": "***"}'  # JSON-escaped
    assert scrub("?t=s%2Fecret-99", ["s/ecret-99"]) == "?t=***"  # percent-encoded


# -- 4. one redaction, for cassettes too ----------------------------------------------------------


def test_cassettes_redact_with_the_redaction_module() -> None:
    assert not hasattr(cassettes, "_redact") and not hasattr(cassettes, "_BEARER")


async def test_a_list_under_a_secret_key_is_a_secret_of_the_whole_request(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    conversation = [
        Message("user", "log me in"),
        Message("assistant", [FunctionCallContent(call_id="c1", name="login", arguments={"credentials": ["pw-in-a-list-0001", "pw-two-0002"]})]),
        Message("tool", [FunctionResultContent(call_id="c1", result="logged in")]),
        Message("user", "so pw-in-a-list-0001 worked; Basic " + b64("me:pw-basic-0003")),
    ]  # fmt: skip
    await RecordingChatClient(ScriptedChatClient(["yes"]), path).get_response(conversation)
    text = path.read_text(encoding="utf-8")
    for secret in ("pw-in-a-list-0001", "pw-two-0002", b64("me:pw-basic-0003")):
        assert secret not in text, secret
    assert '"credentials": [\n' in text and text.count("<redacted>") == 4
    assert (await ReplayChatClient(path).get_response(conversation)).text == "yes"  # the same rules compare


async def test_sealing_an_edited_cassette_redacts_its_requests(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await ChatAgent(RecordingChatClient(ScriptedChatClient(["ok"]), path), name="a").run("hi")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["interactions"][0]["request"]["options"] = {
        "api_key": "sk-edited-in-0001",
        "extra_headers": {"Proxy-Authorization": "Basic " + b64("u:edited-pw-0002")},
    }
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    assert seal(path) == 1
    text = path.read_text(encoding="utf-8")
    assert "sk-edited-in-0001" not in text and b64("u:edited-pw-0002") not in text
    assert check(path) == 1


# -- 5. a recording seals each interaction once -----------------------------------------------------


async def test_a_recording_seals_each_interaction_once(tmp_path: Path, monkeypatch) -> None:
    sealed = 0
    real = cassettes.seal_of

    def counting(interaction: Any) -> str:
        nonlocal sealed
        sealed += 1
        return real(interaction)

    monkeypatch.setattr(cassettes, "seal_of", counting)
    path = tmp_path / "c.json"
    agent = ChatAgent(RecordingChatClient(ScriptedChatClient([f"answer {i}" for i in range(12)]), path), name="a")
    for i in range(12):
        await agent.run(f"question {i}")
    assert sealed == 12  # before: 1 + 2 + ... + 12 = 78
    monkeypatch.undo()
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, ensure_ascii=False) + "\n"  # the file as a whole write made it
    assert check(path) == 12


async def test_a_later_requests_secret_is_redacted_from_what_was_sealed_before(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    recorder = RecordingChatClient(ScriptedChatClient(["one", "two", "three"]), path)
    await ChatAgent(recorder, name="a").run("typed early: later-token-5678")
    await ChatAgent(recorder, name="b").run("nothing secret")
    await ChatAgent(recorder, name="c", options={"extra_headers": {"X-Token": "later-token-5678"}}).run("now")
    text = path.read_text(encoding="utf-8")
    assert "later-token-5678" not in text and check(path) == 3
