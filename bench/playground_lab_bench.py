"""What a playground turn costs in JupyterLab: seconds to answer, and bytes the kernel sends, turn by turn.

    python bench/playground_lab_bench.py [--quick] [--turns N] [--rounds R] [--no-throttle] [--stream-delay S]

A real JupyterLab (started by PID on 127.0.0.1 with an isolated Jupyter configuration, stopped at
the end) and headless Debian chromium driven by playwright. The notebook, written to a temporary
directory, builds three agents (planner -> researcher -> writer) on the ``smart`` route of a
``RoutingChatClient`` (``MirrorChatClient``, which answers with what it was given), each in ``full``
context mode with its own history, so every reply grows with the conversation, and shows a
``Playground``. The bench types a message and presses Enter in the playground's own text box, 15
times, one conversation; then presses Reset and holds the conversation again, 3 conversations in all
(``--quick``: one of 5 turns). The figures are the median over the conversations.

Per turn:

- seconds: from the Enter key going down to the first frame the browser draws once the turn is
  finished in the page: that turn's block (``.turn[data-turn=N]``) is in the transcript with its
  three replies, no turn is marked running, and the text box and Send are enabled again with the box
  emptied (timed in the page: a key listener and a mutation observer on the playground);
- view s: until the run view below the transcript last changed (it is sent after the transcript,
  but may be drawn before it);
- last frame s: until the last frame of the turn reached playwright (the kernel's part, and the wire's);
- browser s: chromium's main thread busy during the turn, until the kernel is quiet (its
  ``TaskDuration``; the JSON lines split out script, layout and style);
- frames, kB: websocket frames the page received from the key press until the kernel is quiet again
  (0.3 s without a frame once the turn is drawn), all websockets of the page;
- turn kB: the size of that turn's block in the page, what a turn has to send at the least.

Target: the last turn (turn 15) answered in at most 0.5 s (exit status 1 otherwise). Its bytes are
compared with turn 1's and with the turn's own size (printed, not a target: the replies grow with the
history, so turn 15 is larger than turn 1 by itself). ``--no-throttle`` sets the playground's
``LIVE_EVERY`` to 0 in the bench notebook (every streamed word is sent): what the throttle saves, and
proof that the bench can fail. The bench stops after ``--timeout`` seconds (600), the server and the
browser with it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from jupyter_lab import CHROMIUM, chromium_page, isolated_env, lab

TARGET_S = 0.5
QUIET_S = 0.3  # no frame for this long once the turn is drawn: the kernel has sent all of that turn
TURN_TIMEOUT_MS = 60_000
NOTEBOOK = "playground_bench.ipynb"
AGENTS = ("planner", "researcher", "writer")

CELL = """\
import agent_nb.widgets.playground as playground_module
from agent_nb import AgentExecutor, ChatAgent, EchoChatClient, InMemoryHistoryProvider, MirrorChatClient
from agent_nb import RoutingChatClient, WorkflowBuilder
from agent_nb.widgets import Playground

LIVE_EVERY = {live_every!r}  # None: the playground's own throttle
if LIVE_EVERY is not None:
    playground_module.LIVE_EVERY = LIVE_EVERY
