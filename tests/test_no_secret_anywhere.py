"""No secret anywhere: every place a user can put one, a server that echoes them all, every byte and string checked.

Distinct fake secrets go where users put them: ``api_key=``, ``OPENAI_API_KEY``, ``default_headers``,
a request's ``extra_headers``, client and agent options (``extra_body``), a workflow run's
``client_kwargs``, and the credentials of a base URL (``http://user:password@host``, which the HTTP
library sends as ``Authorization: Basic base64(user:password)``). A routed two-agent workflow (two
routes recorded to cassettes) runs against the SDK's mock transport, whose "server" writes the URL,
every header and the whole request body back into each answer, each error and each page it
returns, and cuts streamed answers into small pieces (a secret is split across chunks). The runs
use a checkpoint storage on disk and a SQLite history; one run streams, one call fails with a 400,
a streamed one gets a login page, two (one streamed) go through a proxy whose URL holds a login,
and a replay gets a request it does not hold. Then every byte under the test's folder is read,
and every string a user is shown: results (``repr``, ``str``, the run view's HTML), traces (text
and ``to_dict()`` JSON), events, clients, every error's formatted traceback (notes and chained
exceptions included), and the logs.
"""

from __future__ import annotations

import base64
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import openai
import pytest

try:  # the SDK's own HTTP library: httpx2 since openai 3, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from agent_nb import (
    AgentExecutor,
    CassetteError,
    ChatAgent,
    FileCheckpointStorage,
    RoutingChatClient,
    RunError,
    SQLiteHistoryProvider,
    WorkflowBuilder,
)
from agent_nb.clients.openai import OpenAIChatClient, OpenAIResponsesClient
from agent_nb.clients.replay import RecordingChatClient, ReplayChatClient

pytestmark = pytest.mark.allow_model_calls  # the SDK's mock transport: no network

SECRETS = {
    "api_key": "sk-nsa-apikey-7c1e5a9b3d2f4e6a8b0c",
    "environment": "sk-nsa-envkey-2b4d6f8a0c1e3g5i7k9m",
    "default header (chat)": "nsa-hdr-chat-91f3e7d5b1a9c7e5d3b1",
    "default header (responses)": "nsa-hdr-resp-0a2c4e6g8i1k3m5o7q9s",
    "client option": "nsa-clientopt-5e3c1a9f7d5b3a1c9e7f",
    "agent option": "nsa-agentopt-8d6b4f2a0e8c6a4f2d0b",
    "agent bearer header": "nsa-bearer-3f5h7j9l1n3p5r7t9v1x",
    "run client_kwargs": "nsa-runkw-6a8c0e2g4i6k8m0o2q4s",
    "base URL password": "nsa-urlpw-4c6e8a0b2d4f6h8j0l2n",
}
SECRETS["base URL credentials (Basic)"] = base64.b64encode(f"nsa-user:{SECRETS['base URL password']}".encode()).decode()
URL = "http://model.test/v1"
PROXIED_URL = f"http://nsa-user:{SECRETS['base URL password']}@model.test/v1"  # a proxy that wants a login


def echo(request: httpx.Request) -> str:
    """The URL, every header and the whole body of a request, as a careless server prints them."""
    headers = "; ".join(f"{k}: {v}" for k, v in request.headers.items())
    return f"[url {request.url}] [headers {headers}] [body {request.content.decode()}]"


def chat_answer(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gemma-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }  # fmt: skip


def responses_answer(text: str) -> dict[str, Any]:
    return {
        "id": "resp_1", "object": "response", "created_at": 1, "model": "gemma-test", "status": "completed",
        "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": 5, "output_tokens": 5, "total_tokens": 10,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }  # fmt: skip


def events(request: httpx.Request, text: str) -> httpx.Response:
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]  # small pieces: secrets cut in two
    if request.url.path.endswith("/responses"):
        items: list[dict[str, Any]] = [
            {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0,
             "delta": p, "sequence_number": i, "logprobs": []}
            for i, p in enumerate(pieces)
        ]  # fmt: skip
        items.append({"type": "response.completed", "sequence_number": len(pieces), "response": responses_answer("")})
    else:
        chunk = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1, "model": "gemma-test"}
        items = [{**chunk, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
        items.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in items) + "data: [DONE]\n\n"
    return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})


