"""Requests for input and tool approvals: asking, waiting, answering, and surviving a restart."""

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
    AgentExecutorOptions,
    ChatAgent,
    Executor,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    MirrorChatClient,
    RequestError,
    RequestResponse,
    ScriptedChatClient,
    UsageError,
    UserInputRequestContent,
    UserInputResponseContent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from agent_nb.history import InMemoryHistoryProvider
from agent_nb.tools import tool
from agent_nb.workflow import FileCheckpointStorage, InMemoryCheckpointStorage


class Reviewer(Executor):
    """Asks a person whether a draft may go out."""

    @handler
    async def review(self, draft: str, ctx: WorkflowContext[str, str]) -> None:
        ctx.request_info(f"Publish {draft!r}?", bool)

    @handler
    async def on_answer(self, answer: RequestResponse, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output("published" if answer.value else "sent back")


def reviewer_workflow(storage: Any = None) -> Any:
    return WorkflowBuilder(start_executor=Reviewer("reviewer"), checkpoint_storage=storage).build()


async def test_a_request_ends_the_run_waiting_and_an_answer_continues_it() -> None:
    workflow = reviewer_workflow()
    first = await workflow.run("the draft")
    assert first.status == "waiting" and not first.get_outputs()
    (pending,) = first.pending_requests
    assert pending.executor_id == "reviewer" and pending.prompt == "Publish 'the draft'?"
    (event,) = [e for e in first.events if e.type == "request_info"]
    assert event.request_id == pending.request_id and event.response_type is bool
    assert first.trace[0].status == "waiting" and first.trace[0].requested == (pending.request_id,)

    second = await workflow.run(responses={pending.request_id: True})
    assert second.status == "completed" and second.get_outputs() == ["published"]
    assert second.pending_requests == () and workflow.pending_requests == ()


async def test_a_wrong_answer_is_refused_and_the_request_stays_pending() -> None:
    workflow = reviewer_workflow()
    first = await workflow.run("the draft")
    rid = first.pending_requests[0].request_id
    with pytest.raises(RequestError, match=rf"no pending request 'reviewer:9' \(pending: {rid}\)"):
        await workflow.run(responses={"reviewer:9": True})
    with pytest.raises(RequestError, match=rf"answer to request '{rid}' of executor 'reviewer' must be bool, got str"):
        await workflow.run(responses={rid: "yes"})
    assert workflow.pending_requests == first.pending_requests
    assert (await workflow.run(responses={rid: False})).get_outputs() == ["sent back"]
    with pytest.raises(RequestError, match=rf"request '{rid}' was answered already, at .* by a run of workflow"):
        await workflow.run(responses={rid: False})  # answered once is answered


async def test_an_answer_to_an_executor_without_a_handler_for_it_is_refused() -> None:
    class Asker(Executor):
        @handler
        async def ask(self, text: str, ctx: WorkflowContext) -> None:
            ctx.request_info(text, str)

    workflow = WorkflowBuilder(start_executor=Asker("asker")).build()
    rid = (await workflow.run("why?")).pending_requests[0].request_id
    with pytest.raises(RequestError, match=r"'asker' asked .* but has no handler for the answer"):
        await workflow.run(responses={rid: "because"})


async def test_pending_requests_survive_a_checkpoint_and_a_new_process(tmp_path: Path) -> None:
    first = await reviewer_workflow(FileCheckpointStorage(tmp_path)).run("the draft")
    script = textwrap.dedent(
        f"""
        import asyncio
        from test_requests import reviewer_workflow
        from agent_nb.workflow import FileCheckpointStorage

        async def main():
            workflow = reviewer_workflow()
            result = await workflow.run(
                checkpoint_id={first.checkpoint_id!r},
                checkpoint_storage=FileCheckpointStorage({str(tmp_path)!r}),
                responses={{{first.pending_requests[0].request_id!r}: True}},
            )
            print(result.status, result.get_outputs())

        asyncio.run(main())
        """
    )
    (tmp_path / "answer.py").write_text(script)
    env = subprocess_env(__file__)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "answer.py")], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "completed ['published']"


