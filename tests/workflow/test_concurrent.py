"""ConcurrentBuilder: one input to every participant at once, their answers gathered into one output."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from doubles import RecordingAgent

from agent_nb import AgentExecutor, ChatAgent, Message, MirrorChatClient, ScriptedChatClient, tool
from agent_nb.errors import ArgumentError
from agent_nb.messages import AgentResponse, FunctionCallContent
from agent_nb.workflow import ConcurrentBuilder, FileCheckpointStorage, FunctionExecutor


def first_message(messages: list[Message]) -> list[Message]:
    return messages[:1]


class SlowAgent(RecordingAgent):
    """Answers after ``delay`` seconds: the participants finish in another order than they were given."""

    def __init__(self, name: str, delay: float) -> None:
        super().__init__(name)
        self.delay = delay

    async def _respond(self, text: str) -> AgentResponse:
        await asyncio.sleep(self.delay)
        return await super()._respond(text)


async def test_every_participant_gets_the_same_input_and_the_output_lists_their_answers_in_order() -> None:
    agents = [SlowAgent("analyst", 0.03), SlowAgent("critic", 0.0), SlowAgent("poet", 0.015)]
    result = await ConcurrentBuilder(agents).build().run("Plan a rainy Sunday")
    seen = [a.seen[0] for a in agents]
    assert all(s == [Message("user", "Plan a rainy Sunday")] for s in seen)
    assert seen[0][0] is seen[1][0] is seen[2][0]  # one message, shared: nothing copied per participant
    (answers,) = result.get_outputs()
    assert [a.text for a in answers] == ["analyst saw 1", "critic saw 1", "poet saw 1"]  # as given, not as finished
    assert result.text == "analyst: analyst saw 1\n\ncritic: critic saw 1\n\npoet: poet saw 1"
    intermediate = sorted(e.executor_id for e in result.events if e.type == "intermediate")
    assert intermediate == ["analyst", "critic", "poet"]  # each answer is an event, and in the trace
    assert {s.executor_id: s.superstep for s in result.trace} == {
        "dispatch": 1, "analyst": 2, "critic": 2, "poet": 2, "aggregate": 3,
    }  # fmt: skip
    assert "received  the conversation so far (1 message, from dispatch)" in str(result.trace.last("critic"))


async def test_each_participant_keeps_its_own_context_mode_and_the_executor_passed_in_is_not_changed() -> None:
    only_first = AgentExecutor(RecordingAgent("critic"), context_mode="custom", context_filter=first_message)
    history = [
        Message("user", "Plan a rainy Sunday"),
        Message("assistant", "Museums?", author_name="planner"),
        Message("assistant", "Or the aquarium.", author_name="planner"),
    ]
    recent = AgentExecutor(RecordingAgent("poet"), context_mode="last_agent")
    wf = ConcurrentBuilder([RecordingAgent("analyst"), only_first, recent]).build()
    result = await wf.run(history)
    assert wf.executors["critic"] is only_first and only_first.context_mode == "custom"
    assert result.trace.last("analyst").context_mode == "full" and len(result.trace.last("analyst").given) == 3
    critic = result.trace.last("critic")
    assert (critic.context_mode, critic.context_filter) == ("custom", "first_message")
    assert [m.text for m in critic.given] == ["Plan a rainy Sunday"] and len(critic.dropped) == 2
    poet = result.trace.last("poet")  # the last speaker's words: the planner's
    assert [m.text for m in poet.given] == ["Museums?", "Or the aquarium."] and len(poet.dropped) == 1


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_an_aggregator_function_makes_the_output_from_the_answers(kind: str) -> None:
    def votes(answers: list[AgentResponse]) -> str:
        return " | ".join(a.text for a in answers)

    async def later(answers: list[AgentResponse]) -> str:
        await asyncio.sleep(0)
        return votes(answers)

    agents = [RecordingAgent("a"), RecordingAgent("b")]
    result = await ConcurrentBuilder(agents, aggregator=votes if kind == "sync" else later).build().run("q")
    assert result.get_outputs() == ["a saw 1 | b saw 1"] and result.text == "a saw 1 | b saw 1"


async def test_an_aggregator_agent_reads_the_input_then_every_answer_handed_over_and_its_answer_is_the_output() -> None:
    summarizer = RecordingAgent("summarizer")
    result = await ConcurrentBuilder([RecordingAgent("a"), RecordingAgent("b")], aggregator=summarizer).build().run("q")
    (given,) = summarizer.seen
    assert [(m.role, m.author_name, m.text) for m in given] == [
        ("user", None, "q"), ("user", "a", "a saw 1"), ("user", "b", "b saw 1"),
    ]  # fmt: skip
    assert [o.text for o in result.get_outputs()] == ["summarizer saw 3"]
    assert sorted(e.executor_id for e in result.events if e.type == "intermediate") == ["a", "b"]


async def test_streaming_yields_the_participants_words_as_they_come_and_only_the_aggregate_as_output() -> None:
    wf = ConcurrentBuilder([RecordingAgent("a"), RecordingAgent("b")]).build()
    events = [e async for e in wf.run("q", stream=True)]
    assert {e.executor_id for e in events if e.type == "output"} == {"aggregate"}
    assert {e.executor_id for e in events if e.type == "intermediate"} == {"a", "b"}
    assert events[-1].type == "completed"


@tool(requires_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def roles(answer: AgentResponse) -> list[tuple[str, str]]:
    return [(m.role, c.type) for m in answer.messages for c in m.contents]


def support_and_critic(storage: Any = None, *, answered: bool = False) -> Any:
    """``answered``: a model that has already asked (the workflow is built anew, its model goes on)."""
    call = FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7"})
    script = ["Refunded."] if answered else [Message("assistant", [call]), "Refunded."]
    support = ChatAgent(ScriptedChatClient(script), name="support", tools=[refund])
    critic = ChatAgent(MirrorChatClient(), name="critic")
    return ConcurrentBuilder([support, critic], checkpoint_storage=storage).build()


async def test_a_participant_waiting_for_approval_holds_the_aggregate_until_it_is_answered() -> None:
    wf = support_and_critic()
    first = await wf.run("Refund A7")
    assert first.status == "waiting" and first.get_outputs() == []
    (request,) = first.pending_requests
    assert request.executor_id == "support"
    done = await wf.run(responses={request.request_id: True})
    assert done.status == "completed"
    (answers,) = done.get_outputs()
    assert [a.text for a in answers] == ["Refunded.", 'I see 1 message: user "Refund A7"']
    assert roles(answers[0]) == [("assistant", "function_call"), ("tool", "function_result"), ("assistant", "text")]


async def test_a_concurrent_run_waiting_for_approval_resumes_from_its_checkpoint_in_a_new_workflow(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first = await support_and_critic(storage).run("Refund A7")
    (request,) = first.pending_requests
    again = support_and_critic(storage, answered=True)  # another process, say: built anew, resumed from the storage
    done = await again.run(
        checkpoint_id=first.checkpoint_id, checkpoint_storage=storage, responses={request.request_id: True}
    )
    assert done.status == "completed"
    assert [a.text for a in done.get_outputs()[0]] == ["Refunded.", 'I see 1 message: user "Refund A7"']
    assert roles(done.get_outputs()[0][0])[0] == ("assistant", "function_call")  # the call, kept in the checkpoint


def test_bad_participants_and_aggregators_are_refused_with_what_to_do() -> None:
    with pytest.raises(ArgumentError, match=r"participants.*give a non-empty list"):
        ConcurrentBuilder([])

    async def shout(message: Any, ctx: Any) -> None: ...

    with pytest.raises(
        ArgumentError, match=r"give an agent, an AgentExecutor or a WorkflowExecutor \(one that answers\)"
    ):
        ConcurrentBuilder([RecordingAgent("a"), FunctionExecutor(shout, id="shout")])
    with pytest.raises(ArgumentError, match="two participants have the id 'a'; give each agent its own name"):
        ConcurrentBuilder([RecordingAgent("a"), RecordingAgent("a")]).build()
    with pytest.raises(ArgumentError, match="aggregator's id 'a' is also a participant's"):
        ConcurrentBuilder([RecordingAgent("a"), RecordingAgent("b")], aggregator=RecordingAgent("a")).build()

    with pytest.raises(ArgumentError, match="another executor cannot be told the answers"):
        ConcurrentBuilder([RecordingAgent("a")], aggregator=FunctionExecutor(shout, id="shout")).build()
    with pytest.raises(ArgumentError, match="give None, a function of the answers, or an agent"):
        ConcurrentBuilder([RecordingAgent("a")], aggregator="summarize").build()


async def test_a_participant_called_aggregate_or_dispatch_keeps_its_id() -> None:
    wf = ConcurrentBuilder([RecordingAgent("aggregate"), RecordingAgent("dispatch")]).build()
    assert set(wf.executors) == {"aggregate", "dispatch", "aggregate2", "dispatch2"}
    result = await wf.run("q")
    assert [a.text for a in result.get_outputs()[0]] == ["aggregate saw 1", "dispatch saw 1"]
