"""The rules of the documents' table, checked on every snapshot of every scenario in both harnesses.

Each test reads what really was in each part's active context, so a change that lets a
tool see the conversation, or a click reach the orchestrator, fails here.
"""

import pytest

from agent_nb.harness import CentralizedHarness, ComponentCall, ComponentResult, StandardHarness
from agent_nb.harness.scenarios import opening_hours, returns, tour, travel

SCENARIOS = [opening_hours(), travel(), travel(include_parent_context=False), travel(agent="child"), returns(), tour()]
RUNS = [(s, h) for s in SCENARIOS for h in (StandardHarness, CentralizedHarness)]


@pytest.fixture(scope="module", params=RUNS, ids=lambda r: f"{r[0].name}-{r[1].mode}")
def run(request):
    scenario, harness = request.param
    return scenario.play(harness)


def snapshots(h, kind):
    return [s for s in h.trace if s.kind == kind]


def ids(messages):
    return {m.message_id for m in messages}


def test_a_tool_sees_only_its_inputs_and_never_writes(run):
    for s in snapshots(run, "tool"):
        assert s.given is None and not s.wrote
        assert s.state == {"inputs": dict(s.received.inputs)}


def test_knowledge_answers_from_the_request_and_its_agents_context_and_never_writes(run):
    for s in snapshots(run, "knowledge"):
        call = s.received
        assert not s.wrote
        assert call.request.message_id in ids(s.given)
        assert ids(call.conversation) <= ids(s.given)


def test_a_child_agent_always_has_its_parents_conversation(run):
    for s in snapshots(run, "child agent"):
        if isinstance(s.received, ComponentCall) and s.received.reply is None:
            assert ids(s.received.conversation) <= ids(s.given)


def test_a_connected_agent_without_parent_context_has_only_its_request_of_the_parents_conversation(run):
    for s in snapshots(run, "connected agent"):
        call = s.received
        if not isinstance(call, ComponentCall) or call.reply is not None:
            continue
        executor = run.workflow.get_executor(s.executor_id)
        from_parent = ids(call.conversation) & ids(s.given)
        if executor.include_parent_context:
            assert from_parent == ids(call.conversation)
        else:
            assert from_parent <= {call.request.message_id}


def test_a_click_never_reaches_the_orchestrator_in_the_standard_harness(run):
    if run.mode != "standard":
        return
    for s in snapshots(run, "orchestrator"):
        assert not any(c.type == "user_input_response" for m in s.given for c in m.contents)


def test_what_a_component_shows_the_user_never_enters_the_orchestrators_context(run):
    root = run.orchestrator.id
    shown_by_others = {m.message_id for m in run.transcript if m.role == "assistant" and m.author_name != root}
    for s in run.trace:
        if s.executor_id == root:
            assert not ids(s.given) & shown_by_others


def test_implicit_topic_text_never_carries_a_click_or_a_button(run):
    for s in run.trace:
        for sent in s.sent:
            result = sent.message
            if isinstance(result, ComponentResult) and s.kind == "topic":
                clicks = [
                    c.text
                    for c in (s.received.reply.contents if getattr(s.received, "reply", None) else ())
                    if c.type == "user_input_response"
                ]
                for value in clicks:
                    assert value not in result.implicit


def test_only_the_orchestrator_writes_in_the_centralized_harness(run):
    writers = {s.executor_id for s in run.trace if s.wrote}
    if run.mode == "centralized":
        assert writers <= {run.orchestrator.id}
    else:
        assert not writers & {s.executor_id for s in snapshots(run, "tool") + snapshots(run, "knowledge")}
