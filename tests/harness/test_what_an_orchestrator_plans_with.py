"""What an orchestrator plans with and what it returns, as the documents' table says.

Its active context holds its components' descriptions, their inputs' and outputs'
descriptions and its plan state; its planner's reasoning stays in it; called as an agent it
returns its own declared outputs, and with ``returns_plan`` its plan and reasoning; knowledge
and generative answers get its whole active context, tool outputs included.
"""

from typing import Annotated, Literal

import pytest
from pydantic import Field

from agent_nb import FunctionChatClient, Message
from agent_nb.contents import FunctionCallContent
from agent_nb.harness import (
    CentralizedHarness,
    ChildAgent,
    ConnectedAgent,
    DeterministicPlanner,
    GenerativeAnswers,
    Knowledge,
    MessageNode,
    ModelPlanner,
    Orchestrator,
    StandardHarness,
    Tool,
    Topic,
    conversation_of,
)
from agent_nb.harness.scenarios import book_flight, flight_status

HARNESSES = pytest.mark.parametrize("harness", [StandardHarness, CentralizedHarness])


def contact(
    method: Annotated[Literal["Phone", "Email"], Field(description="How the customer wants to be reached")],
) -> dict[str, str]:
    """Arrange a call back from the service desk."""
    return {"arranged": f"We will reach you by {method.lower()}."}


def confirmation(booking: str) -> dict[str, str]:
    """Send the confirmation of a booking by email."""
    return {"sent": f"The confirmation of '{booking}' is in your inbox."}


def places(table, viewpoint):
    return [at for where in table[viewpoint].in_context for at in where.at]


def results_of(h, executor):
    return [sent.message for s in h.trace.for_executor(executor) for sent in s.sent if hasattr(sent.message, "outputs")]


# -- its active context: descriptions and plan state -------------------------------------------


def test_input_and_output_descriptions_are_in_the_orchestrators_recorded_context_and_found_by_who_has():
    hours = Topic(
        "opening_hours",
        [MessageNode("We are open 9:00-17:00.")],
        description="Opening hours of the shop",
        outputs={},
    )
    h = StandardHarness(Orchestrator("orchestrator", [Tool(contact), hours]))
    h.send_sync("Please arrange a call back, by phone.")
    s = h.trace.last("orchestrator")
    line = str(s.state["components"][0])
    assert line.startswith("contact: Arrange a call back from the service desk.")
    assert "method — How the customer wants to be reached [Phone|Email]" in line  # the column shows the choices
    assert "outputs: none declared" in line
    table = h.who_has("How the customer wants to be reached")
    assert "state components" in places(table, "orchestrator")
    assert not table["contact"].in_context  # a tool sees its inputs, not its description
    # a choice an input offers is not a fact of the run: who_has does not find it in the descriptions
    assert "state components" not in places(h.who_has("Email"), "orchestrator")


def test_the_plan_state_says_for_each_request_what_was_called_what_came_back_and_whether_it_is_answered():
    h = StandardHarness(Orchestrator("orchestrator", [Tool(flight_status), Tool(book_flight)]))
    h.send_sync("Is flight AB123 on time?")
    h.send_sync("Book a flight to Oslo.")
    first, second = h.trace.last("orchestrator").state["plan"]
    assert first.startswith("'Is flight AB123 on time?' (t1.") and ": answered" in first
    assert "called flight_status → status" in first
    assert second.startswith("'Book a flight to Oslo.' (t2.") and "called book_flight → booking" in second
    # while a call is out, the request is open and the call has nothing back yet
    sending = next(s for s in h.trace.for_executor("orchestrator") if s.turn == 2)
    assert sending.state["plan"][1].endswith(": open · called book_flight, nothing back yet")
    assert "state plan" in places(h.who_has("nothing back yet"), "orchestrator")


