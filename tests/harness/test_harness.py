"""The harness as a user meets it: bad input, failed turns, questions, compaction, the sandbox."""

from typing import Literal

import pytest

from agent_nb import StepFailed, UsageError
from agent_nb.harness import (
    CardNode,
    CentralizedHarness,
    Finish,
    GenerativeAnswers,
    Knowledge,
    MessageNode,
    Orchestrator,
    QuestionNode,
    SetVariable,
    StandardHarness,
    Tool,
    Topic,
)
from agent_nb.harness.scenarios import opening_hours, returns

SOURCES = {"Hours": "Our opening hours are 9:00 to 17:00."}


def frozen(h):
    """Everything a turn could change."""
    return h.transcript, dict(h.state), len(h.turns)


async def test_clicking_without_a_card_or_on_a_missing_button_says_what_to_do():
    h = StandardHarness(opening_hours().build())
    with pytest.raises(UsageError, match=r"no card to click.*Use send"):
        await h.click("Phone")
    r = StandardHarness(returns().build())
    await r.send("I want to return an item.")
    before = frozen(r)
    with pytest.raises(
        UsageError, match="has no button 'phone'; its buttons are 'Laptop', 'Phone'; did you mean 'Phone'"
    ):
        await r.click("phone")
    assert frozen(r) == before
    with pytest.raises(ValueError, match="needs the text the user types"):
        await r.send("  ")


async def test_a_question_without_buttons_is_answered_by_typing():
    topic = Topic(
        "name",
        [QuestionNode("What is your name?", "name"), MessageNode("Nice to meet you, {name}.")],
        description="Ask the user's name",
    )
    h = StandardHarness(Orchestrator("orchestrator", [topic]))
    await h.send("Ask my name please")
    with pytest.raises(UsageError, match="question without buttons"):
        await h.click("Ada")
    turn = await h.send("Ada")
    assert [m.text for m in turn.shown] == ["Nice to meet you, Ada.", "Nice to meet you, Ada."]  # a duplicate, too
    assert h.gaps().kinds() == ["duplicate answer", "answer shown but not returned"]
    implicit = [m.text for m in h.context_of("orchestrator") if (m.author_name or "").endswith("(implicit)")]
    assert implicit[-1] == "user: Ada\nNice to meet you, Ada."  # a typed reply is plain text: it does reach it


def broken(flight: Literal["AB1"]) -> dict:
    """Flight status."""
    raise ConnectionError("the status service is down")


async def test_a_failed_turn_changes_nothing_and_says_which_part_failed():
    h = StandardHarness(Orchestrator("orchestrator", [Tool(broken, id="flight_status")]))
    await h.send("hello")  # nothing matches: the orchestrator says so
    before = frozen(h)
    with pytest.raises(StepFailed, match=r"'flight_status' failed.*ConnectionError: the status service is down") as e:
        await h.send("Flight status for AB1?")
    assert any("turn 2 failed; the conversation is as it was after turn 1" in n for n in e.value.__notes__)
    assert frozen(h) == before
    assert (await h.send("hello")).number == 2  # and it goes on from where it was


class Loop:
    async def next_step(self, view):
        from agent_nb.harness import Answer

        return Answer("again")


async def test_a_planner_that_never_finishes_hits_the_step_limit():
    topic = Topic("t", [MessageNode("x")], description="anything")
    h = StandardHarness(Orchestrator("orchestrator", [topic], planner=Loop(), max_steps=3))
    with pytest.raises(StepFailed, match="'orchestrator' took 3 planning steps in turn 1"):
        await h.send("hi")
    assert h.transcript == () and not h.turns


