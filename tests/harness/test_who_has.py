"""``who_has``: the table of docs/context-distribution.md, computed from a run of every kind of component."""

import pytest

from agent_nb.harness import StandardHarness
from agent_nb.harness.scenarios import opening_hours, tour
from agent_nb.trace import context_table

REQUEST = "Is flight AB123 on time?"


@pytest.fixture(scope="module")
def run():
    return tour().play(StandardHarness)


def marks(table, viewpoint):
    return "".join(letter for letter, on in zip("CWR", table[viewpoint].marks(), strict=True) if on)


def test_the_users_request_reaches_the_orchestrator_knowledge_and_the_child_agent_not_a_tool(run):
    table = run.who_has(REQUEST)
    assert marks(table, "orchestrator") == "C"
    assert marks(table, "flight_status") == ""  # a tool only sees the inputs the orchestrator generated
    assert marks(table, "points") == "C"  # knowledge: the request plus its agent's active context
    assert marks(table, "loyalty") == "C"  # a child agent always has the parent's conversation
    assert marks(table, "travel") == ""  # a connected agent with include_parent_context=False
    assert marks(table, "lounge_answers") == "C"  # generative answers: its input plus its agent's context
    assert marks(table, "user's chat") == "CW"


def test_a_tool_returns_its_output_and_the_orchestrator_answers_with_it(run):
    table = run.who_has("leaves on time")
    assert marks(table, "flight_status") == "R"
    assert marks(table, "orchestrator") == "CW"


def test_a_card_click_stays_in_the_topic(run):
    table = run.who_has("Window")
    assert marks(table, "seat_change") == "CW"  # in its variables; it showed the button
    assert marks(table, "orchestrator") == ""


def test_knowledge_writes_to_its_agent_not_the_chat(run):
    table = run.who_has("500 loyalty points")
    assert marks(table, "points") == "CR"
    assert marks(table, "loyalty") == "CWR"  # the child agent answered directly and returned its response


def test_a_generative_answers_node_writes_directly_and_returns_nothing_explicit(run):
    table = run.who_has("opens at 6:00")
    assert marks(table, "lounge_answers") == "CWR"  # found in its sources, written, given to its topic
    assert marks(table, "lounge") == "R"  # the topic returned it as implicit text only
    assert not run.trace.last("lounge").sent[-1].message.outputs


def test_where_is_reported_by_turn_and_message_id(run):
    table = run.who_has("Window")
    (where,) = table["seat_change"].wrote
    assert where.turn == 2 and where.at == ("t2.m3",)
    text = table.to_text()
    assert "seat_change" in text and "turn 2, superstep" in text


def test_a_fact_can_be_a_predicate_and_must_be_something():
    h = opening_hours().play(StandardHarness)
    table = h.who_has(lambda text: "17:00" in text)
    assert table["opening_hours"].wrote and table.label == "<lambda>"
    with pytest.raises(ValueError, match="non-empty text"):
        h.who_has("  ")
    with pytest.raises(KeyError, match="viewpoints: orchestrator"):
        table["nobody"]


def test_the_table_of_several_facts(run):
    table = context_table(run.trace, {"request": REQUEST, "click": "Window"})
    assert table["orchestrator", "request"] == "C"
    assert table["seat_change", "click"] == "CW"
    assert "C: in its active context" in table.to_text()
    html = table._repr_mimebundle_()["text/html"]
    assert "<table>" in html and "seat_change" in html


def test_a_value_that_carries_no_text_is_let_go_by_its_type_but_an_object_that_grows_texts_is_read():
    from dataclasses import dataclass

    from agent_nb.trace.who_has import strings_of

    @dataclass(frozen=True, slots=True)
    class Token:  # slotted: no instance can grow a texts() of its own
        n: int

    class Note:
        pass

    assert list(strings_of(Token(1))) == [] and list(strings_of(Token(2))) == []
    first, second = Note(), Note()
    assert list(strings_of(first)) == []
    second.texts = lambda: ["the gate moved to B12"]  # the same type, one instance that carries text
    assert list(strings_of(second)) == ["the gate moved to B12"]
    assert list(strings_of([Token(3), "x"])) == ["x"]  # a list of them is still walked
