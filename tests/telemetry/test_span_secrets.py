"""No secret in any span, whatever the setting: a run's own keys and headers, and the text of its errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import Spans

from agent_nb import ChatAgent, FunctionChatClient, Message, ScriptedChatClient, WorkflowBuilder, telemetry
from agent_nb.clients.openai import OpenAIChatClient
from agent_nb.errors import StepFailed
from agent_nb.messages import FunctionCallContent

KEY = "sk-proj-otel-CLIENTKEY-0123456789abcdef"
HEADER = "otel-hdr-secret-0123456789abcdefghij"
OPTION = "sk-otel-OPTIONKEY-0123456789abcdef"
BEARER = "otel-bearer-0123456789abcdefghijkl"
SECRETS = (KEY, HEADER, OPTION, BEARER)


class _Server(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that says back what it was told; "fail" gets a 401 quoting the key."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        said = body["messages"][-1]["content"]
        if "fail" in said:
            error = {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}
            self._send(401, error)
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": f"you said: {said}"}, "finish_reason": "stop"}
        usage = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
        self._send(200, {"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-test",
                         "choices": [choice], "usage": usage})  # fmt: skip

    def _send(self, status: int, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def exported(spans: Spans) -> str:
    """Every attribute, event and status of every span, as text."""
    return json.dumps(spans.attributes(), default=str) + "".join(s.to_json() for s in spans.all)


@pytest.mark.allow_model_calls  # a server of the test's own, on loopback
async def test_a_runs_own_keys_headers_and_secret_options_are_never_exported(spans: Spans, base_url: str) -> None:
    client = OpenAIChatClient(
        "gpt-test", base_url=base_url, api_key=KEY, max_retries=0, default_headers={"X-Api-Key": HEADER}
    )
    options = {"temperature": 0.3, "extra_body": {"api_key": OPTION}, "extra_headers": {"Authorization": BEARER}}
    agent = ChatAgent(client, name="planner", options=options)
    workflow = WorkflowBuilder(start_executor=agent, name="trip").build()
    said = f"my keys are {KEY}, {HEADER}, {OPTION} and {BEARER}"
    with telemetry.instrument(spans.provider, capture_content=True):  # no secrets=, no environment variable
        result = await workflow.run(said)
        failing = WorkflowBuilder(start_executor=ChatAgent(client, name="failing"), name="bad").build()
        with pytest.raises(StepFailed):
            await failing.run(f"please fail, {KEY}")
    chat = spans.one("chat gpt-test")
    assert "my keys are" in chat.attributes["gen_ai.input.messages"]  # the content is there...
    assert spans.one("workflow bad").status.status_code.name == "ERROR"
    text = exported(spans)
    assert not [s for s in SECRETS if s in text]  # ...and no secret of the run
    spans.clear()
    result.to_otel(spans.provider, capture_content=True)  # after the fact: the result knows its workflow
    assert "my keys are" in spans.one("chat gpt-test").attributes["gen_ai.input.messages"]
    text = exported(spans)
    assert not [s for s in SECRETS if s in text]


TOKEN = "tok-otel-0123456789abcdefghijklmnop"


def login(user: str) -> str:
    """Log in."""
    raise PermissionError(f"token {TOKEN} rejected for {user}")


def broken(messages: list[Message], options: Any) -> str:
    raise ConnectionError(f"the proxy refused Authorization: Bearer {BEARER} for {messages[-1].text}")


async def run_failures() -> None:
    call = Message("assistant", [FunctionCallContent(call_id="c1", name="login", arguments={"user": "ann"})])
    agent = ChatAgent(ScriptedChatClient([call, "Could not."]), name="greeter", tools=[login])
    await WorkflowBuilder(start_executor=agent, name="desk").build().run("log me in")
    with pytest.raises(StepFailed):
        await (
            WorkflowBuilder(start_executor=ChatAgent(FunctionChatClient(broken), name="b"), name="f")
            .build()
            .run("my secret plan")
        )


async def test_an_errors_text_is_not_exported_without_content_only_its_type(spans: Spans) -> None:
    with telemetry.instrument(spans.provider):
        await run_failures()
    tool = spans.one("execute_tool login")
    assert tool.status.status_code.name == "ERROR"
    assert (tool.status.description, tool.attributes["error.type"]) == ("PermissionError", "PermissionError")
    chat = spans.one("chat b")
    assert (chat.status.description, chat.attributes["error.type"]) == ("ConnectionError", "ConnectionError")
    assert spans.one("invoke_agent b").status.description == "ModelError"
    assert spans.one("workflow f").status.description == "StepFailed"
    text = exported(spans)
    assert TOKEN not in text and BEARER not in text and "my secret plan" not in text and "rejected for" not in text


async def test_an_errors_text_is_exported_with_content_its_secrets_masked(spans: Spans) -> None:
    with telemetry.instrument(spans.provider, capture_content=True, secrets=[TOKEN]):
        await run_failures()
    tool = spans.one("execute_tool login")
    assert tool.status.description == "PermissionError: token *** rejected for ann"
    assert tool.attributes["error.type"] == "PermissionError"
    chat = spans.one("chat b")
    assert "Authorization: Bearer ***" in chat.status.description and "my secret plan" in chat.status.description
    assert "the proxy refused" in spans.one("workflow f").status.description
    text = exported(spans)
    assert TOKEN not in text and BEARER not in text
