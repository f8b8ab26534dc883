"""The run view in a real browser (headless Debian chromium): the DOM a reader sees, and a screenshot.

The screenshot goes to $AGENT_NB_ARTIFACTS (or the test's temporary directory): look at it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from agent_nb import AgentExecutor, ChatAgent, EchoChatClient, WorkflowBuilder
from agent_nb.demo import QUESTION, build_demo
from agent_nb.display import page, run_view

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
EVIL = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs it)"),
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """The page, written before the browser starts (Playwright's sync API runs an event loop of its own)."""
    return sample_page(tmp_path_factory.mktemp("run-view"))


@pytest.fixture(scope="module")
def browser(sample):
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=FLAGS, viewport={"width": 1400, "height": 1100}
        )
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


def sample_page(tmp_path: Path) -> Path:
    async def runs():
        demo = await build_demo().run(QUESTION)
        evil = AgentExecutor(ChatAgent(EchoChatClient(), name="echo", instructions=EVIL))
        hostile = await WorkflowBuilder(start_executor=evil, name="hostile").build().run(EVIL)
        return demo, hostile

    demo, hostile = asyncio.run(runs())
    path = tmp_path / "run_view.html"
    path.write_text(page("run view", run_view(demo) + run_view(hostile)), encoding="utf-8")
    return path


def test_the_run_view_in_chromium(browser, sample, tmp_path):
    path = sample
    tab = browser.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(path.as_uri())
    demo = tab.locator(".anb").first
    assert demo.locator("section.col").count() == 3
    writer = demo.locator('section.col[data-executor="writer"]')
    dropped = writer.locator(".msg.dropped")
    assert dropped.count() == 1
    assert "line-through" in dropped.first.evaluate("e => getComputedStyle(e).textDecorationLine")
    assert writer.locator(".badge.moved").count() == 1
    assert demo.locator("svg.anb-graph g.n").count() == 3
    assert tab.evaluate("window.pwned") is None and not errors  # nothing from the content ran
    assert "<script>window.pwned = 1</script>" in tab.locator(".anb").nth(1).inner_text()
    shots = Path(os.environ.get("AGENT_NB_ARTIFACTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(shots / "run_view.png"), full_page=True)
    assert (shots / "run_view.png").stat().st_size > 10_000