def server(request: httpx.Request) -> httpx.Response:
    """Answers every request with its own headers and body written back: in answers, errors and pages."""
    said = echo(request)
    sent = json.loads(request.content)
    writer = request.url.path.endswith("/responses")  # the writer's route; the planner's is recorded
    if writer and "FAIL" in request.content.decode():
        return httpx.Response(400, json={"error": {"message": f"bad request: {said}", "type": "invalid"}})
    if writer and "PAGE" in request.content.decode():
        return httpx.Response(
            200, text=f"<html><body>Sign in. {said}</body></html>", headers={"content-type": "text/html"}
        )
    if sent.get("stream"):
        return events(request, f"Streamed: {said}")
    if writer:
        return httpx.Response(200, json=responses_answer(f"Written: {said}"))
    return httpx.Response(200, json=chat_answer(f"Planned: {said}"))


def everything_shown(error: BaseException) -> str:
    """An error as a user may see it: str, repr, notes, and its whole formatted traceback (chain included)."""
    parts = [str(error), repr(error), *getattr(error, "__notes__", ()), "".join(traceback.format_exception(error))]
    result = getattr(error, "result", None)
    if result is not None:
        parts += shown_of(result)
    return "\n".join(parts)


def shown_of(result: Any) -> list[str]:
    """A run's result as a notebook shows it, and its trace as text and as JSON."""
    bundle = result._repr_mimebundle_()
    return [
        repr(result),
        str(result),
        str(result.trace),
        json.dumps(result.trace.to_dict(), default=str),
        *(v if isinstance(v, str) else json.dumps(v, default=str) for v in bundle.values()),
    ]


def leaks(texts: dict[str, str | bytes]) -> list[str]:
    """``where: which secret`` for every secret found in any of ``texts``."""
    found = []
    for where, text in texts.items():
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        for name, secret in SECRETS.items():
            if secret.encode() in data or json.dumps(secret)[1:-1].encode() in data:
                found.append(f"{where}: {name}")
    return found


def test_the_scan_finds_a_planted_secret(tmp_path: Path) -> None:
    """The check below can fail: a secret written anywhere is found."""
    (tmp_path / "note.txt").write_text(f"oops {SECRETS['agent option']}")
    assert leaks({"note.txt": (tmp_path / "note.txt").read_bytes()}) == ["note.txt: agent option"]


