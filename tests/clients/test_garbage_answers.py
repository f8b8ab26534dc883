"""A 200 that is not a completion, from either OpenAI client, streamed or not, is a ModelError that says so.

Each answer here comes from the SDK's own mock transport (no network), from a "server" that
echoes the request's secrets back (a login page showing the Authorization header, say). The
error must name the client, its model, base URL and endpoint, show what came back (short, and
with every secret masked), and carry nothing of the SDK's exception. Streams must be closed
properly: the last test runs real loopback streams in a fresh interpreter and reads its stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest
from openai import AsyncOpenAI

try:  # the SDK's own HTTP library: httpx2 since openai 3, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from agent_nb import ChatAgent, Message, ModelError, ModelUnavailable, RoutingChatClient
from agent_nb.clients.openai import OpenAIChatClient, OpenAIResponsesClient

pytestmark = pytest.mark.allow_model_calls  # the SDK's mock transport: no network

KEY = "sk-garbage-KEY-5f1e2d3c4b5a69788796"
HEADER = "hdr-token-0a1b2c3d4e5f60718293"  # default_headers={"X-Auth-Token": ...}
EXTRA = "xtra-bearer-99aa88bb77cc66dd55"  # extra_headers={"Authorization": "Bearer ..."} per request
OPTION = "opt-secret-1234abcd5678efgh"  # extra_body={"client_secret": ...}
SECRETS = (KEY, HEADER, EXTRA, OPTION)
URL = "http://model.test/v1"


def echo(request: httpx.Request) -> str:
    """Everything secret the request carried, as a careless server would print it."""
    headers = " ".join(f"{k}: {v}" for k, v in request.headers.items())
    return f"{headers} body: {request.content.decode()}"


def page(request: httpx.Request) -> httpx.Response:
    body = (
        "<!DOCTYPE html><html><head><title>Sign in</title></head><body><h1>Please sign in</h1>"
        + "<p>Your session has expired.</p>" * 20
        + f"<pre>{echo(request)}</pre></body></html>"
    )
    return httpx.Response(200, text=body, headers={"content-type": "text/html"})


def empty(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={})


def broken(request: httpx.Request) -> httpx.Response:
    text = '{"id": "chatcmpl-1", "echo": ' + json.dumps(echo(request)) + ', "choices": [{"message": {"content": "Hel'
    return httpx.Response(200, text=text, headers={"content-type": "application/json"})


def wrong_types(request: httpx.Request) -> httpx.Response:
    return httpx.Response(
        200, json={"choices": [{"message": {"content": 42}}], "output": "none", "echo": echo(request)}
    )


def sse(*lines: str) -> httpx.Response:
    return httpx.Response(200, text="".join(lines), headers={"content-type": "text/event-stream"})


def garbage_lines(request: httpx.Request) -> httpx.Response:
    return sse(f"data: <html>{echo(request)}</html>\n\n", "data: [DONE]\n\n")


def unknown_event(request: httpx.Request) -> httpx.Response:
    return sse(f"data: {json.dumps({'surprise': echo(request)})}\n\n", "data: [DONE]\n\n")


def cut(request: httpx.Request) -> httpx.Response:
    """Real-looking events, then the body ends: no finish_reason, no response.completed, no [DONE]."""
    if request.url.path.endswith("/responses"):
        event = {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0,
                 "delta": f"Hel {echo(request)}", "sequence_number": 1, "logprobs": []}  # fmt: skip
    else:
        event = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gemma-test",
                 "choices": [{"index": 0, "delta": {"content": f"Hel {echo(request)}"}, "finish_reason": None}]}  # fmt: skip
    return sse(f"data: {json.dumps(event)}\n\n")


WHOLE = {"empty": empty, "html page": page, "broken json": broken, "wrong types": wrong_types}
STREAMED = {**WHOLE, "garbage lines": garbage_lines, "unknown event": unknown_event, "cut off": cut}


def client(cls: type, answer) -> OpenAIChatClient | OpenAIResponsesClient:
    sdk = AsyncOpenAI(
        api_key=KEY,
        base_url=URL,
        max_retries=0,
        default_headers={"X-Auth-Token": HEADER},
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)),
    )
    return cls("gemma-test", client=sdk, extra_body={"client_secret": OPTION})


OPTIONS = {"extra_headers": {"Authorization": f"Bearer {EXTRA}"}}


async def ask(model, *, stream: bool) -> list:
    if not stream:
        return [await model.get_response([Message("user", "hi")], OPTIONS)]
    return [u async for u in model.get_streaming_response([Message("user", "hi")], OPTIONS)]


def everything_shown(error: BaseException) -> str:
    """All the text of an error as a user may see it: str, repr, notes, and the formatted traceback."""
    return "\n".join([str(error), repr(error), *getattr(error, "__notes__", ()), *traceback.format_exception(error)])


def assert_clean(error: BaseException) -> None:
    assert error.__cause__ is None and error.__context__ is None, "the SDK's exception (and its request) is attached"
    shown = everything_shown(error)
    for secret in SECRETS:
        assert secret not in shown, secret


@pytest.mark.parametrize("cls", [OpenAIChatClient, OpenAIResponsesClient])
@pytest.mark.parametrize("name", list(WHOLE))
async def test_a_whole_answer_that_is_not_a_completion(cls, name):
    model = client(cls, WHOLE[name])
    with pytest.raises(ModelError) as info:
        await ask(model, stream=False)
    assert_named(info.value, cls, stream=False)
    assert_clean(info.value)


@pytest.mark.parametrize("cls", [OpenAIChatClient, OpenAIResponsesClient])
@pytest.mark.parametrize("name", list(STREAMED))
async def test_a_stream_that_is_not_a_completion(cls, name):
    model = client(cls, STREAMED[name])
    with pytest.raises(ModelError) as info:
        await ask(model, stream=True)  # before: an empty answer, as if all had gone well
    assert_named(info.value, cls, stream=True)
    assert_clean(info.value)
    assert isinstance(info.value, ModelUnavailable) is (name == "cut off")  # broke off: another try may work


def assert_named(error: BaseException, cls: type, *, stream: bool) -> None:
    text = str(error)
    endpoint = "/chat/completions" if cls is OpenAIChatClient else "/responses"
    assert text.startswith(f"{cls.__name__}('gemma-test', base_url='{URL}')"), text
    assert f"POST {URL}{endpoint}" in text or "the stream" in text, text
    assert "what came back" in text.lower() or "nothing came back" in text.lower(), text
    assert len(text) < 1300, f"{len(text)} characters: show what came back shortened"


async def test_what_came_back_is_shown_short_and_masked():
    model = client(OpenAIChatClient, page)
    with pytest.raises(ModelError) as info:
        await ask(model, stream=False)
    text = str(info.value)
    assert "What came back (" in text and "'<!DOCTYPE html><html><head><title>Sign in</title>" in text
    assert "a web page, not the API: check base_url" in text
    shown = text.split("What came back", 1)[1]
    assert len(shown) < 600
    model = client(OpenAIChatClient, broken)
    with pytest.raises(
        ModelError, match=r"not JSON .*What came back .*'\{\"id\": \"chatcmpl-1\", \"echo\": .*\*\*\*"
    ) as info:
        await ask(model, stream=False)
    assert_clean(info.value)


async def test_a_field_of_the_wrong_type_is_named():
    with pytest.raises(ModelError, match=r"choices\[0\]\.message\.content should be a string, not a number"):
        await ask(client(OpenAIChatClient, wrong_types), stream=False)
    with pytest.raises(ModelError, match=r"output should be a list, not a string"):
        await ask(client(OpenAIResponsesClient, wrong_types), stream=False)


async def test_an_unknown_event_and_a_cut_stream_say_what_they_are():
    with pytest.raises(ModelError, match=r"event 1 of the stream is not a chat completion chunk: choices is missing"):
        await ask(client(OpenAIChatClient, unknown_event), stream=True)
    with pytest.raises(ModelUnavailable, match=r"the stream ended after 1 event without response.completed"):
        await ask(client(OpenAIResponsesClient, cut), stream=True)


async def test_the_answers_own_words_are_scrubbed_too():
    """A server that echoes a secret in a good answer: the answer reaches no trace, history or cassette with it."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gemma-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"I saw {echo(request)}"},
                         "finish_reason": "stop"}],
        })  # fmt: skip

    def streamed(request: httpx.Request) -> httpx.Response:
        text = f"I saw {echo(request)}"
        pieces = [text[i : i + 5] for i in range(0, len(text), 5)]  # every secret cut across chunks
        events = [{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]  # fmt: skip
        events.append({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})  # fmt: skip
        return sse(*(f"data: {json.dumps(e)}\n\n" for e in events), "data: [DONE]\n\n")

    whole = (await ask(client(OpenAIChatClient, answer), stream=False))[0]
    pieces = await ask(client(OpenAIChatClient, streamed), stream=True)
    joined = "".join(u.text for u in pieces)
    for text in (whole.text, joined):
        assert text.startswith("I saw ") and "***" in text
        for secret in SECRETS:
            assert secret not in text, secret


async def test_a_routed_error_names_the_route():
    router = RoutingChatClient({"fast": client(OpenAIChatClient, page)})
    with pytest.raises(ModelError) as info:
        await ChatAgent(router, name="a").run("hi")
    assert "'fast'" in everything_shown(info.value)


SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from agent_nb import ChatAgent, Message
    from agent_nb.clients.guard import allowing_real_models
    from agent_nb.clients.openai import OpenAIChatClient, OpenAIResponsesClient

    DELTA = {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0,
             "delta": "Sun", "logprobs": []}
    FAILED = {"type": "response.failed", "response": {"id": "r", "object": "response", "created_at": 1,
              "model": "m", "status": "failed", "output": [], "error": {"code": "x", "message": "overloaded"},
              "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}}
    CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "Sun"}, "finish_reason": None}]}

    class Server(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            mode = self.path.split("/")[1]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            responses = self.path.endswith("/responses")
            events = [DELTA if responses else CHUNK] * 3
            if mode == "fail":
                events.append(FAILED)
            if mode == "unknown":
                events.append({"surprise": True})
            events += [DELTA if responses else CHUNK] * 20
            try:
                for i, event in enumerate(events):
                    data = "data: not json" if mode == "garbage" and i == 3 else f"data: {json.dumps(event)}"
                    body = f"{data}\\n\\n".encode()
                    self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(body), body))
                    self.wfile.flush()
                    time.sleep(0.01)
                if mode == "cut":
                    self.connection.shutdown(2)
                    return
                self.wfile.write(b"0\\r\\n\\r\\n")
            except OSError:
                pass

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # a client that hangs up is the point here, not news

    server = Quiet(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    async def run(cls, mode, how):
        model = cls("m", base_url=f"http://127.0.0.1:{server.server_port}/{mode}/v1", max_retries=0)
        try:
            if how == "agent":  # an agent's stream left after its first piece
                async for _ in ChatAgent(model, name="a").run("hi", stream=True):
                    break
            else:
                async for _ in model.get_streaming_response([Message("user", "hi")]):
                    if how == "break":
                        break
            print(cls.__name__, mode, how, "ok")
        except Exception as exc:
            print(cls.__name__, mode, how, type(exc).__name__)
        finally:
            await model.aclose()

    with allowing_real_models():
        for cls in (OpenAIResponsesClient, OpenAIChatClient):
            for mode, how in (("fail", "read"), ("unknown", "read"), ("garbage", "read"), ("cut", "read"),
                              ("good", "break"), ("good", "agent")):
                if cls is OpenAIChatClient and mode == "fail":
                    continue
                asyncio.run(run(cls, mode, how))
    print("done")
    """
)


def test_streams_are_closed_properly_with_nothing_on_stderr(tmp_path: Path) -> None:
    """Streams that fail, break off or are left early, on real loopback sockets, leave stderr empty.

    Before: "aclose(): asynchronous generator is already running" as each event loop shut down.
    """
    script = tmp_path / "streams.py"
    script.write_text(SCRIPT, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}  # this checkout's agent_nb, whatever is installed
    out = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr == "", out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[-1] == "done"
    assert "OpenAIResponsesClient fail read ModelError" in lines
    assert "OpenAIResponsesClient unknown read ModelError" in lines
    assert "OpenAIChatClient garbage read ModelError" in lines
    assert "OpenAIChatClient cut read ModelUnavailable" in lines
    assert "OpenAIResponsesClient good agent ok" in lines