def test_designs_that_cannot_work_are_refused_at_once():
    with pytest.raises(ValueError, match="output 'item' is never set"):
        Topic("t", [MessageNode("x")], outputs={"item": ""})
    with pytest.raises(ValueError, match="component id 'my topic' cannot be used"):
        Topic("my topic", [MessageNode("x")])
    with pytest.raises(ValueError, match="needs at least one component"):
        Orchestrator("o", [])
    with pytest.raises(ValueError, match="two components named 't'"):
        Orchestrator("o", [Topic("t", [MessageNode("x")]), Topic("t", [MessageNode("y")])])
    with pytest.raises(TypeError, match="node 1 is a str"):
        Topic("t", ["hello"])
    with pytest.raises(ValueError, match="at least one action"):
        CardNode("Pick", (), "x")
    with pytest.raises(TypeError, match="runs an Orchestrator"):
        StandardHarness(Topic("t", [MessageNode("x")]))


async def test_a_generative_answers_node_writes_directly_or_into_a_variable():
    direct = Topic("hours", [GenerativeAnswers("hours_answers", SOURCES)], description="opening hours")
    h = StandardHarness(Orchestrator("orchestrator", [direct]))
    await h.send("What are your opening hours?")
    writers = [m.author_name for m in h.transcript if m.role == "assistant"]
    assert writers == ["hours_answers", "orchestrator"]  # not returned explicitly: repeated
    quiet = Topic(
        "hours",
        [
            GenerativeAnswers("hours_answers", SOURCES, variable="answer"),
            SetVariable("responded", False),
        ],
        description="opening hours",
        outputs=("answer",),
    )
    h = StandardHarness(Orchestrator("orchestrator", [quiet]))
    await h.send("What are your opening hours?")
    assert [(m.author_name, m.text) for m in h.transcript if m.role == "assistant"] == [
        ("orchestrator", "Our opening hours are 9:00 to 17:00.")
    ]


async def test_the_centralized_harness_compacts_and_keeps_everything_in_its_sandbox():
    faq = Knowledge("faq", {"Hours": "We are open from 9:00 to 17:00. Closed on Sundays."}, description="opening hours")
    h = CentralizedHarness(Orchestrator("orchestrator", [faq]), context_budget=60, keep_recent=3)
    for _ in range(4):
        await h.send("What are your opening hours on weekdays?")
    snaps = [s for s in h.trace if s.executor_id == "orchestrator" and s.dropped]
    assert snaps and all(s.context_filter == "compaction" for s in snaps)
    context = h.context_of("orchestrator")
    assert context[0].role == "system" and context[0].text.startswith("Summary of")
    assert any(path.startswith("context/compacted-") for path in h.sandbox)
    assert sum(path.startswith("outputs/faq-") for path in h.sandbox) == 4
    assert "9:00 to 17:00" in h.sandbox[next(p for p in h.sandbox if p.startswith("outputs/"))]


def size(item: Literal["Small", "Large"]) -> dict:
    """Ship a box of a size."""
    return {"shipped": f"A {item.lower()} box is on its way."}


async def test_after_compaction_an_input_is_still_filled_from_the_sandbox():
    pick = Topic(
        "pick_box",
        [CardNode("Which box?", ("Small", "Large"), "box"), SetVariable("responded", True)],
        description="choose a box",
        outputs=("box", "responded"),
    )
    hours = Knowledge("hours", {"Hours": "We are open from 9:00 to 17:00."}, description="opening hours")
    h = CentralizedHarness(
        Orchestrator("orchestrator", [pick, Tool(size, id="ship"), hours]), context_budget=40, keep_recent=2
    )
    await h.send("I want to choose a box")
    await h.click("Large")
    for _ in range(3):
        await h.send("What are your opening hours?")
    assert not any("Large" in m.text for m in h.context_of("orchestrator")[1:])  # compacted away
    await h.send("Please ship the box")
    assert h.transcript[-1].text == "A large box is on its way."


