"""The rules of docs/context-distribution.md, checked on the snapshots of the scenarios in both harnesses.

Each test reads what really was in each part's active context, so a change that lets a
tool see the conversation, or a click reach the orchestrator, fails here.

Each scenario test runs only on the runs where its rule comes into play (``APPLIES`` lists
them), and each item fails when it finds nothing to check. ``test_each_rule_runs_wherever_it_applies``
fails when a run where a rule comes into play is missing from its list, or one where it
does not is on it. The last tests build the settings no scenario uses.
"""

from functools import cache

import pytest

from agent_nb.harness import (
    CentralizedHarness,
    ComponentCall,
    ComponentResult,
    ConnectedAgent,
    Orchestrator,
    StandardHarness,
    Tool,
)
from agent_nb.harness.matching import mentions, similar
from agent_nb.harness.scenarios import book_flight, opening_hours, returns, tour, travel

SCENARIOS = {
    s.name: s
    for s in (opening_hours(), travel(), travel(include_parent_context=False), travel(agent="child"), returns(), tour())
}
OPENING, TRAVEL, TRAVEL_OFF, TRAVEL_CHILD, RETURNS, TOUR = SCENARIOS
HARNESSES = {"standard": StandardHarness, "centralized": CentralizedHarness}
BOTH = tuple(HARNESSES)


@cache
def played(name, mode):
    """Each scenario is played once per harness and shared by every test that reads it."""
    return SCENARIOS[name].play(HARNESSES[mode])


def on(*names, modes=BOTH):
    return [(name, mode) for name in names for mode in modes]


@pytest.fixture
def run(request):
    return played(*request.param)


def runs(key):
    """The parameters of a test: the runs ``APPLIES`` lists for it."""
    return pytest.mark.parametrize("run", APPLIES[key][0], ids=lambda r: f"{r[0]}-{r[1]}", indirect=True)


def checked(items, what):
    """``items`` as a list, after making sure there is something to check."""
    items = list(items)
    assert items, f"nothing to check: no {what} in this run"
    return items


def ids(messages):
    return {m.message_id for m in messages}


def clicks_in(messages):
    return [c for m in messages for c in m.contents if c.type == "user_input_response"]


def spoken(m):
    """What a message says to the user: its text, or the prompt of its question or card."""
    return m.text or " ".join(c.prompt for c in m.contents if c.type == "user_input_request")


def results(s):
    return [sent.message for sent in s.sent if isinstance(sent.message, ComponentResult)]


# -- what each rule reads, per run ----------------------------------------------------------


def of_kind(h, kind):
    return [s for s in h.trace if s.kind == kind]


def new_calls(h, kind):
    """The snapshots of ``kind`` where a caller hands over a new request (not a user's reply)."""
    return [s for s in of_kind(h, kind) if isinstance(s.received, ComponentCall) and s.received.reply is None]


def connected_calls(h, include_parent_context):
    return [
        s
        for s in new_calls(h, "connected agent")
        if h.workflow.get_executor(s.executor_id).include_parent_context is include_parent_context
    ]


def sub_agent_results(h):
    return [r for kind in ("child agent", "connected agent") for s in of_kind(h, kind) for r in results(s)]


def topic_results(h):
    return [(s, r) for s in of_kind(h, "topic") for r in results(s)]


def clicks_handed_to_topics(h):
    """(snapshot, result, clicked value) for each topic that was handed a click and returned."""
    return [
        (s, r, c.text)
        for s, r in topic_results(h)
        if isinstance(s.received, ComponentCall) and s.received.reply is not None
        for c in clicks_in([s.received.reply])
    ]


def cards_returned_by_topics(h):
    """(result, buttons) for each topic result that waits on a card."""
    return [
        (r, c.options)
        for _, r in topic_results(h)
        if r.waiting is not None
        for c in r.waiting.contents
        if c.type == "user_input_request" and c.options
    ]