router = RoutingChatClient({{"smart": MirrorChatClient(stream_delay={delay!r}), "fast": EchoChatClient()}})
agents = [AgentExecutor(ChatAgent(router, name=name, history=InMemoryHistoryProvider())) for name in {agents!r}]
playground = Playground(WorkflowBuilder(start_executor=agents[0], name="bench").add_chain(agents).build())
assert playground.route.value == "smart", playground.route.value
assert all(m.value == "full" for m in playground.modes.values()), [m.value for m in playground.modes.values()]
print("live every", playground_module.LIVE_EVERY, "s")
playground
"""

WATCH = """(agents) => {
  const pg = document.querySelector('.anb-playground');
  const b = window.__anbBench = {n: 0, t0: null, dom: null, paint: null, view: null, size: 0};
  const finished = (n) => {
    const turn = pg.querySelector(`.anb-transcript .turn[data-turn="${n}"]:not(.running)`);
    if (!turn || turn.querySelectorAll('.msg.assistant').length < agents) return null;
    if (pg.querySelector('.anb-transcript .turn.running')) return null;
    const input = pg.querySelector('.widget-text input');
    const send = [...pg.querySelectorAll('button')].find((e) => e.textContent.includes('Send'));
    if (!input || input.disabled || input.value !== '' || !send || send.disabled) return null;
    return turn;
  };
  const check = () => {
    if (b.t0 === null) return;
    const now = performance.now();
    if (b.dom === null) {
      const turn = finished(b.n);
      if (turn) {
        b.dom = now;
        b.size = new Blob([turn.outerHTML]).size;
        requestAnimationFrame(() => { b.paint = performance.now(); });
      }
    }
  };
  const viewed = () => { if (b.t0 !== null) b.view = performance.now(); };  // its last change, whatever it says
  const tick = () => { check(); requestAnimationFrame(tick); };  // and between mutations, in case
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && pg.contains(e.target) && b.t0 === null) b.t0 = performance.now();
  }, true);
  const all = {subtree: true, childList: true, attributes: true, characterData: true};
  new MutationObserver(check).observe(pg, all);
  new MutationObserver(viewed).observe(pg.querySelector('.anb-view'), all);
  requestAnimationFrame(tick);
}"""


STATE = """() => {
  const pg = document.querySelector('.anb-playground');
  const input = pg && pg.querySelector('.widget-text input');
  const send = pg && [...pg.querySelectorAll('button')].find((e) => e.textContent.includes('Send'));
  return {bench: window.__anbBench, input: input && [input.value, input.disabled], send: send && send.disabled,
          transcript: pg && pg.querySelector('.anb-transcript').innerText.slice(-600),
          status: pg && pg.querySelector('.anb-status').innerText};
}"""


class Frames:
    """Websocket frames the page receives, counted into the turn under way (none between turns)."""

    def __init__(self) -> None:
        self.turn: tuple[int, int] | None = None  # (round, turn)
        self.counts: dict[tuple[int, int], list[int]] = {}
        self.times: dict[tuple[int, int], list[float]] = {}  # monotonic times of the turn's first and last frame
        self.urls: dict[str, int] = {}
        self.last = time.monotonic()

    def attach(self, ws: Any) -> None:
        ws.on("framereceived", lambda payload: self.received(ws.url, payload))

    def received(self, url: str, payload: str | bytes) -> None:
        size = len(payload) if isinstance(payload, bytes) else len(payload.encode())
        self.last = time.monotonic()
        path = re.sub(r"\?.*", "", url)
        self.urls[path] = self.urls.get(path, 0) + size
        if self.turn is not None:
            count = self.counts.setdefault(self.turn, [0, 0])
            count[0] += 1
            count[1] += size
            self.times.setdefault(self.turn, [self.last, self.last])[1] = self.last

    def wait_quiet(self, page: Any, quiet: float = QUIET_S, limit: float = 30.0) -> None:
        end = time.monotonic() + limit
        while time.monotonic() - self.last < quiet and time.monotonic() < end:
            page.wait_for_timeout(50)  # playwright delivers the frame events while it waits


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Raise ``TimeoutError`` in the main thread after ``seconds`` (the finally blocks still stop everything)."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the bench took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def write_notebook(root: Path, live_every: float | None, delay: float) -> None:
    source = CELL.format(live_every=live_every, delay=delay, agents=AGENTS)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / NOTEBOOK)


def open_playground(page: Any, url: str) -> None:
    """Open the notebook, run it (Run > Run All Cells) and wait for the playground and an idle kernel."""
    from playwright.sync_api import expect

    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    expect(page.locator(".jp-StatusBar-TextItem").filter(has_text=re.compile(r"\| Idle$"))).to_have_count(1)
    page.locator(".lm-MenuBar-item", has_text="Run").click()
    page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
    expect(page.locator(".jp-OutputArea-output").filter(has_text="live every")).to_have_count(1)
    expect(page.locator(".jp-InputPrompt").filter(has_text="[*]")).to_have_count(0)
    expect(page.locator(".anb-playground .anb-transcript")).to_contain_text("no turns yet")


BUSY = {"TaskDuration": "browser", "ScriptDuration": "script", "LayoutDuration": "layout",
        "RecalcStyleDuration": "style"}  # fmt: skip
"""Chromium's counters of its main thread's busy seconds (``Performance.getMetrics``), and our names for them."""


def busy(cdp: Any) -> dict[str, float]:
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return {BUSY[m["name"]]: m["value"] for m in metrics if m["name"] in BUSY}


def one_turn(page: Any, cdp: Any, frames: Frames, key: tuple[int, int]) -> dict[str, Any]:
    """Type turn ``n``'s message, press Enter, wait until it is finished in the page and the kernel is quiet."""
    n = key[1]
    playground = page.locator(".anb-playground").first
    text = playground.locator(".widget-text input").first
    page.evaluate("(n) => Object.assign(window.__anbBench, {n, t0: null, dom: null, paint: null, view: null})", n)
    text.fill(f"Turn {n}: plan a rainy Sunday in Lisbon, indoors, with a museum and lunch")
    frames.wait_quiet(page)  # the typed value has reached the kernel: only the turn is counted
    before = busy(cdp)
    pressed = time.monotonic()
    frames.turn = key
    text.press("Enter")
    page.wait_for_function("() => window.__anbBench.paint !== null", timeout=TURN_TIMEOUT_MS, polling=50)
    frames.wait_quiet(page)  # the run view comes after the transcript
    frames.turn = None
    after = busy(cdp)
    b = page.evaluate("() => window.__anbBench")
    count, size = frames.counts.get(key, [0, 0])
    first, last = frames.times.get(key, [pressed, pressed])
    return {
        "round": key[0],
        "turn": n,
        "seconds": round((b["paint"] - b["t0"]) / 1000, 3),
        "dom_seconds": round((b["dom"] - b["t0"]) / 1000, 3),
        "view_seconds": None if b["view"] is None else round((b["view"] - b["t0"]) / 1000, 3),
        "first_frame_seconds": round(first - pressed, 3),
        "last_frame_seconds": round(last - pressed, 3),
        **{f"{name}_seconds": round(after[name] - before[name], 3) for name in BUSY.values()},
        "frames": count,
        "bytes": size,
        "turn_bytes": b["size"],
    }


