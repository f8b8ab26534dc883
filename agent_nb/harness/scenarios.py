"""Ready-made scenarios: each reproduces one failure of docs/context-distribution.md, and its fix.

A scenario builds fresh components (so one can run in two harnesses side by side) and
plays a fixed script of user turns. ``fixed=True`` applies the remedy of docs/context-distribution.md#the-two-warnings.

```python
harness = opening_hours().play(StandardHarness)
harness.gaps().kinds()   # ['duplicate answer', 'answer shown but not returned']
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from .components import Knowledge, Tool
from .harness import Harness
from .orchestrator import Orchestrator
from .subagents import ChildAgent, ConnectedAgent
from .topics import CardNode, GenerativeAnswers, MessageNode, SetVariable, Topic

__all__ = ["Scenario", "opening_hours", "returns", "tour", "travel"]

HOURS = "We are open 9:00-17:00, Monday to Friday."
BAGGAGE = "The baggage allowance is one checked bag of up to 23 kg per passenger."
RESPONDED = {"responded": "true once the topic has answered the user"}


@dataclass(frozen=True)
class Scenario:
    """Components and a script: ``("say", text)`` or ``("click", action)`` per user turn."""

    name: str
    build: Callable[[], Orchestrator]
    script: tuple[tuple[str, str], ...]

    def play(self, harness: type[Harness], **settings: object) -> Harness:
        """A new harness of that kind over freshly built components, after every turn of the script."""
        h = harness(self.build(), name=self.name, **settings)
        for action, text in self.script:
            (h.click_sync if action == "click" else h.send_sync)(text)
        return h

    async def aplay(self, harness: type[Harness], **settings: object) -> Harness:
        """``play`` for async code."""
        h = harness(self.build(), name=self.name, **settings)
        for action, text in self.script:
            await (h.click(text) if action == "click" else h.send(text))
        return h


def opening_hours(*, fixed: bool = False) -> Scenario:
    """A topic answers with a message node and returns nothing: the orchestrator answers again."""

    def build() -> Orchestrator:
        nodes: list[Any] = [MessageNode(HOURS)]
        if fixed:
            nodes.append(SetVariable("responded", True))
        hours = Topic(
            "opening_hours",
            nodes,
            description="Opening hours of the shop",
            triggers=("when are you open",),
            outputs=RESPONDED if fixed else (),
        )
        delivery = Knowledge(
            "delivery_faq",
            {"Delivery": "We deliver within three working days. Delivery is free above 50 euros."},
            description="Questions about delivery times and costs",
        )
        return Orchestrator("orchestrator", [hours, delivery])

    return Scenario("opening hours" + (" (fixed)" if fixed else ""), build, (("say", "What are your opening hours?"),))


def book_flight(
    destination: Annotated[Literal["Oslo", "Bergen", "Paris"], Field(description="Where to fly to?")],
) -> dict[str, str]:
    """Book a flight to a destination."""
    return {"booking": f"Booked: flight AB123 to {destination} on 14 March."}


def travel(*, agent: Literal["connected", "child"] = "connected", include_parent_context: bool = True) -> Scenario:
    """A sub-agent gets the parent's conversation with a request it cannot see answered, and answers it again."""

    def build() -> Orchestrator:
        baggage = Topic(
            "baggage",
            [MessageNode(BAGGAGE), SetVariable("responded", True)],
            description="Baggage allowance for checked bags",
            outputs=RESPONDED,
        )
        policy = Knowledge(
            "travel_policy",
            {"Baggage policy": f"{BAGGAGE} Hand luggage up to 8 kg is free.", "Refunds": "Refunds take 7 days."},
            description="Travel policy: baggage allowance, hand luggage and refunds",
        )
        parts = [Tool(book_flight), policy]
        description = "Books flights and answers travel policy questions"
        sub = (
            ConnectedAgent("travel", parts, description=description, include_parent_context=include_parent_context)
            if agent == "connected"
            else ChildAgent("travel", parts, description=description)
        )
        return Orchestrator("orchestrator", [baggage, sub])

    label = (
        f"travel ({agent} agent{', parent context off' if agent == 'connected' and not include_parent_context else ''})"
    )
    return Scenario(label, build, (("say", "What is the baggage allowance?"), ("say", "Book me a flight to Oslo.")))


def shipping_label(
    item: Annotated[Literal["Laptop", "Phone"], Field(description="Which item is the label for?")],
) -> dict[str, str]:
    """Email the shipping label for a returned item."""
    return {"label": f"The shipping label for your {item.lower()} is on its way to your inbox."}


def returns(*, fixed: bool = False) -> Scenario:
    """The user picks an item on a card; the click stays in the topic, and a later step asks again."""

    def build() -> Orchestrator:
        outputs = {**RESPONDED, "item": "the item the user returns"} if fixed else RESPONDED
        topic = Topic(
            "return_item",
            [
                CardNode("Which item would you like to return?", ("Laptop", "Phone"), "item"),
                MessageNode("Thanks, your return is registered. We will email you a shipping label."),
                SetVariable("responded", True),
            ],
            description="Start the return of an item",
            outputs=outputs,
        )
        return Orchestrator("orchestrator", [topic, Tool(shipping_label)])

    script = (("say", "I want to return an item."), ("click", "Phone"), ("say", "Please send me the shipping label."))
    return Scenario("returns" + (" (fixed)" if fixed else ""), build, script)


def flight_status(flight: Annotated[Literal["AB123", "CD456"], Field(description="Which flight?")]) -> dict[str, str]:
    """The status and gate of a flight."""
    return {"status": f"Flight {flight} leaves on time from gate 12."}


def tour() -> Scenario:
    """Every kind of component in one conversation: the run behind docs/context-distribution.md#the-summary-table."""

    def build() -> Orchestrator:
        seat = Topic(
            "seat_change",
            [
                CardNode("Where would you like to sit?", ("Window", "Aisle"), "seat"),
                MessageNode("Done, your seat is changed."),
                SetVariable("responded", True),
            ],
            description="Change your seat",
            outputs=RESPONDED,
        )
        lounge = Topic(
            "lounge",
            [GenerativeAnswers("lounge_answers", {"Lounges": "The lounge next to gate 12 opens at 6:00."})],
            description="Questions about the airport lounge",
        )
        loyalty = ChildAgent(
            "loyalty",
            [
                Knowledge(
                    "points",
                    {"Points": "Every flight earns 500 loyalty points."},
                    description="Loyalty points per flight",
                )
            ],
            description="Loyalty programme and points",
        )
        travel_agent = ConnectedAgent(
            "travel",
            [Tool(book_flight)],
            description="Books new flights",
            include_parent_context=False,
        )
        policy = Knowledge(
            "travel_policy",
            {"Baggage policy": BAGGAGE},
            description="Travel policy: baggage allowance",
        )
        return Orchestrator("orchestrator", [Tool(flight_status), seat, lounge, policy, loyalty, travel_agent])

    script = (
        ("say", "Is flight AB123 on time?"),
        ("say", "I'd like to change my seat."),
        ("click", "Window"),
        ("say", "Where is the lounge?"),
        ("say", "How many loyalty points does a flight earn?"),
        ("say", "Book a flight to Paris."),
    )
    return Scenario("airline tour", build, script)
