"""A request answered once is answered: from a resumed checkpoint, a form still on screen, another process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from doubles import subprocess_env

from agent_nb import (
    AgentExecutor,
    ChatAgent,
    Executor,
    FileCheckpointStorage,
    FunctionCallContent,
    FunctionChatClient,
    InMemoryHistoryProvider,
    Message,
    RequestError,
    RequestResponse,
    SQLiteCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    tool,
)
from agent_nb.widgets import RequestsForm


def desk(storage: Any, refunds: Path) -> Any:
    @tool(requires_approval=True)
    def refund(order: str) -> str:
        """Refund an order."""
        with refunds.open("a") as f:
            f.write(order + "\n")
        return f"refunded {order}"

    def model(messages: list[Message], options: Any) -> Any:
        last = messages[-1].contents[-1]
        if last.type == "function_result":
            return f"Done: {last.result or last.exception}"
        return Message("assistant", [FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7"})])

    agent = ChatAgent(FunctionChatClient(model), name="support", tools=[refund], history=InMemoryHistoryProvider())
    return WorkflowBuilder(start_executor=AgentExecutor(agent), name="desk", checkpoint_storage=storage).build()


def made(refunds: Path) -> list[str]:
    return refunds.read_text().split() if refunds.exists() else []


@pytest.fixture(params=["file", "sqlite"])
def storage(request: Any, tmp_path: Path) -> Any:
    if request.param == "file":
        return lambda: FileCheckpointStorage(tmp_path / "checkpoints")
    return lambda: SQLiteCheckpointStorage(tmp_path / "checkpoints.sqlite")


async def test_an_approval_answered_from_a_resume_is_refused_by_the_form_and_by_a_second_resume(
    storage: Any, tmp_path: Path
) -> None:
    refunds = tmp_path / "refunds.txt"
    first = desk(storage(), refunds)
    waiting = await first.run("Refund A7, please")
    (asked,) = waiting.pending_requests
    form = RequestsForm(first)  # still on screen

    resumed = await desk(storage(), refunds).run(  # a fresh workflow: another notebook, a restart
        checkpoint_id=waiting.checkpoint_id, checkpoint_storage=storage(), responses={asked.request_id: True}
    )
    assert resumed.status == "completed" and made(refunds) == ["A7"]

    await form.answer(asked.request_id, True)
    assert isinstance(form.last_error, RequestError)
    assert f"request {asked.request_id!r} was answered already, at " in str(form.last_error)
    assert "by a run of workflow 'desk' (process" in str(form.last_error)
    row = form.rows[asked.request_id]
    assert row.approve.disabled and "answered at" in row.note.value  # the form shows it answered
    assert made(refunds) == ["A7"]

    with pytest.raises(RequestError, match="was answered already") as again:
        await desk(storage(), refunds).run(
            checkpoint_id=waiting.checkpoint_id, checkpoint_storage=storage(), responses={asked.request_id: True}
        )
    assert again.value.answered["by"].startswith("a run of workflow 'desk'")
    assert made(refunds) == ["A7"]  # the refund ran once


async def test_a_form_opened_after_another_process_answered_shows_it_answered(storage: Any, tmp_path: Path) -> None:
    refunds = tmp_path / "refunds.txt"
    first = desk(storage(), refunds)
    waiting = await first.run("Refund A7, please")
    (asked,) = waiting.pending_requests
    where = (
        tmp_path / "checkpoints" if isinstance(storage(), FileCheckpointStorage) else tmp_path / "checkpoints.sqlite"
    )
    kind = "FileCheckpointStorage" if isinstance(storage(), FileCheckpointStorage) else "SQLiteCheckpointStorage"
    script = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from agent_nb import {kind}
        from test_answered_once import desk
        storage = {kind}({str(where)!r})
        result = asyncio.run(desk(storage, Path({str(refunds)!r})).run(
            checkpoint_id={waiting.checkpoint_id!r}, checkpoint_storage=storage, responses={{{asked.request_id!r}: True}}
        ))
        print(result.status)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=subprocess_env(__file__)
    )
    assert done.stdout.strip() == "completed", done.stderr
    form = RequestsForm(first)  # the first process never heard of it, but its storage did
    row = form.rows[asked.request_id]
    assert row.approve.disabled and "by a run of workflow &#x27;desk&#x27; (process" in row.note.value
    assert first.answered(asked.request_id) is not None
    with pytest.raises(RequestError, match="was answered already"):
        await first.run(responses={asked.request_id: True})
    assert made(refunds) == ["A7"]


class Picky(Executor):
    """Asks; its first answer handler fails once, so the answer can be given again."""

    def __init__(self, id: str) -> None:
        super().__init__(id)
        self.failures = 1

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        ctx.request_info("Publish?", bool)

    @handler
    async def on_answer(self, answer: RequestResponse, ctx: WorkflowContext[str, str]) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the publisher is down")
        await ctx.yield_output("published" if answer.value else "kept")


async def test_an_answer_delivered_to_a_run_that_failed_stays_answered_until_given_back(storage: Any) -> None:
    workflow = WorkflowBuilder(start_executor=Picky("picky"), checkpoint_storage=storage()).build()
    waiting = await workflow.run("the draft")
    (asked,) = waiting.pending_requests
    with pytest.raises(Exception, match="the publisher is down") as failed:
        await workflow.run(responses={asked.request_id: True})
    assert any("stay answered" in note for note in failed.value.__notes__)  # what it allowed may have been done
    assert workflow.answered(asked.request_id) is not None
    with pytest.raises(RequestError, match="was answered already"):
        await workflow.run(responses={asked.request_id: True})
    workflow.release_answer(asked.request_id)  # on purpose: the publisher never published
    done = await workflow.run(responses={asked.request_id: True})
    assert done.get_outputs() == ["published"]


async def test_a_run_that_fails_before_delivering_its_answers_gives_them_back(storage: Any, tmp_path: Path) -> None:
    first = WorkflowBuilder(start_executor=Picky("picky"), checkpoint_storage=storage()).build()
    waiting = await first.run("the draft")
    (asked,) = waiting.pending_requests
    changed = WorkflowBuilder(start_executor=Picky("other"), checkpoint_storage=storage()).build()
    with pytest.raises(Exception, match="graph differs"):  # refused while restoring: nothing was delivered
        await changed.run(checkpoint_id=waiting.checkpoint_id, responses={asked.request_id: True})
    assert first.answered(asked.request_id) is None


async def test_two_answers_made_before_either_ran_give_one_answer_and_one_clear_refusal() -> None:
    workflow = WorkflowBuilder(start_executor=Picky("picky")).build()
    workflow.executors["picky"].failures = 0
    (asked,) = (await workflow.run("the draft")).pending_requests
    first, second = workflow.run(responses={asked.request_id: True}), workflow.run(responses={asked.request_id: True})
    assert (await first).get_outputs() == ["published"]
    with pytest.raises(RequestError, match="was answered already"):  # not a KeyError
        await second


async def test_without_a_storage_a_second_answer_in_the_same_workflow_is_refused() -> None:
    workflow = WorkflowBuilder(start_executor=Picky("picky")).build()
    workflow.executors["picky"].failures = 0
    (asked,) = (await workflow.run("the draft")).pending_requests
    await workflow.run(responses={asked.request_id: False})
    with pytest.raises(RequestError, match=r"was answered already, at .* by a run of workflow") as refused:
        await workflow.run(responses={asked.request_id: True})
    assert "storage.latest()" not in str(refused.value)  # no checkpoint to point to