def test_the_column_shows_each_component_and_each_request_of_the_plan_on_its_own_line():
    h = StandardHarness(Orchestrator("orchestrator", [Tool(flight_status), Tool(book_flight)]))
    h.send_sync("Is flight AB123 on time?")
    h.send_sync("Book a flight to Oslo.")
    html = h.trace.for_executor("orchestrator")._repr_html_()
    assert "<dt>components</dt><dd>flight_status: The status and gate of a flight." in html
    assert "</dd><dd>book_flight: Book a flight to a destination." in html
    assert "<dt>plan</dt><dd>&#x27;Is flight AB123 on time?&#x27;" in html
    assert "</dd><dd>&#x27;Book a flight to Oslo.&#x27;" in html


async def test_a_model_planner_is_told_the_descriptions_and_the_plan_state():
    seen = []

    def model(messages, options):
        seen.append(messages)
        if len(seen) % 2:
            name = "flight_status" if len(seen) == 1 else "book_flight"
            arguments = {"flight": "AB123"} if len(seen) == 1 else {"destination": "Oslo"}
            return Message("assistant", [FunctionCallContent(call_id=f"c{len(seen)}", name=name, arguments=arguments)])
        return "Done."

    planner = ModelPlanner(FunctionChatClient(model))
    h = StandardHarness(Orchestrator("orchestrator", [Tool(flight_status), Tool(book_flight)], planner=planner))
    await h.send("Is flight AB123 on time?")
    await h.send("Book a flight to Oslo.")
    prompt = seen[2][0].text  # the first plan of the second turn
    assert "- book_flight: Book a flight to a destination. (inputs: destination — Where to fly to?" in prompt
    assert "The requests so far and where they stand:" in prompt
    assert "- 'Is flight AB123 on time?' (t1." in prompt and "called flight_status → status" in prompt
    assert "- 'Book a flight to Oslo.' (t2." in prompt and prompt.endswith(": open")


# -- its reasoning ------------------------------------------------------------------------------


def test_a_planner_that_explains_leaves_its_reasoning_in_the_orchestrators_context_never_in_the_chat():
    def build(explain):
        return Orchestrator("orchestrator", [Tool(flight_status)], planner=DeterministicPlanner(explain=explain))

    h = StandardHarness(build(True))
    h.send_sync("Is flight AB123 on time?")
    context = h.context_of("orchestrator")
    notes = [m.text for m in context if m.role == "system"]
    assert notes == [
        "reasoning: flight_status matches the request on flight; inputs from my context: flight",
        "reasoning: what came back for it answers it",
    ]
    assert not [m for m in conversation_of(context) if "reasoning" in m.text]  # not handed on as conversation
    assert h.transcript[-1].text == "Flight AB123 leaves on time from gate 12."
    assert all("reasoning" not in m.text for m in h.transcript)
    assert h.who_has("matches the request on flight")["orchestrator"].in_context
    quiet = StandardHarness(build(False))
    quiet.send_sync("Is flight AB123 on time?")
    assert not [m for m in quiet.context_of("orchestrator") if m.role == "system"]


async def test_what_a_model_says_beside_its_call_is_the_steps_reasoning():
    def model(messages, options):
        if len(messages) == 2:
            call = FunctionCallContent(call_id="c1", name="flight_status", arguments={"flight": "AB123"})
            return Message("assistant", ["The user asks about a flight; the status tool knows.", call])
        return "It leaves on time."

    planner = ModelPlanner(FunctionChatClient(model))
    h = StandardHarness(Orchestrator("orchestrator", [Tool(flight_status)], planner=planner))
    await h.send("Is flight AB123 on time?")
    notes = [m.text for m in h.context_of("orchestrator") if m.role == "system"]
    assert notes == ["reasoning: The user asks about a flight; the status tool knows."]
    assert [m.text for m in h.transcript if m.role == "assistant"] == ["It leaves on time."]


# -- what a sub-agent returns ---------------------------------------------------------------------