def shown_by_others(h):
    """The chat messages a part other than the top orchestrator wrote."""
    return [m for m in h.transcript if m.role == "assistant" and m.author_name != h.orchestrator.id]


def orchestrations(h):
    """The snapshots of every orchestrator: the top one, child and connected agents."""
    return [s for s in h.trace if s.kind in ("orchestrator", "child agent", "connected agent")]


def only_in(mode, select):
    return lambda h: select(h) if h.mode == mode else []


APPLIES = {  # rule -> (the runs it is checked on, what it reads in a run: empty where it does not apply)
    "orchestrator": (on(*SCENARIOS), lambda h: orchestrations(h)),
    "tool": (
        on(TRAVEL, TRAVEL_OFF, TRAVEL_CHILD, TOUR) + on(RETURNS, modes=("centralized",)),
        lambda h: of_kind(h, "tool"),
    ),
    "topic": (on(*SCENARIOS), lambda h: of_kind(h, "topic")),
    "knowledge": (on(TOUR), lambda h: of_kind(h, "knowledge")),
    "generative answers": (on(TOUR), lambda h: of_kind(h, "generative answers")),
    "child agent": (on(TRAVEL_CHILD, TOUR), lambda h: new_calls(h, "child agent")),
    "connected, parent context on": (on(TRAVEL), lambda h: connected_calls(h, True)),
    "connected, parent context off": (on(TRAVEL_OFF, TOUR), lambda h: connected_calls(h, False)),
    "sub-agent returns": (on(TRAVEL, TRAVEL_OFF, TRAVEL_CHILD, TOUR), sub_agent_results),
    "click, standard": (on(RETURNS, TOUR, modes=("standard",)), only_in("standard", clicks_handed_to_topics)),
    "click, centralized": (on(RETURNS, TOUR, modes=("centralized",)), only_in("centralized", clicks_handed_to_topics)),
    "implicit topic text": (on(RETURNS, TOUR), lambda h: clicks_handed_to_topics(h) + cards_returned_by_topics(h)),
    "shown, standard": (on(*SCENARIOS, modes=("standard",)), only_in("standard", shown_by_others)),
    "writers, standard": (on(*SCENARIOS, modes=("standard",)), only_in("standard", lambda h: h.trace)),
    "writers, centralized": (on(*SCENARIOS, modes=("centralized",)), only_in("centralized", lambda h: h.trace)),
}


def test_each_rule_runs_wherever_it_applies():
    every_run = on(*SCENARIOS)
    for rule, (listed, select) in APPLIES.items():
        applies = [r for r in every_run if select(played(*r))]
        assert sorted(listed) == sorted(applies), f"rule {rule!r}: listed on {listed}, applies on {applies}"


# -- the rules ------------------------------------------------------------------------------


@runs("orchestrator")
def test_an_orchestrator_has_its_components_descriptions_their_inputs_and_outputs_and_its_plan_state(run):
    for s in checked(orchestrations(run), "orchestrator invocation"):
        components = run.workflow.get_executor(s.executor_id).components
        lines = [str(line) for line in s.state["components"]]
        assert len(lines) == len(components)
        for line, c in zip(lines, components, strict=True):
            assert line.startswith(f"{c.id}: {c.description}")
            assert all(i.description in line for i in c.inputs)
            assert all(f"{name} — {about}" in line for name, about in c.outputs.items() if about)
        requests = [m for m in s.given if m.role == "user" and m.text]
        plan = s.state["plan"]
        assert all(f"({m.message_id}): " in line for m, line in zip(requests, plan, strict=True))
        calls = [c for m in s.given for c in m.contents if c.type == "function_call"]
        assert all(any(f"called {c.name}" in line for line in plan) for c in calls)


@runs("tool")
def test_a_tool_sees_only_its_inputs_never_writes_and_returns_only_outputs(run):
    for s in checked(of_kind(run, "tool"), "tool call"):
        assert s.given is None and not s.wrote
        assert s.state == {"inputs": dict(s.received.inputs)}
        (result,) = results(s)
        assert result.outputs and not result.implicit and not result.proposed and not result.wrote


