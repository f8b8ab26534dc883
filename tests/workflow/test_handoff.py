"""HandoffBuilder: a triage agent answers, or hands the conversation to a specialist through a tool call."""

from __future__ import annotations

from pathlib import Path

import pytest
from doubles import RecordingAgent

from agent_nb import AgentExecutor, ChatAgent, FunctionChatClient, Message, ScriptedChatClient, tool
from agent_nb.display.graph import graph_of
from agent_nb.errors import ArgumentError
from agent_nb.messages import FunctionCallContent
from agent_nb.workflow import FileCheckpointStorage, HandoffBuilder

HISTORY = [
    Message("user", "Hello"),
    Message("assistant", "Hi, how can I help?", author_name="triage"),
    Message("user", "I was charged twice"),
]


def triage_that(*replies: object) -> tuple[ChatAgent, list[dict[str, object]]]:
    """A triage agent whose model answers ``replies`` in turn, and what each request offered it."""
    offered: list[dict[str, object]] = []
    script = iter(replies)

    def model(messages: list[Message], options: dict[str, object]) -> object:
        offered.append({t.name: t.description for t in options.get("tools", ())})
        return next(script)

    return ChatAgent(FunctionChatClient(model), name="triage"), offered


def handoff(to: str) -> Message:
    return Message("assistant", [FunctionCallContent(call_id="h1", name=f"handoff_to_{to}", arguments={})])


async def test_a_hand_off_gives_the_specialist_the_conversation_without_the_hand_offs_call_and_result() -> None:
    triage, offered = triage_that(handoff("billing"))
    billing, travel = RecordingAgent("billing"), RecordingAgent("travel")
    billing.description = "Refunds and invoices"
    result = await HandoffBuilder(triage, [billing, travel]).build().run(HISTORY)
    assert [m.text for m in billing.seen[0]] == ["Hello", "Hi, how can I help?", "I was charged twice"]
    assert travel.calls == [] and len(offered) == 1  # the hand-off ended the triage's turn: no second request
    assert offered[0] == {
        "handoff_to_billing": "Hand the conversation over to billing: Refunds and invoices",
        "handoff_to_travel": "Hand the conversation over to travel.",
    }
    assert [o.text for o in result.get_outputs()] == ["billing saw 3"]
    assert [e.executor_id for e in result.events if e.type == "intermediate"] == ["triage"]
    given = result.trace.last("billing")
    assert [c.type for m in given.dropped for c in m.contents] == ["function_call", "function_result"]  # shown


@pytest.mark.parametrize("setting", ["all", "since_handoff", "users_only"])
async def test_the_trace_and_the_graph_say_which_context_setting_a_specialist_was_given(setting: str) -> None:
    def users_only(messages: list[Message]) -> list[Message]:
        return [m for m in messages if m.role == "user"]

    triage, _ = triage_that(handoff("billing"))
    context = users_only if setting == "users_only" else setting
    wf = HandoffBuilder(triage, [RecordingAgent("billing")], context=context).build()  # type: ignore[arg-type]
    result = await wf.run(HISTORY)
    given = result.trace.last("billing")
    assert (given.context_filter, given.mode) == (setting, f"custom({setting})")
    assert f"billing · agent · context_mode=custom ({setting})" in str(result.trace)
    assert graph_of(wf, result.trace).node("billing").caption == f"agent · custom({setting})"
    assert graph_of(wf).node("billing").caption == f"agent · custom({setting})"  # before any run too


async def test_a_triage_that_answers_itself_is_the_output_and_no_specialist_runs() -> None:
    triage, _ = triage_that("We open at nine.")
    billing = RecordingAgent("billing")
    result = await HandoffBuilder(triage, [billing]).build().run("When do you open?")
    assert [o.text for o in result.get_outputs()] == ["We open at nine."] and billing.calls == []
    assert triage.tools == []  # the agent passed in is not changed: a copy of it has the hand-off tools


