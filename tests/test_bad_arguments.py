"""Bad arguments fail at once and clearly: an agent_nb error naming the argument, the value and what is accepted."""

from __future__ import annotations

from typing import Any

import pytest
from doubles import RecordingAgent

from agent_nb import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentNbError,
    AgentSession,
    ArgumentError,
    ChatAgent,
    EchoChatClient,
    Executor,
    FallbackChatClient,
    Message,
    MirrorChatClient,
    RoutingChatClient,
    StepFailed,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    tool,
)
from agent_nb.harness import ConnectedAgent, MessageNode, Orchestrator, StandardHarness, Tool, Topic

mirror = MirrorChatClient()


def hours() -> Topic:
    return Topic("hours", [MessageNode("We open at 9.")], description="opening hours")


class Opaque:
    """A parameter type pydantic can neither validate nor describe."""

    def __init__(self, x: int) -> None:
        self.x = x


def opaque_tool(value: Opaque) -> str:
    return "x"


CASES: list[tuple[str, Any, str, str]] = [
    ("AgentExecutor options as a dict", lambda: AgentExecutor(ChatAgent(mirror, name="a"), options={"x": 1}),
     "options", "AgentExecutor 'a': options={'x': 1} (dict) is not accepted; give AgentExecutorOptions(...)"),
    ("AgentExecutor with an empty id", lambda: AgentExecutor(ChatAgent(mirror, name="a"), id=""),
     "id", "AgentExecutor: id='' (str) is not accepted; give a non-empty str"),
    ("AgentExecutor of something that is no agent", lambda: AgentExecutor(42),  # type: ignore[arg-type]
     "agent", "AgentExecutor: agent=42 (int) is not accepted; give an agent"),
    ("AgentExecutor with a session that is no session",
     lambda: AgentExecutor(ChatAgent(mirror, name="a"), session="s1"),  # type: ignore[arg-type]
     "session", "AgentExecutor 'a': session='s1' (str) is not accepted; give an AgentSession"),
    ("ChatAgent(instructions=123)", lambda: ChatAgent(mirror, name="a", instructions=123),  # type: ignore[arg-type]
     "instructions", "ChatAgent 'a': instructions=123 (int) is not accepted"),
    ('ChatAgent(max_tool_rounds="3")', lambda: ChatAgent(mirror, name="a", max_tool_rounds="3"),  # type: ignore[arg-type]
     "max_tool_rounds", "ChatAgent 'a': max_tool_rounds='3' (str) is not accepted"),
    ('ChatAgent(options="t=1")', lambda: ChatAgent(mirror, name="a", options="t=1"),  # type: ignore[arg-type]
     "options", "ChatAgent 'a': options='t=1' (str) is not accepted"),
    ('Message("user", 123)', lambda: Message("user", 123), "contents", "a user message: contents=123 (int)"),
    ('Message("user", None)', lambda: Message("user", None), "contents", "a user message: contents=None"),
    ("AgentExecutorRequest(42)", lambda: AgentExecutorRequest(42),  # type: ignore[arg-type]
     "messages", "AgentExecutorRequest: messages=42 (int) is not accepted; give a str, a Message"),
    ('AgentSession(state="str")', lambda: AgentSession("s", state="str"),  # type: ignore[arg-type]
     "state", "AgentSession 's': state='str' (str) is not accepted; give a dict"),
    ('AgentSession.from_dict({"session_id": None})', lambda: AgentSession.from_dict({"session_id": None}),
     "session_id", "AgentSession.from_dict: session_id=None (NoneType) is not accepted"),
    ("set_active_route(None, ...)", lambda: RoutingChatClient({"a": mirror}).set_active_route(None, "a"),  # type: ignore[arg-type]
     "session", "router 'router': session=None (NoneType) is not accepted; give the AgentSession"),
    ("WorkflowBuilder(name=12345)", lambda: WorkflowBuilder(name=12345),  # type: ignore[arg-type]
     "name", "WorkflowBuilder: name=12345 (int) is not accepted; give a non-empty str"),
    ("a tool whose annotation pydantic cannot describe", lambda: tool(opaque_tool),
     "its parameter types", "tool 'opaque_tool': its parameter types={'value': 'Opaque'} (dict) is not accepted"),
    ('Tool(fn, id="not valid")', lambda: Tool(opaque_tool, id="not valid"),
     "id", "Tool: id='not valid' (str) is not accepted; give letters, digits and underscores"),
    ("ConnectedAgent(..., outputs=response)",
     lambda: ConnectedAgent("booker", [hours()], description="books", outputs={"response": "the booking"}),
     "outputs", "connected agent 'booker': 'response' is returned by every agent"),
    ("ConnectedAgent(..., outputz=...)",
     lambda: ConnectedAgent("booker", [hours()], description="books", outputz={"ref": "the booking"}),
     "outputz", "did you mean 'outputs'"),
    ("StandardHarness(..., context_budget=...)",
     lambda: StandardHarness(Orchestrator("o", [hours()]), context_budget=100),
     "context_budget", "StandardHarness: context_budget=100 (int) is not accepted; a standard harness takes only name="),
    ("RoutingChatClient without routes", lambda: RoutingChatClient({}),
     "routes", "RoutingChatClient needs at least one route"),
    ("RoutingChatClient(history_policy='lenient')",
     lambda: RoutingChatClient({"m": mirror}, history_policy="lenient"),  # type: ignore[arg-type]
     "history_policy", "history_policy must be 'strict' or 'repair', not 'lenient'"),
    ("a route that is no chat client", lambda: RoutingChatClient({"m": 42}),  # type: ignore[dict-item]
     "client", "route 'm': int is not a chat client"),
    ("a route added twice", lambda: RoutingChatClient({"m": mirror}).add_route("m", mirror),
     "name", "router 'router' already has a route 'm'"),
    ("FallbackChatClient without fallbacks", lambda: FallbackChatClient(mirror),
     "fallbacks", "needs at least one fallback"),
    ("a harness of something that is no orchestrator", lambda: StandardHarness(42),  # type: ignore[arg-type]
     "orchestrator", "a harness runs an Orchestrator, got int"),
    ("an orchestrator without components", lambda: Orchestrator("o", []),
     "components", "orchestrator 'o' needs at least one component"),
    ("an orchestrator with two components of one name", lambda: Orchestrator("o", [hours(), hours()]),
     "components", "has two components named 'hours'"),
    ("a component id that is no identifier", lambda: Topic("not an id", [MessageNode("hi")]),
     "id", "component id 'not an id' cannot be used"),
    ("a topic node that is no node", lambda: Topic("t", ["hello"]),  # type: ignore[list-item]
     "nodes", "topic 't': node 1 is a str, not a topic node"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "argument", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_argument_is_refused_at_once_naming_it(make: Any, argument: str, fragment: str) -> None:
    with pytest.raises(ArgumentError) as refused:
        make()
    assert refused.value.argument == argument
    assert fragment in str(refused.value), str(refused.value)
    assert isinstance(refused.value, (AgentNbError, TypeError, ValueError))


def test_standard_harness_says_where_the_centralised_settings_belong() -> None:
    with pytest.raises(ArgumentError, match="context_budget, keep_recent and sandbox belong to CentralizedHarness"):
        StandardHarness(Orchestrator("o", [hours()]), context_budget=100)


async def test_a_select_that_returns_a_number_is_named_with_what_it_should_return() -> None:
    def cheapest(messages: Any, options: Any, session: Any) -> Any:
        return 42

    agent = ChatAgent(RoutingChatClient({"fast": EchoChatClient()}, select=cheapest), name="a")
    with pytest.raises(ArgumentError, match=r"the route cheapest\(\) chose=42 \(int\).*route name \(fast\) or None"):
        await agent.run("hi")


async def test_a_fan_out_selection_that_returns_none_names_the_selection() -> None:
    def nobody(message: Any, targets: list[str]) -> Any:
        return None

    a, b, c = (AgentExecutor(RecordingAgent(n)) for n in "abc")
    workflow = WorkflowBuilder(start_executor=a).add_fan_out_edges(a, [b, c], selection=nobody).build()
    with pytest.raises(StepFailed, match=r"the fan-out selection 'nobody' of 'a' returned None, not a list of target"):
        await workflow.run("hi")


async def test_nothing_to_answer_names_the_filter_that_dropped_everything() -> None:
    def only_tools(messages: list[Message]) -> list[Message]:
        return [m for m in messages if m.role == "tool"]

    planner = AgentExecutor(ChatAgent(mirror, name="planner"))
    writer = AgentExecutor(ChatAgent(mirror, name="writer"), context_filter=only_tools)
    workflow = WorkflowBuilder(start_executor=planner).add_edge(planner, writer).build()
    with pytest.raises(
        StepFailed, match=r"its context_filter 'only_tools' dropped all 2 messages that came from 'planner'"
    ):
        await workflow.run("hi")


async def test_nothing_to_answer_names_the_upstream_executor_that_answered_nothing() -> None:
    class Silent(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext) -> None:
            from agent_nb import AgentExecutorResponse, AgentResponse

            await ctx.send_message(AgentExecutorResponse("silent", AgentResponse([])))

    writer = AgentExecutor(ChatAgent(mirror, name="writer"), context_mode="last_agent")
    workflow = WorkflowBuilder(start_executor=Silent("silent")).add_edge("silent", writer).build()
    with pytest.raises(StepFailed, match=r"'writer' has nothing to answer: 'silent' answered nothing"):
        await workflow.run("hi")


def test_message_node_text_with_braces_is_shown_as_written() -> None:
    from agent_nb.harness.topics import fill

    assert fill('Send {"order": "A7"} to {name}; {unknown} stays', {"name": "Ann"}) == (
        'Send {"order": "A7"} to Ann; {unknown} stays'
    )
    assert fill("{amount:.2f} EUR, {amount:%Y}", {"amount": 3.5}) == "3.50 EUR, {amount:%Y}"


async def test_a_message_node_with_json_in_it_reaches_the_chat_as_written() -> None:
    node = MessageNode('Your order: {"id": "A7", "items": [1, 2]}')
    harness = StandardHarness(Orchestrator("o", [Topic("order", [node], description="order status")]))
    turn = await harness.send("order status please")
    assert '{"id": "A7", "items": [1, 2]}' in " ".join(m.text for m in turn.shown)


def test_a_switcher_set_to_a_value_it_does_not_offer_names_the_choices() -> None:
    from agent_nb.widgets import ContextModeSwitcher

    switcher = ContextModeSwitcher(AgentExecutor(ChatAgent(mirror, name="a")))
    with pytest.raises(
        ArgumentError, match=r"ContextModeSwitcher: value='last_agnt' .*choose one of: full, last_agent"
    ):
        switcher.value = "last_agnt"
    assert switcher.value == "full"
