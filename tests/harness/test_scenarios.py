"""The failures of docs/context-distribution.md#the-two-warnings, asserted on what the user saw."""

import pytest

from agent_nb.harness import CentralizedHarness, ChildAgent, Knowledge, StandardHarness
from agent_nb.harness.matching import similar
from agent_nb.harness.scenarios import BAGGAGE, HOURS, opening_hours, returns, tour, travel

SCENARIOS = [
    opening_hours(),
    opening_hours(fixed=True),
    travel(),
    travel(include_parent_context=False),
    travel(agent="child"),
    returns(),
    returns(fixed=True),
    tour(),
]


def answers(h):
    return [m for m in h.transcript if m.role == "assistant" and m.text]


def saying(h, text):
    return [m for m in answers(h) if text in m.text]


def duplicates(h):
    lines = answers(h)
    return [(a, b) for i, b in enumerate(lines) for a in lines[:i] if similar(a.text, b.text)]


async def test_a_topic_that_answers_with_a_message_node_and_returns_nothing_is_answered_twice():
    h = await opening_hours().aplay(StandardHarness)
    twice = saying(h, HOURS)
    assert [m.author_name for m in twice] == ["opening_hours", "orchestrator"]
    gaps = h.gaps()
    assert gaps.kinds() == ["duplicate answer", "answer shown but not returned"]
    duplicate = gaps.of_kind("duplicate answer")[0]
    assert duplicate.component == "orchestrator"
    assert duplicate.evidence == tuple(m.message_id for m in twice)
    assert "responded" in duplicate.remedy and "opening_hours" in duplicate.remedy


async def test_with_the_remedy_the_duplicate_is_gone():
    h = await opening_hours(fixed=True).aplay(StandardHarness)
    assert [m.author_name for m in saying(h, HOURS)] == ["opening_hours"]
    assert not h.gaps()


async def test_a_connected_agent_given_the_parent_context_answers_its_unanswered_request_again():
    h = await travel().aplay(StandardHarness)
    assert [m.author_name for m in saying(h, BAGGAGE)] == ["baggage", "travel"]
    assert saying(h, "Booked")  # and it did what it was asked
    kinds = h.gaps().kinds()
    assert kinds == ["duplicate answer", "unanswered request passed in parent context"]
    leak = h.gaps().of_kind("unanswered request passed in parent context")[0]
    assert leak.component == "travel" and leak.evidence[0] == "t1.u"
    assert "include_parent_context=False" in leak.remedy


async def test_with_include_parent_context_off_it_does_not():
    h = await travel(include_parent_context=False).aplay(StandardHarness)
    assert [m.author_name for m in saying(h, BAGGAGE)] == ["baggage"]
    assert saying(h, "Booked")
    assert not h.gaps()


async def test_a_child_agent_always_gets_the_parent_context_and_cannot_be_configured_out_of_it():
    h = await travel(agent="child").aplay(StandardHarness)
    assert [m.author_name for m in saying(h, BAGGAGE)] == ["baggage", "travel"]
    assert "child agent" in h.gaps().of_kind("duplicate answer")[0].remedy
    policy = Knowledge("policy", {"p": "x"}, description="policy")
    with pytest.raises(TypeError, match="always receives its parent's conversation"):
        ChildAgent("travel", [policy], description="d", include_parent_context=False)
    assert not hasattr(ChildAgent("c", [policy], description="d"), "include_parent_context")


async def test_a_card_click_is_lost_and_a_later_step_asks_again():
    h = await returns().aplay(StandardHarness)
    last = h.transcript[-1]
    request = next(c for c in last.contents if c.type == "user_input_request")
    assert last.author_name == "orchestrator" and request.prompt == "Which item is the label for?"
    assert "Phone" in request.options and h.waiting == last  # the user is asked again
    kinds = h.gaps().kinds()
    assert kinds == ["card action lost", "missed answer"]
    lost = h.gaps().of_kind("card action lost")[0]
    assert lost.component == "return_item" and lost.evidence == ("t2.u", last.message_id)
    assert "'item'" in lost.remedy and "output" in lost.remedy


async def test_a_lost_click_stays_reported_after_the_user_gives_the_value_again_and_says_when_it_arrived():
    h = await returns().aplay(StandardHarness)
    await h.click("Phone")  # the orchestrator asked again; now it has the value, by another path
    (lost,) = h.gaps().of_kind("card action lost")
    assert lost.turn == 2 and "never reached" not in lost.detail  # the loss happened, at turn 2
    assert "orchestrator had it only at turn 4, by another path (the user gave it again)" in lost.detail


async def test_returning_the_click_as_a_topic_output_fixes_it():
    h = await returns(fixed=True).aplay(StandardHarness)
    assert saying(h, "shipping label for your phone")
    assert h.waiting is None and not h.gaps()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_the_centralized_harness_has_no_duplicate_and_only_the_orchestrator_talks(scenario):
    h = await scenario.aplay(CentralizedHarness)
    assert not duplicates(h)
    assert {m.author_name for m in h.transcript if m.role == "assistant"} == {"orchestrator"}
    assert not h.gaps()


@pytest.mark.parametrize("scenario", [travel(), travel(agent="child")], ids=lambda s: s.name)
async def test_the_centralized_harness_books_the_flight_and_says_the_allowance_once(scenario):
    h = await scenario.aplay(CentralizedHarness)
    assert [m.text for m in answers(h)] == [BAGGAGE, "Booked: flight AB123 to Oslo on 14 March."]


async def test_in_the_centralized_harness_the_click_reaches_the_orchestrator():
    h = await returns().aplay(CentralizedHarness)
    assert answers(h)[-1].text == "The shipping label for your phone is on its way to your inbox."
    assert any(c.type == "user_input_response" for m in h.context_of("orchestrator") for c in m.contents)


async def test_one_scenario_runs_the_same_every_time():
    a, b = await tour().aplay(StandardHarness), await tour().aplay(StandardHarness)
    assert a.transcript == b.transcript
    assert a.trace.to_text() == b.trace.to_text()
    assert [str(f) for f in a.gaps()] == [str(f) for f in b.gaps()]


def repeating_travel_agent():
    """A connected agent that, whatever it books, also restates the baggage allowance."""
    from agent_nb.harness import ConnectedAgent, MessageNode, Orchestrator, SetVariable, Topic

    baggage = Topic(
        "baggage",
        [MessageNode(BAGGAGE), SetVariable("responded", True)],
        description="Baggage allowance",
        outputs=("responded",),
    )
    booking = Topic(
        "booking",
        [MessageNode("Your flight is booked."), MessageNode(BAGGAGE), SetVariable("responded", True)],
        description="Book a flight",
        outputs=("responded",),
    )
    travel_agent = ConnectedAgent("travel", [booking], description="Books flights", include_parent_context=False)
    return Orchestrator("orchestrator", [baggage, travel_agent])


@pytest.mark.parametrize("harness", [StandardHarness, CentralizedHarness])
async def test_what_a_connected_agent_would_repeat_passes_through_the_parent_which_says_it_once(harness):
    h = harness(repeating_travel_agent())
    await h.send("What is the baggage allowance?")
    await h.send("Book a flight please.")
    said = [m.text for m in answers(h)]
    if harness is StandardHarness:
        assert said == [BAGGAGE, "Your flight is booked.", BAGGAGE]
        assert h.gaps().of_kind("duplicate answer")
    else:
        assert said == [BAGGAGE, "Your flight is booked."]
        assert not h.gaps()
