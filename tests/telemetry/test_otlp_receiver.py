"""Spans sent over OTLP/HTTP to a real receiver on loopback (Arize Phoenix) arrive, and read back through its API.

``make test`` installs Phoenix in a virtual environment of its own (``.venv-phoenix``: its
dependencies are not agent_nb's); the server is started once for this module on a free port of
127.0.0.1, with a working directory of its own, and stopped by its PID.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agent_nb import ChatAgent, Message, ScriptedChatClient, SequentialBuilder, telemetry
from agent_nb.messages import FunctionCallContent

ROOT = Path(__file__).parents[2]
PHOENIX = Path(os.environ.get("AGENT_NB_PHOENIX") or ROOT / ".venv-phoenix" / "bin" / "phoenix")
PROJECT = "agent-nb-tests"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not PHOENIX.exists():
        pytest.fail(
            f"no Phoenix at {PHOENIX}: run 'make test' (it installs it in .venv-phoenix) or set AGENT_NB_PHOENIX"
        )
    port, grpc = _free_port(), _free_port()
    work = tmp_path_factory.mktemp("phoenix")
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = work / "phoenix.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"Phoenix exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"Phoenix was not up in 120 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def _spans(url: str, expected: int) -> list[dict]:
    """The project's spans as Phoenix gives them back (it stores what it receives a moment later)."""
    end = time.monotonic() + 30
    spans: list[dict] = []
    while True:
        try:
            with urllib.request.urlopen(f"{url}/v1/projects/{PROJECT}/spans?limit=100", timeout=5) as answer:
                spans = json.loads(answer.read())["data"]
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # 404: the project is made when its first span arrives
                raise
        if len(spans) >= expected or time.monotonic() > end:
            return spans
        time.sleep(0.25)


async def test_spans_sent_over_otlp_http_arrive_and_read_back_with_their_tree_and_attributes(phoenix: str) -> None:
    provider = TracerProvider(
        resource=Resource.create({"service.name": "agent_nb", "openinference.project.name": PROJECT})
    )
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces")))
    call = Message("assistant", [FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Oslo"})])

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    agents = [
        ChatAgent(ScriptedChatClient(["Look it up."]), name="planner"),
        ChatAgent(ScriptedChatClient([call, "Sunny."]), name="forecaster", tools=[weather]),
    ]
    with telemetry.instrument(provider):
        await SequentialBuilder(agents, name="forecast").build().run("Weather in Oslo?")
    provider.shutdown()
    spans = _spans(phoenix, 7)
    by_id = {s["context"]["span_id"]: s for s in spans}
    names = sorted(s["name"] for s in spans)
    assert names == sorted(
        [
            "workflow forecast",
            "invoke_agent planner",
            "chat scripted",
            "invoke_agent forecaster",
            "chat scripted",
            "execute_tool weather",
            "chat scripted",
        ]
    )
    tool = next(s for s in spans if s["name"] == "execute_tool weather")
    assert by_id[tool["parent_id"]]["name"] == "invoke_agent forecaster"
    assert by_id[by_id[tool["parent_id"]]["parent_id"]]["name"] == "workflow forecast"
    assert tool["attributes"]["gen_ai.tool.name"] == "weather"
    assert len({s["context"]["trace_id"] for s in spans}) == 1