async def test_no_secret_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["environment"])
    made = openai.AsyncOpenAI

    def with_the_mock_server(**kwargs: Any) -> openai.AsyncOpenAI:  # the clients build their own SDK client
        return made(http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)), **kwargs)

    monkeypatch.setattr(openai, "AsyncOpenAI", with_the_mock_server)

    chat = OpenAIChatClient(
        "gemma-test",
        base_url=URL,
        api_key=SECRETS["api_key"],
        default_headers={"X-Api-Key": SECRETS["default header (chat)"]},
        extra_body={"client_secret": SECRETS["client option"]},
    )
    responses = OpenAIResponsesClient(
        "gemma-test", base_url=URL, default_headers={"X-Auth-Token": SECRETS["default header (responses)"]}
    )  # its key: OPENAI_API_KEY
    proxied = OpenAIChatClient("gemma-test", base_url=PROXIED_URL)  # its key: the URL's credentials
    cassette = tmp_path / "cassettes" / "chat.json"
    recorder = RecordingChatClient(chat, cassette)
    proxy_recorder = RecordingChatClient(proxied, tmp_path / "cassettes" / "proxied.json")

    def pick(messages: Any, options: Any, session: Any) -> str:
        if any("PROXY" in m.text for m in messages):
            return "proxied"
        return "responses" if any(m.role == "system" and "sentence" in m.text for m in messages) else "chat"

    routes = {"chat": recorder, "responses": responses, "proxied": proxy_recorder}
    router = RoutingChatClient(routes, select=pick)
    history = SQLiteHistoryProvider(tmp_path / "history.sqlite")
    planner = ChatAgent(
        router,
        name="planner",
        instructions="List three things to do.",
        history=history,
        options={"extra_headers": {"Proxy-Authorization": f"Bearer {SECRETS['agent bearer header']}"}},
    )
    writer = ChatAgent(
        router,
        name="writer",
        instructions="Turn the list into one sentence.",
        history=history,
        options={"extra_body": {"password": SECRETS["agent option"]}},
    )
    workflow = (
        WorkflowBuilder(start_executor=AgentExecutor(planner), name="trip")
        .add_edge("planner", AgentExecutor(writer))
        .build()
    )
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    run_kwargs = {"writer": {"extra_headers": {"X-Access-Token": SECRETS["run client_kwargs"]}}}

    shown: dict[str, str] = {}
    result = await workflow.run("A rainy Sunday in Porto", checkpoint_storage=storage, client_kwargs=run_kwargs)
    assert [o.text.split(":")[0] for o in result.get_outputs()] == ["Planned", "Written"]
    for i, text in enumerate(shown_of(result)):
        shown[f"the run's result ({i})"] = text

    stream = workflow.run("A sunny Monday", stream=True, checkpoint_storage=storage, client_kwargs=run_kwargs)
    seen = [event async for event in stream]
    assert stream.result is not None and "Streamed" in "".join(o.text for o in stream.result.get_outputs())
    shown["the streamed run's events"] = "\n".join(repr(e) for e in seen)
    for i, text in enumerate(shown_of(stream.result)):
        shown[f"the streamed run's result ({i})"] = text

    with pytest.raises(RunError) as failed:
        await workflow.run("FAIL on purpose", checkpoint_storage=storage, client_kwargs=run_kwargs)
    shown["a failed call's error"] = everything_shown(failed.value)
    assert "bad request" in shown["a failed call's error"]

    broken = workflow.run("PAGE instead of events", stream=True, client_kwargs=run_kwargs)
    with pytest.raises(RunError) as paged:
        async for _ in broken:
            pass
    shown["a streamed call answered with a page"] = everything_shown(paged.value)
    assert "a web page, not the API" in shown["a streamed call answered with a page"]

    for stream_it in (False, True):  # through the proxy, whose URL holds a login (the route from now on)
        run = workflow.run("PROXY: a cloudy Tuesday", stream=stream_it, checkpoint_storage=storage)
        if stream_it:
            seen = [event async for event in run]
            shown["the proxied streamed run's events"] = "\n".join(repr(e) for e in seen)
            run = run.result
        else:
            run = await run
        assert "authorization: ***" in "".join(o.text for o in run.get_outputs())  # the login went, came back masked
        for i, text in enumerate(shown_of(run)):
            shown[f"the proxied run's result ({stream_it}, {i})"] = text

    replay = ChatAgent(
        ReplayChatClient(cassette), name="planner", instructions="List three things to do.", options=planner.options
    )
    with pytest.raises(CassetteError) as differs:
        await replay.run("A different question")
    shown["a replay's diff"] = everything_shown(differs.value)
    assert "differs from the one recorded" in shown["a replay's diff"]

    await chat.aclose()
    await responses.aclose()
    await proxied.aclose()
    history.close()
    for name, value in {"chat": chat, "responses": responses, "proxied": proxied, "recorder": recorder, "router": router,
                        "planner": planner, "writer": writer, "workflow": workflow}.items():  # fmt: skip
        shown[f"repr of the {name}"] = repr(value)
    shown["the logs"] = caplog.text + "\n".join(r.getMessage() for r in caplog.records)

    written = {str(p.relative_to(tmp_path)): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    assert any(name.startswith("checkpoints") for name in written), written.keys()
    assert "history.sqlite" in written and "cassettes/chat.json" in written and "cassettes/proxied.json" in written
    found = leaks({**written, **shown})
    assert not found, "secrets found:\n" + "\n".join(found)