@runs("topic")
def test_a_topic_works_from_its_variables_and_node_and_returns_only_its_declared_outputs(run):
    for s in checked(of_kind(run, "topic"), "topic invocation"):
        assert s.given is None  # no conversation: its variables (the request among them) and its node
        assert set(s.state) == {"variables", "inputs", "node"}
        assert "request" in s.state["variables"]
        declared = set(run.workflow.get_executor(s.executor_id).outputs)
        for result in results(s):
            assert set(result.outputs) <= declared
            if result.waiting is not None:
                assert not result.outputs  # outputs return only when the topic ends


@runs("knowledge")
def test_knowledge_answers_from_the_request_and_its_agents_whole_active_context_and_never_writes(run):
    for s in checked(of_kind(run, "knowledge"), "knowledge call"):
        call = s.received
        caller = [c for c in run.trace.for_executor(call.caller) if any(x.message is call for x in c.sent)]
        assert not s.wrote
        assert call.request.message_id in ids(s.given)
        assert ids(caller[-1].given) - {call.call_id} <= ids(s.given)  # all its agent had before this call
        (result,) = results(s)
        assert set(result.outputs) <= {"answer", "source"} and not result.proposed and not result.wrote


@runs("generative answers")
def test_a_generative_answers_node_has_its_input_plus_its_agents_whole_active_context(run):
    root = run.orchestrator.id
    for s in checked(of_kind(run, "generative answers"), "generative-answers call"):
        call = s.received
        node = run.workflow.get_executor(s.executor_id)
        topic_call = next(
            c.received for c in run.trace.for_executor(call.caller) if any(x.message is call for x in c.sent)
        )
        caller = [c for c in run.trace.for_executor(root) if any(x.message is topic_call for x in c.sent)]
        assert ids(caller[-1].given) - {topic_call.call_id} <= ids(s.given)  # what the topic's agent had
        assert any(m.role == "tool" for m in s.given)  # the orchestrator's results among it
        assert s.given[-1].text == call.inputs["input"]
        (result,) = results(s)
        assert result.caller == call.caller and set(result.outputs) == {"answer"}  # to its topic only
        shown = bool(result.wrote) if run.mode == "standard" else bool(result.proposed)
        assert shown is (node.variable is None)


@runs("child agent")
def test_a_child_agent_always_has_its_parents_conversation(run):
    calls = checked(new_calls(run, "child agent"), "call of a child agent")
    for s in calls:
        assert ids(s.received.conversation) <= ids(s.given)
    assert any(len(s.received.conversation) > 1 for s in calls)  # more than its request was there to pass


@runs("connected, parent context on")
def test_a_connected_agent_with_parent_context_has_all_its_parents_conversation(run):
    calls = checked(connected_calls(run, True), "call of a connected agent with parent context")
    for s in calls:
        assert ids(s.received.conversation) <= ids(s.given)
    assert any(len(s.received.conversation) > 1 for s in calls)


@runs("connected, parent context off")
def test_a_connected_agent_without_parent_context_has_only_its_request_of_the_parents_conversation(run):
    calls = checked(connected_calls(run, False), "call of a connected agent without parent context")
    for s in calls:
        call = s.received
        assert ids(call.conversation) & ids(s.given) == {call.request.message_id}
    assert any(len(s.received.conversation) > 1 for s in calls)  # there was more it did not get


@runs("sub-agent returns")
def test_a_sub_agent_returns_its_response_and_whether_it_responded(run):
    answered_itself = []
    for result in checked(sub_agent_results(run), "result of a sub-agent"):
        declared = run.workflow.get_executor(result.component).declared
        assert {"response", "responded"} <= set(result.outputs) <= {"response", "responded", *declared}
        assert not result.implicit
        if run.mode == "centralized":
            assert not result.wrote  # it proposes what it would say; the parent says it
            assert result.proposed or not result.outputs["response"]
            continue
        own = {m.message_id for m in run.transcript if m.author_name == result.component}
        if own & set(result.wrote):  # it answered the user itself: it says so
            assert result.outputs["responded"] is True
            answered_itself.append(result)
    assert answered_itself or run.mode == "centralized"