async def test_a_checkpoint_of_a_waiting_run_says_so() -> None:
    storage = InMemoryCheckpointStorage()
    await reviewer_workflow(storage).run("the draft")
    assert storage.list()[-1].status == "waiting"


# -- tool approval --------------------------------------------------------------------------

refunds: list[tuple[str, float]] = []


@tool(requires_approval=True)
def refund(order: str, amount: float) -> str:
    """Refund an order."""
    refunds.append((order, amount))
    return f"refunded {amount} on {order}"


def support(*, history: bool = True, stream: bool = False) -> tuple[Any, ScriptedChatClient]:
    call = FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7", "amount": 20.0})
    client = ScriptedChatClient([Message("assistant", [call]), "The refund is done."])
    agent = ChatAgent(client, name="support", tools=[refund], history=InMemoryHistoryProvider() if history else None)
    writer = AgentExecutor(ChatAgent(MirrorChatClient(), name="writer"))
    workflow = WorkflowBuilder(start_executor=AgentExecutor(agent)).add_edge("support", writer).build()
    return workflow, client


@pytest.fixture(autouse=True)
def _no_refunds() -> None:
    refunds.clear()


@pytest.mark.parametrize("history", [True, False], ids=["with-history", "without-history"])
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_an_approved_tool_call_runs_and_the_agent_goes_on(history: bool, stream: bool) -> None:
    workflow, client = support(history=history)

    async def run(*inputs: Any, **kwargs: Any) -> Any:
        if not stream:
            return await workflow.run(*inputs, **kwargs)
        events = workflow.run(*inputs, **kwargs, stream=True)
        async for _ in events:
            pass
        return events.result

    first = await run("refund A7 please")
    (pending,) = first.pending_requests
    assert isinstance(pending.data, UserInputRequestContent) and pending.data.function_call.name == "refund"
    assert "support wants to call refund(order='A7', amount=20.0)" in pending.prompt
    assert refunds == [] and [s.executor_id for s in first.trace] == ["support"]  # the writer waits too

    done = await run(responses={pending.request_id: True})
    assert refunds == [("A7", 20.0)]
    sent = client.requests[1][0]
    assert [m.role for m in sent] == ["user", "assistant", "tool"]
    assert sent[-1].contents[0].result == "refunded 20.0 on A7"
    assert done.status == "completed"
    assert workflow.executors["writer"].conversation[-1].text.startswith("I see 4 messages")  # it saw it all
    handed = workflow.executors["writer"].conversation[:4]  # the whole turn, as if it never waited: no request
    assert [(m.role, [c.type for c in m.contents]) for m in handed] == [
        ("user", ["text"]),
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
        ("assistant", ["text"]),
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_call_that_needs_approval_appears_once_as_a_request_not_as_an_output(stream: bool) -> None:
    workflow, _ = support()
    if stream:
        events = workflow.run("refund A7 please", stream=True)
        async for _ in events:
            pass
        waiting = events.result
    else:
        waiting = await workflow.run("refund A7 please")
    asked = [e for e in waiting.events if e.type == "request_info"]
    assert len(asked) == 1 and len(waiting.pending_requests) == 1
    outputs = waiting.get_outputs()
    shown = [c for o in outputs for c in (o.contents if stream else [c for m in o.messages for c in m.contents])]
    assert not any(isinstance(c, UserInputRequestContent) for c in shown)  # the request is not an answer
    if not stream:
        assert outputs == []  # no empty answer stands for it (a stream still shows the model's call)
    assert waiting.trace.last("support").response is not None  # the trace keeps what the agent returned
    done = await workflow.run(responses={waiting.pending_requests[0].request_id: True})
    assert [o.text for o in done.get_outputs() if hasattr(o, "messages")][:1] == ["The refund is done."]


async def test_a_rejected_call_is_not_run_and_the_model_is_told() -> None:
    workflow, client = support()
    first = await workflow.run("refund A7 please")
    await workflow.run(responses={first.pending_requests[0].request_id: False})
    assert refunds == []
    result = client.requests[1][0][-1].contents[0]
    assert isinstance(result, FunctionResultContent) and result.exception == "the user rejected this call"


async def test_a_chat_agent_waits_for_approval_between_turns() -> None:
    call = FunctionCallContent(call_id="c1", name="refund", arguments={"order": "B2", "amount": 5})
    agent = ChatAgent(
        ScriptedChatClient([Message("assistant", [call]), "Refunded."]),
        name="support",
        tools=[refund],
        history=InMemoryHistoryProvider(),
    )
    session = agent.create_session()
    asked = await agent.run("refund B2", session=session)
    (request,) = asked.messages[-1].contents
    assert isinstance(request, UserInputRequestContent) and request.request_id == "c1"
    with pytest.raises(UsageError, match=r"refund \(c1\) wait for approval"):
        await agent.run("and another thing", session=session)
    answer = Message("user", [UserInputResponseContent(request_id="c1", approved=True)])
    done = await agent.run(answer, session=session)
    assert refunds == [("B2", 5.0)] and done.text == "Refunded."
    assert [m.role for m in done.messages] == ["tool", "assistant"]


# -- intercepted ----------------------------------------------------------------------------


class AutoApprover(Executor):
    """Answers every approval request: yes below 50, no above."""

    @handler
    async def decide(self, request: UserInputRequestContent, ctx: WorkflowContext[UserInputResponseContent]) -> None:
        amount = request.function_call.arguments["amount"]
        await ctx.send_message(UserInputResponseContent(request_id=request.request_id, approved=amount < 50))


def looped(agent: ChatAgent, helper: Executor, **options: bool) -> Any:
    """The agent, a helper that answers what it sends, and a writer after it."""
    return (
        WorkflowBuilder(start_executor=AgentExecutor(agent, options=AgentExecutorOptions(**options)))
        .add_edge(agent.name, helper)
        .add_edge(helper.id, agent.name)
        .add_edge(agent.name, AgentExecutor(ChatAgent(MirrorChatClient(), name="writer")))
        .build()
    )


async def test_intercepted_requests_are_answered_by_another_executor() -> None:
    call = FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7", "amount": 20.0})
    agent = ChatAgent(ScriptedChatClient([Message("assistant", [call]), "Done."]), name="support", tools=[refund])
    workflow = looped(agent, AutoApprover("approver"), intercept_user_input_requests=True)
    result = await workflow.run("refund A7")
    assert result.status == "completed" and result.pending_requests == ()
    assert refunds == [("A7", 20.0)] and result.get_outputs()[-2].text == "Done."
    assert [s.executor_id for s in result.trace] == ["support", "approver", "support", "writer"]


class Lookup(Executor):
    """Answers the tool calls an agent cannot run itself."""

    @handler
    async def answer(self, call: FunctionCallContent, ctx: WorkflowContext[FunctionResultContent]) -> None:
        await ctx.send_message(FunctionResultContent(call_id=call.call_id, result=f"{call.name} says 42"))


async def test_unterminated_function_calls_go_to_another_executor_and_come_back() -> None:
    call = FunctionCallContent(call_id="k1", name="stock", arguments={"sku": "X"})
    client = ScriptedChatClient([Message("assistant", [call]), "There are 42."])
    agent = ChatAgent(client, name="clerk")  # no tools: the call is for somebody else
    workflow = looped(agent, Lookup("lookup"), intercept_unterminated_function_calls=True)
    result = await workflow.run("how many X?")
    assert result.get_outputs()[-2].text == "There are 42."
    assert client.requests[1][0][-1] == Message("tool", [FunctionResultContent(call_id="k1", result="stock says 42")])


async def test_an_answer_nobody_asked_for_is_an_error_naming_the_executor() -> None:
    agent = ChatAgent(MirrorChatClient(), name="plain")
    workflow = WorkflowBuilder(start_executor=AgentExecutor(agent)).build()
    with pytest.raises(Exception, match="executor 'plain' got an answer to 'zz', which it did not ask"):
        await workflow.run(FunctionResultContent(call_id="zz", result=1))


async def test_the_run_view_lists_what_a_waiting_run_waits_for() -> None:
    workflow = reviewer_workflow()
    result = await workflow.run("<b>draft</b>")
    html = result._repr_mimebundle_()["text/html"]
    rid = result.pending_requests[0].request_id
    assert "waiting for an answer" in html and f"<code>{rid}</code>" in html
    assert "Publish &#x27;&lt;b&gt;draft&lt;/b&gt;&#x27;?" in html and "<b>draft</b>" not in html
    assert '<g class="n start waiting"' in html and 'class="status waiting"' in html  # the node and its column


async def test_resuming_a_waiting_checkpoint_without_answers_lists_its_requests(tmp_path: Path) -> None:
    first = await reviewer_workflow(FileCheckpointStorage(tmp_path)).run("the draft")
    fresh = reviewer_workflow()
    again = await fresh.run(checkpoint_id=first.checkpoint_id, checkpoint_storage=FileCheckpointStorage(tmp_path))
    assert again.status == "waiting" and again.pending_requests == first.pending_requests
    assert fresh.pending_requests == first.pending_requests and not [e for e in again.events if e.type == "warning"]


async def test_a_resumed_waiting_checkpoint_emits_its_requests_again(tmp_path: Path) -> None:
    first = await reviewer_workflow(FileCheckpointStorage(tmp_path)).run("the draft")
    (asked,) = first.pending_requests
    stream = reviewer_workflow().run(
        checkpoint_id=first.checkpoint_id, checkpoint_storage=FileCheckpointStorage(tmp_path), stream=True
    )
    requests = [e async for e in stream if e.type == "request_info"]
    assert [(e.request_id, e.executor_id, e.data) for e in requests] == [(asked.request_id, "reviewer", asked.data)]


def billing(seen: list[dict[str, Any]], storage: Any = None) -> Any:
    @tool(requires_approval=True)
    def charge(order: str, **kwargs: Any) -> str:
        """Charge an order."""
        seen.append(kwargs)
        return "charged"

    call = FunctionCallContent(call_id="c1", name="charge", arguments={"order": "A7"})
    client = ScriptedChatClient([Message("assistant", [call]), "Charged."])
    agent = ChatAgent(client, name="billing", tools=[charge])
    return WorkflowBuilder(start_executor=AgentExecutor(agent), checkpoint_storage=storage).build()


async def test_the_asking_runs_kwargs_reach_the_tool_that_runs_after_the_approval(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    token = "tok-SECRET-8c1f"
    workflow = billing(seen, FileCheckpointStorage(tmp_path))
    first = await workflow.run("charge A7", function_invocation_kwargs={"*": {"account": "acme", "token": token}})
    await workflow.run(responses={first.pending_requests[0].request_id: True})
    assert seen == [{"account": "acme", "token": token}]  # carried over, in this process
    assert token not in (tmp_path / "checkpoints.jsonl").read_text()  # never stored

    seen.clear()
    again = billing(seen)
    first = await again.run("charge A7", function_invocation_kwargs={"*": {"account": "acme"}})
    await again.run(responses={first.pending_requests[0].request_id: True}, function_invocation_kwargs={"*": {"x": 1}})
    assert seen == [{"x": 1}]  # given with the answers: those win


async def test_after_a_restart_the_caller_passes_the_kwargs_again(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    first = await billing(seen, FileCheckpointStorage(tmp_path)).run(
        "charge A7", function_invocation_kwargs={"*": {"account": "acme"}}
    )
    fresh = billing(seen)  # a new process: the asking run's kwargs were never written anywhere
    await fresh.run(
        checkpoint_id=first.checkpoint_id,
        checkpoint_storage=FileCheckpointStorage(tmp_path),
        responses={first.pending_requests[0].request_id: True},
        function_invocation_kwargs={"*": {"account": "acme"}},
    )
    assert seen == [{"account": "acme"}]
