"""Serve a GGUF model on loopback with llama.cpp's server (the xllamacpp wheel), until SIGTERM.

    python serve.py --model gemma.gguf --port 8931 [--template chat_template.jinja]

Used by the real-model tests: they start it, talk to it with the OpenAI SDK, stop it by PID.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

import xllamacpp

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--template", default=str(HERE / "gemma_tools.jinja"))
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {"gemma-3-270m"}  # what answers say they came from (not a path on this machine)
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1  # one request at a time: answers do not depend on what else is running
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.chat_template = Path(args.template).read_text()
    server = xllamacpp.Server(params)  # serves on its own threads
    print(f"listening on {server.listening_address}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