@runs("click, standard")
def test_a_click_on_a_card_reaches_no_active_context_but_its_topics_variables_in_the_standard_harness(run):
    handed = checked(clicks_handed_to_topics(run), "click handed to a topic")
    for s, _, value in handed:
        assert value in s.state["variables"].values()
    replies = {s.received.reply.message_id for s, _, _ in handed}
    cards = {c.request_id for s, _, _ in handed for c in clicks_in([s.received.reply])}
    for s in checked([s for s in run.trace if s.given is not None], "snapshot with a context"):
        assert not ids(s.given) & replies
        assert not {c.request_id for c in clicks_in(s.given)} & cards


@runs("click, centralized")
def test_a_click_reaches_the_orchestrator_in_the_centralized_harness(run):
    root = run.orchestrator.id
    for s, _, value in checked(clicks_handed_to_topics(run), "click handed to a topic"):
        assert value in s.state["variables"].values()
        assert any(c.text == value for c in clicks_in(run.context_of(root)))


@runs("implicit topic text")
def test_implicit_topic_text_never_carries_a_click_or_a_button(run):
    for _, result, value in checked(clicks_handed_to_topics(run), "click handed to a topic"):
        assert not mentions(result.implicit, value)
    for result, buttons in checked(cards_returned_by_topics(run), "card returned by a topic"):
        assert result.implicit  # the card's content is there ...
        assert not any(mentions(result.implicit, b) for b in buttons)  # ... its buttons are not


@runs("shown, standard")
def test_what_a_component_shows_the_user_never_enters_the_orchestrators_context(run):
    shown = ids(checked(shown_by_others(run), "message shown by a component"))
    root = run.orchestrator.id
    for s in checked([s for s in run.trace if s.executor_id == root], "snapshot of the orchestrator"):
        assert not ids(s.given) & shown


@runs("writers, standard")
def test_components_write_to_the_chat_themselves_in_the_standard_harness_tools_and_knowledge_never(run):
    writers = {s.executor_id: s.kind for s in checked(run.trace, "snapshot") if s.wrote}
    assert set(writers) - {run.orchestrator.id}  # someone behind the orchestrator talked to the user
    assert not {"tool", "knowledge"} & set(writers.values())


@runs("writers, centralized")
def test_only_the_orchestrator_writes_in_the_centralized_harness_and_says_what_the_others_proposed(run):
    root = run.orchestrator.id
    writers = {s.executor_id for s in checked(run.trace, "snapshot") if s.wrote}
    assert writers == {root}
    proposed = checked([m for s in run.trace for r in results(s) for m in r.proposed], "proposed message")
    said = [spoken(m) for m in run.transcript if m.role == "assistant" and m.author_name == root]
    for m in proposed:  # each said once by the orchestrator (it leaves out what it already said)
        assert any(similar(spoken(m), text) for text in said)


# -- rules no scenario reaches ----------------------------------------------------------------


def test_a_sub_agent_that_does_not_answer_directly_returns_its_response_and_writes_nothing():
    agent = ConnectedAgent("travel", [Tool(book_flight)], description="Books flights", answers_directly=False)
    h = StandardHarness(Orchestrator("orchestrator", [agent]))
    h.send_sync("Book a flight to Oslo please")
    (result,) = checked([r for s in h.trace if s.executor_id == "travel" for r in results(s)], "result of travel")
    assert not result.wrote and result.outputs["responded"] is False
    assert [m.author_name for m in h.transcript if m.role == "assistant"] == ["orchestrator"]
    assert h.transcript[-1].text == result.outputs["response"]  # the parent said it


def test_a_connected_agent_takes_its_parents_conversation_unless_told_not_to():
    assert ConnectedAgent("travel", [Tool(book_flight)], description="Books flights").include_parent_context is True