async def test_since_handoff_gives_the_specialist_only_the_users_last_message_on() -> None:
    triage, _ = triage_that(handoff("billing"))
    billing = RecordingAgent("billing")
    await HandoffBuilder(triage, [billing], context="since_handoff").build().run(HISTORY)
    assert [m.text for m in billing.seen[0]] == ["I was charged twice"]


async def test_a_filter_of_your_own_or_an_executor_of_yours_decides_what_a_specialist_gets() -> None:
    def users_only(messages: list[Message]) -> list[Message]:
        return [m for m in messages if m.role == "user"]

    triage, _ = triage_that(handoff("billing"))
    billing = RecordingAgent("billing")
    await HandoffBuilder(triage, [billing], context=users_only).build().run(HISTORY)
    assert [m.text for m in billing.seen[0]] == ["Hello", "I was charged twice"]

    triage, _ = triage_that(handoff("billing"))
    mine = AgentExecutor(RecordingAgent("billing"), context_mode="last_agent")
    wf = HandoffBuilder(triage, [mine]).build()
    assert wf.executors["billing"] is mine
    result = await wf.run(HISTORY)
    assert result.trace.last("billing").context_mode == "last_agent"


def test_bad_arguments_are_refused_with_what_to_do() -> None:
    triage, _ = triage_that()
    with pytest.raises(ArgumentError, match="give a ChatAgent"):
        HandoffBuilder(RecordingAgent("triage"), [RecordingAgent("billing")])  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="context"):
        HandoffBuilder(triage, [RecordingAgent("billing")], context="everything")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="both named 'triage'"):
        HandoffBuilder(triage, [RecordingAgent("triage")]).build()
    with pytest.raises(ArgumentError, match="same hand-off tool name"):
        HandoffBuilder(triage, [RecordingAgent("bill ing"), RecordingAgent("bill-ing")]).build()
    with pytest.raises(ArgumentError, match="participants"):
        HandoffBuilder(triage, [])
    scripted = ChatAgent(ScriptedChatClient(["x"]), name="triage", tools=[_handoff_to_billing])
    with pytest.raises(ArgumentError, match="already has a tool named 'handoff_to_billing'"):
        HandoffBuilder(scripted, [RecordingAgent("billing")]).build()


def _handoff_to_billing() -> str:
    """A tool of the user's own that happens to have a hand-off's name."""
    return "mine"


_handoff_to_billing.__name__ = "handoff_to_billing"


async def test_a_hand_off_streams_the_specialists_words_as_the_output() -> None:
    triage, _ = triage_that(handoff("billing"))
    wf = HandoffBuilder(triage, [RecordingAgent("billing")]).build()
    events = [e async for e in wf.run(HISTORY, stream=True)]
    assert {e.executor_id for e in events if e.type == "output"} == {"billing"}
    assert "".join(e.data.text for e in events if e.type == "output") == "billing saw 3"
    assert {e.executor_id for e in events if e.type == "intermediate"} == {"triage"}


@tool(requires_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return "refunded"


def desk(storage: object = None, *, answered: bool = False) -> object:
    call = FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7"})
    script = ["Refunded."] if answered else [Message("assistant", [call]), "Refunded."]
    billing = ChatAgent(ScriptedChatClient(script), name="billing", tools=[refund])
    triage, _ = triage_that(handoff("billing"))
    return HandoffBuilder(triage, [billing], checkpoint_storage=storage).build()


async def test_a_specialist_waiting_for_approval_is_answered_in_memory_or_from_a_checkpoint(tmp_path: Path) -> None:
    wf = desk()
    first = await wf.run("I was charged twice")
    (request,) = first.pending_requests
    assert request.executor_id == "billing"
    done = await wf.run(responses={request.request_id: True})
    assert [o.text for o in done.get_outputs()] == ["Refunded."]

    storage = FileCheckpointStorage(tmp_path)
    first = await desk(storage).run("I was charged twice")
    again = desk(storage, answered=True)
    done = await again.run(
        checkpoint_id=first.checkpoint_id,
        checkpoint_storage=storage,
        responses={first.pending_requests[0].request_id: True},
    )
    assert done.status == "completed" and [o.text for o in done.get_outputs()] == ["Refunded."]
