"""Any agent as a harness's connected agent: a workflow used as an agent, a ChatAgent, by the harness's rules."""

from __future__ import annotations

import pytest
from doubles import RecordingAgent

from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder
from agent_nb.errors import ArgumentError
from agent_nb.harness import AgentComponent, CentralizedHarness, MessageNode, Orchestrator, StandardHarness, Topic

HOURS = "We are open 9:00-17:00."


def research(**options: object) -> tuple[AgentComponent, RecordingAgent]:
    finder, writer = RecordingAgent("finder"), RecordingAgent("writer")
    workflow = SequentialBuilder([finder, writer], name="research").build()
    agent = workflow.as_agent(name="research", description="Finds facts about destinations for trips")
    return AgentComponent(agent, **options), finder


def orchestrator(component: AgentComponent) -> Orchestrator:
    hours = Topic("opening_hours", [MessageNode(HOURS)], description="Opening hours")
    return Orchestrator("orchestrator", [hours, component])


async def test_a_workflow_used_as_an_agent_answers_in_a_standard_harness_and_its_run_nests_in_the_trace() -> None:
    component, finder = research()
    h = StandardHarness(orchestrator(component))
    await h.send("When are you open?")
    await h.send("Find facts about destinations in Norway")
    (seen,) = finder.seen
    # the parent's conversation, the standard harness's duplicate answer included (the topic's and the orchestrator's)
    assert [m.text for m in seen] == ["When are you open?", HOURS, HOURS, "Find facts about destinations in Norway"]
    assert h.transcript[-1].author_name == "research" and h.transcript[-1].text == "writer saw 5"
    (snapshot,) = [s for s in h.trace if s.executor_id == "research"]
    assert snapshot.kind == "connected agent" and [m.text for m in snapshot.given] == [m.text for m in seen]
    assert [s.executor_id for s in snapshot.inner] == ["finder", "writer"]
    assert snapshot.wrote and snapshot.wrote[0].text == "writer saw 5"


async def test_without_the_parents_conversation_it_gets_only_the_request() -> None:
    component, finder = research(include_parent_context=False)
    h = StandardHarness(orchestrator(component))
    await h.send("When are you open?")
    await h.send("Find facts about destinations in Norway")
    assert [m.text for m in finder.seen[0]] == ["Find facts about destinations in Norway"]
    assert component.include_parent_context is False


@pytest.mark.parametrize("harness", [CentralizedHarness, StandardHarness])
async def test_the_orchestrator_says_its_answer_when_it_may_not_speak_itself(harness: type) -> None:
    component, _ = research(answers_directly=False)
    h = harness(orchestrator(component))
    await h.send("Find facts about destinations in Norway")
    said = [(m.author_name, m.text) for m in h.transcript if m.role == "assistant"]
    assert said == [("orchestrator", "writer saw 2")]  # once, by the orchestrator
    (snapshot,) = [s for s in h.trace if s.executor_id == "research"]
    assert not snapshot.wrote


async def test_a_chat_agent_as_a_connected_agent_shows_what_its_model_got() -> None:
    guide = ChatAgent(MirrorChatClient(), name="guide", instructions="You guide visitors.")
    h = StandardHarness(orchestrator(AgentComponent(guide, description="Guides visitors around the museum")))
    await h.send("Guide me around the museum")
    (snapshot,) = [s for s in h.trace if s.executor_id == "guide"]
    (request,) = snapshot.model_requests
    assert request.origins == ("instructions", "input") and request.messages[0].text == "You guide visitors."
    assert (
        h.transcript[-1].text
        == 'I see 2 messages: system "You guide visitors." · user from user "Guide me around the museum"'
    )


def test_an_agent_without_a_description_or_a_run_is_refused_with_what_to_do() -> None:
    with pytest.raises(ArgumentError, match="a description: the orchestrator plans by it"):
        AgentComponent(ChatAgent(MirrorChatClient(), name="guide"))
    with pytest.raises(ArgumentError, match=r"an agent \(with run\)"):
        AgentComponent(object(), description="x")


async def test_in_a_centralised_harness_it_proposes_its_answer_and_the_orchestrator_says_it_once() -> None:
    component, _ = research()  # answers_directly, as by default: a centralised harness does not let it
    h = CentralizedHarness(orchestrator(component))
    await h.send("Find facts about destinations in Norway")
    assert [(m.author_name, m.text) for m in h.transcript if m.role == "assistant"] == [
        ("orchestrator", "writer saw 2")
    ]
    (snapshot,) = [s for s in h.trace if s.executor_id == "research"]
    (result,) = [sent.message for sent in snapshot.sent]
    assert not snapshot.wrote and [m.text for m in result.proposed] == ["writer saw 2"]
    assert not h.gaps()