@HARNESSES
def test_a_sub_agent_returns_its_declared_outputs_and_the_parent_fills_a_later_input_from_them(harness):
    def build(outputs):
        travel = ConnectedAgent("travel", [Tool(book_flight)], description="Books flights", outputs=outputs)
        return Orchestrator("orchestrator", [travel, Tool(confirmation)])

    h = harness(build({"booking": "the booking, with its flight number"}))
    h.send_sync("Book a flight to Oslo.")
    (result,) = results_of(h, "travel")
    assert result.outputs["booking"] == "Booked: flight AB123 to Oslo on 14 March."
    assert set(result.outputs) == {"response", "responded", "booking"}
    h.send_sync("Send me the confirmation email.")
    (sent,) = results_of(h, "confirmation")
    assert "flight AB123 to Oslo" in sent.outputs["sent"]  # the booking came back explicitly, and was used
    assert h.who_has("AB123")["travel"].returned

    without = harness(build(()))
    without.send_sync("Book a flight to Oslo.")
    without.send_sync("Send me the confirmation email.")
    assert not results_of(without, "confirmation")  # only words of its response came back: nothing to fill it
    (asked,) = without.waiting.contents  # so it asks the user for it
    assert asked.prompt == "What is the booking?"


def test_a_declared_output_no_component_returned_is_left_out_and_outputs_are_for_sub_agents_to_declare():
    travel = ChildAgent("travel", [Tool(book_flight)], description="Books flights", outputs={"seat": "the seat"})
    assert dict(travel.outputs)["seat"] == "the seat" and "response" in travel.outputs
    h = StandardHarness(Orchestrator("orchestrator", [travel]))
    h.send_sync("Book a flight to Paris.")
    (result,) = results_of(h, "travel")
    assert set(result.outputs) == {"response", "responded"}
    assert "seat — the seat" in str(h.trace.last("orchestrator").state["components"][0])


@HARNESSES
def test_with_returns_plan_a_sub_agent_returns_its_plan_and_reasoning_which_the_parent_keeps(harness):
    def build(returns_plan):
        travel = ConnectedAgent(
            "travel",
            [Tool(book_flight)],
            description="Books flights",
            include_parent_context=False,
            planner=DeterministicPlanner(explain=True),
            returns_plan=returns_plan,
        )
        return Orchestrator("orchestrator", [travel])

    h = harness(build(True))
    h.send_sync("Book a flight to Bergen.")
    (result,) = results_of(h, "travel")
    (plan,) = result.outputs["plan"]
    assert plan.startswith("'Book a flight to Bergen.'") and ": answered · called book_flight → booking" in plan
    assert result.outputs["reasoning"][0].startswith("book_flight matches the request on")
    assert h.who_has("matches the request on")["orchestrator"].in_context  # the parent has its reasoning
    assert all("matches" not in m.text for m in h.transcript)  # said to nobody
    assert "plan — each request in its context" in str(h.trace.last("orchestrator").state["components"][0])

    quiet = harness(build(False))
    quiet.send_sync("Book a flight to Bergen.")
    (result,) = results_of(quiet, "travel")
    assert set(result.outputs) == {"response", "responded"}
    assert not quiet.who_has("matches the request on")["orchestrator"].in_context


# -- knowledge and generative answers: their agent's whole active context -------------------------


@HARNESSES
def test_knowledge_and_generative_answers_get_their_agents_whole_active_context_tool_outputs_included(harness):
    policy = Knowledge("travel_policy", {"Baggage": "One checked bag of 23 kg."}, description="Baggage allowance")
    lounge = Topic(
        "lounge",
        [GenerativeAnswers("lounge_answers", {"Lounges": "The lounge next to gate 12 opens at 6:00."})],
        description="Questions about the airport lounge",
    )
    h = harness(Orchestrator("orchestrator", [Tool(flight_status), policy, lounge]))
    h.send_sync("Is flight AB123 on time?")
    h.send_sync("What is the baggage allowance?")
    h.send_sync("Where is the lounge?")
    for part in ("travel_policy", "lounge_answers"):
        table = h.who_has("leaves on time from gate 12")  # the tool's output, held by the orchestrator
        assert table[part].in_context, part
        s = h.trace.last(part)
        assert any(c.type == "function_result" for m in s.given for c in m.contents)
    assert not h.who_has("leaves on time from gate 12")["lounge"].in_context  # the topic: its variables only