def reset(page: Any, frames: Frames) -> None:
    """Start the conversation again with the playground's Reset button."""
    from playwright.sync_api import expect

    playground = page.locator(".anb-playground").first
    playground.locator("button", has_text="Reset").click()
    expect(playground.locator(".anb-transcript")).to_contain_text("no turns yet")
    frames.wait_quiet(page)


def bench(
    turns: int, rounds: int, live_every: float | None, delay: float, artifacts: Path | None
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="playground-lab-bench-") as tmp:
        base = Path(tmp)
        root = base / "root"
        root.mkdir()
        write_notebook(root, live_every, delay)
        env = isolated_env(base, {"notebook-extension/tracker": {"windowingMode": "none"}})
        env["AGENT_NB_NO_PROGRESS"] = "1"
        rows: list[dict[str, Any]] = []
        with lab(root, base, env, NOTEBOOK) as url, chromium_page() as page:
            frames = Frames()
            page.on("websocket", frames.attach)
            try:
                cdp = page.context.new_cdp_session(page)
                cdp.send("Performance.enable")
                open_playground(page, url)
                page.evaluate(WATCH, len(AGENTS))
                frames.wait_quiet(page, 1.0)
                for k in range(1, rounds + 1):
                    if k > 1:
                        reset(page, frames)
                    mine = [one_turn(page, cdp, frames, (k, n)) for n in range(1, turns + 1)]
                    rows += mine
                    print(
                        f"# round {k}: turn {turns} {mine[-1]['seconds']:.3f} s, slowest turn "
                        f"{max(r['seconds'] for r in mine):.3f} s, {sum(r['bytes'] for r in mine) / 1000:,.1f} kB",
                        flush=True,
                    )
            except BaseException:
                with contextlib.suppress(Exception):
                    print("# the page when it stopped: " + json.dumps(page.evaluate(STATE)), file=sys.stderr)
                if artifacts is not None:
                    page.screenshot(path=str(artifacts / "playground-lab-bench-failed.png"), full_page=True)
                print((base / "lab.log").read_text()[-3000:], file=sys.stderr)
                raise
            print("# bytes received per websocket: " + json.dumps(frames.urls))
        return rows


