"""The kernel's stop button in the middle of ``await exp.run(...)``: finished cells kept, how to resume said."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from builds import finished, stored
from doubles import subprocess_env
from jupyter_client.manager import start_new_kernel

SETUP = """
import sys
from builds import Slow, chain, questions
from agent_nb import MirrorChatClient
from agent_nb.experiments import Experiment

def build(config):
    return chain(config, Slow(MirrorChatClient(words=8), 0.02))

exp = Experiment(build, inputs=questions(60), name="stopped")
"""


def outputs(kc: Any, msg_id: str, limit: float = 120) -> tuple[str, str]:
    """What the cell printed (stdout and stderr together) and the name of the error it ended with."""
    text, error = "", ""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=limit)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text += msg["content"]["text"]
        elif msg["msg_type"] == "error":
            error = msg["content"]["ename"]
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return text, error
    raise TimeoutError(f"the cell did not finish in {limit} s: {text}")


def test_the_stop_button_keeps_the_finished_cells_and_the_next_run_finishes_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    km, kc = start_new_kernel(kernel_name="python3", env=subprocess_env(__file__), cwd=str(tmp_path))
    try:
        _, error = outputs(kc, kc.execute(SETUP))
        assert error == ""
        running = kc.execute(f"result = await exp.run(store={str(path)!r}, max_concurrency=2)")
        deadline = time.monotonic() + 60
        while stored(path) < 5:
            assert time.monotonic() < deadline, "no cell was stored in time"
            time.sleep(0.02)
        km.interrupt_kernel()
        printed, error = outputs(kc, running)
        kept = finished(path)
        assert error in ("KeyboardInterrupt", "CancelledError"), (error, printed)
        assert f"experiment 'stopped' stopped: {kept} of 60 cells finished" in printed and "run it again" in printed
        assert 5 <= kept < 60
        printed, error = outputs(kc, kc.execute(f"result = await exp.run(store={str(path)!r}); print(len(result))"))
        assert (error, printed.strip().splitlines()[-1]) == ("", "60")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
