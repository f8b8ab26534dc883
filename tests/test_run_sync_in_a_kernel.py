"""``run_sync`` inside a real Jupyter kernel, with cells queued the way "Run All" queues them."""

import time

from jupyter_client.manager import start_new_kernel

CELLS = [
    "import asyncio\n"
    "from agent_nb import ChatAgent, EchoChatClient, WorkflowBuilder\n"
    "from agent_nb.sync import run_sync\n"
    "wf = WorkflowBuilder(start_executor=ChatAgent(EchoChatClient(), name='e')).build()\n"
    "for _ in range(3):\n"
    "    run_sync(asyncio.sleep(0.05))  # a coroutine that waits: the kernel could get a word in\n"
    "print(wf.run_sync('first').get_outputs()[0].text)",
    "print('second', wf.run_sync('again').get_outputs()[0].text)",
    "print('third')",
]


def test_queued_cells_run_in_order_after_a_run_sync_cell():
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        ids = [kc.execute(code) for code in CELLS]  # all sent before the first one finishes
        printed: dict[int, str] = {}
        idle: set[str] = set()
        deadline = time.monotonic() + 120
        while len(idle) < len(ids) and time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=30)
            parent = msg["parent_header"].get("msg_id")
            if parent not in ids:
                continue
            if msg["msg_type"] == "stream":
                printed[ids.index(parent)] = printed.get(ids.index(parent), "") + msg["content"]["text"]
            elif msg["msg_type"] == "error":
                printed[ids.index(parent)] = "error: " + msg["content"]["evalue"]
            elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                idle.add(parent)
        assert printed == {0: "first\n", 1: "second again\n", 2: "third\n"}
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