async def test_a_model_planner_sees_the_orchestrators_context_and_plans_with_tools():
    from agent_nb import FunctionChatClient, Message
    from agent_nb.contents import FunctionCallContent
    from agent_nb.harness import ModelPlanner

    seen = []

    def model(messages, options):
        seen.append((messages, options))
        if len(seen) == 1:
            return Message("assistant", [FunctionCallContent(call_id="call_1", name="opening_hours", arguments={})])
        return "We open at nine."

    topic = opening_hours().build().components[0]
    h = StandardHarness(Orchestrator("orchestrator", [topic], planner=ModelPlanner(FunctionChatClient(model))))
    await h.send("When do you open?")
    first, options = seen[0]
    assert "opening_hours: Opening hours of the shop" in first[0].text
    assert [t["name"] for t in options["tools"]] == ["opening_hours"]
    second, _ = seen[1]
    assert [m.role for m in second[1:]] == ["user", "assistant", "tool", "assistant"]
    assert second[-1].text.startswith("We are open 9:00")  # the topic's implicit text, nothing more
    assert [m.author_name for m in h.transcript if m.role == "assistant"] == ["opening_hours", "orchestrator"]
    # what the orchestrator's model received is on its snapshots, as sent: its prompt, then its context
    requests = [q for s in h.trace.for_executor("orchestrator") for q in s.model_requests]
    assert [list(q.messages) for q in requests] == [list(sent) for sent, _ in seen]
    assert requests[0].origins == ("instructions", "input") and requests[0].tools == ("opening_hours",)
    prompt = "Call a component when it can handle the user's request"  # in its model's prompt alone
    assert h.trace.who_has(prompt)["orchestrator"].in_context
    assert not h.trace.who_has(prompt, scope="executor")["orchestrator"].in_context


async def test_a_model_planner_that_calls_no_such_component_finishes():
    from agent_nb import FunctionChatClient, Message
    from agent_nb.contents import FunctionCallContent
    from agent_nb.harness import ModelPlanner, PlannerView

    def model(messages, options):
        return Message("assistant", [FunctionCallContent(call_id="c", name="nope", arguments="{}")])

    planner = ModelPlanner(FunctionChatClient(model))
    topic = Topic("t", [MessageNode("x")])
    step = await planner.next_step(PlannerView("o", "", (Message("user", ["hi"]),), (topic,), frozenset({"o"})))
    assert isinstance(step, Finish) and "'nope'" in step.reason


def quiet(item: Literal["A"]) -> None:
    """Archive an item."""


async def test_a_component_that_returns_nothing_and_an_unanswered_request_are_both_found():
    h = StandardHarness(Orchestrator("orchestrator", [Tool(quiet, id="archive")]))
    await h.send("Archive item A")
    assert h.transcript[-1].text == "Sorry, I could not find an answer to that."
    gaps = h.gaps()
    assert gaps.kinds() == ["missed answer", "component returned nothing"]
    assert gaps.of_kind("component returned nothing")[0].evidence == ("t1.c1",)
    assert "only 'could not find an answer'" in gaps[0].detail
    with pytest.raises(ValueError, match="unknown kind"):
        gaps.of_kind("typo")


def test_find_gaps_needs_a_harness_trace():
    from agent_nb.harness import find_gaps
    from agent_nb.trace import Trace

    with pytest.raises(ValueError, match=r"use harness\.trace"):
        find_gaps(Trace([]))


def test_every_rule_points_to_a_section_of_the_doc():
    """Each gap rule names its section of docs/context-distribution.md, and every such link resolves."""
    import re
    from pathlib import Path

    from agent_nb.harness import gaps

    root = Path(__file__).parents[2]
    headings = re.findall(r"^#+ (.+)$", (root / "docs" / "context-distribution.md").read_text("utf-8"), re.M)
    anchors = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    link = re.compile(r"docs/context-distribution\.md#([\w-]+)")
    for rule in gaps.RULES:
        assert link.search(rule.__doc__), f"{rule.__name__} does not name its section of the doc"
    for path in [*root.glob("agent_nb/**/*.py"), *root.glob("tests/**/*.py")]:
        for anchor in link.findall(path.read_text("utf-8")):
            assert anchor in anchors, f"{path.relative_to(root)}: docs/context-distribution.md has no #{anchor}"