def table(rows: list[dict[str, Any]], turns: int) -> list[dict[str, Any]]:
    """Per turn, the median over the rounds (and the fastest and slowest seconds); prints the table."""
    print(
        f"{'turn':>4}  {'seconds':>7}  {'min':>6}  {'max':>6}  {'view s':>6}  {'last frame s':>12}  {'browser s':>9}  "
        f"{'frames':>6}  {'kB':>7}  {'turn kB':>7}"
    )
    summary = []
    for n in range(1, turns + 1):
        mine = [r for r in rows if r["turn"] == n]
        keys = ("seconds", "last_frame_seconds", "browser_seconds", "frames", "bytes")
        med = {k: statistics.median(r[k] for r in mine) for k in keys}
        views = [r["view_seconds"] for r in mine if r["view_seconds"] is not None]
        view = statistics.median(views) if views else float("nan")
        low, high = min(r["seconds"] for r in mine), max(r["seconds"] for r in mine)
        summary.append({"turn": n, **med, "turn_bytes": mine[0]["turn_bytes"]})
        print(
            f"{n:>4}  {med['seconds']:>7.3f}  {low:>6.3f}  {high:>6.3f}  {view:>6.3f}  "
            f"{med['last_frame_seconds']:>12.3f}  {med['browser_seconds']:>9.3f}  {med['frames']:>6.0f}  "
            f"{med['bytes'] / 1000:>7.1f}  {mine[0]['turn_bytes'] / 1000:>7.1f}"
        )
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one conversation of 5 turns")
    parser.add_argument("--turns", type=int, default=None, help="turns of a conversation (15)")
    parser.add_argument("--rounds", type=int, default=None, help="conversations, one after another (3)")
    parser.add_argument("--no-throttle", action="store_true", help="LIVE_EVERY = 0: every streamed word is sent")
    parser.add_argument("--stream-delay", type=float, default=0.0, help="seconds between streamed words (0)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds for the whole bench (600)")
    args = parser.parse_args(argv)
    turns = args.turns or (5 if args.quick else 15)
    rounds = args.rounds or (1 if args.quick else 3)
    if CHROMIUM is None:
        print("# FAIL  chromium is not installed (apt-get install chromium, or set CHROMIUM=/path)")
        return 1
    shots = Path(os.environ["AGENT_NB_ARTIFACTS"]) if os.environ.get("AGENT_NB_ARTIFACTS") else None
    live_every = 0.0 if args.no_throttle else None
    print(
        f"# playground in JupyterLab: {rounds} x {turns} turns, {len(AGENTS)} agents in full mode on "
        f"MirrorChatClient, stream delay {args.stream_delay} s, "
        f"LIVE_EVERY {'0 (--no-throttle)' if args.no_throttle else 'as shipped'}",
        flush=True,
    )
    started = time.monotonic()
    with deadline(args.timeout):
        rows = bench(turns, rounds, live_every, args.stream_delay, shots)
    print(f"# {time.monotonic() - started:.0f} s in all")
    for r in rows:
        print(json.dumps({"bench": "playground_lab", "no_throttle": args.no_throttle, **r}))
    summary = table(rows, turns)

    first, last = summary[0], summary[-1]
    ok = last["seconds"] <= TARGET_S
    each = ", ".join(f"{r['seconds']:.3f}" for r in rows if r["turn"] == turns)
    print(
        f"# {'PASS' if ok else 'FAIL'}  turn {turns} with full history answered in JupyterLab = "
        f"{last['seconds']:.3f} s, median of {rounds} ({each})  (target <= {TARGET_S} s)"
    )
    print(
        f"#       bytes received in turn {turns} = {last['bytes'] / 1000:,.1f} kB in {last['frames']:.0f} frames: "
        f"{last['bytes'] / max(first['bytes'], 1):.1f}x turn 1's {first['bytes'] / 1000:,.1f} kB; "
        f"{last['bytes'] / max(last['turn_bytes'], 1):.1f}x the turn's own {last['turn_bytes'] / 1000:,.1f} kB "
        f"(turn 1: {first['bytes'] / max(first['turn_bytes'], 1):.1f}x)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
