import gc

import pytest

from agent_nb import (
    AgentSession,
    AllAttemptsFailed,
    Capabilities,
    ChatAgent,
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    EchoChatClient,
    FallbackChatClient,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    ModelBadRequest,
    ModelTimeout,
    RouteIncompatibleError,
    RouteNotFoundError,
    RoutingChatClient,
    ScriptedChatClient,
    ServiceManagedHistoryError,
    UsageError,
    check_history,
    repair_history,
)

CALL = Message(
    "assistant",
    [FunctionCallContent(call_id="toolu_01A", name="weather", arguments={"city": "Lisbon"})],
    author_name="a",
)
RESULT = Message("tool", [FunctionResultContent(call_id="toolu_01A", result=18)], author_name="a")


def router(**kw):
    return RoutingChatClient({"echo": EchoChatClient(), "mirror": MirrorChatClient()}, **kw)


# -- the session's route ---------------------------------------------------------------


def test_active_route_is_the_sessions_else_the_default_else_the_first():
    r = router()
    s = AgentSession()
    assert r.get_active_route(s) == "echo" and r.get_active_route() == "echo"
    assert router(default_route="mirror").get_active_route(s) == "mirror"
    r.set_active_route(s, "mirror")
    assert r.get_active_route(s) == "mirror" and s.state == {"routes": {"router": "mirror"}}
    assert r.get_active_route(AgentSession()) == "echo"  # sessions never share a route by accident


def test_an_unknown_route_lists_the_routes_and_leaves_the_session_unchanged():
    r, s = router(), AgentSession()
    r.set_active_route(s, "mirror")
    with pytest.raises(
        RouteNotFoundError, match=r"no route 'miror' \(routes: echo, mirror\); did you mean 'mirror'\?"
    ) as info:
        r.set_active_route(s, "miror")
    assert isinstance(info.value, KeyError) and info.value.routes == ("echo", "mirror")
    assert r.get_active_route(s) == "mirror"
    with pytest.raises(RouteNotFoundError):
        router(default_route="nope")


def test_the_route_persists_with_the_session():
    r, s = router(), AgentSession()
    r.set_active_route(s, "mirror")
    assert r.get_active_route(AgentSession.from_dict(s.to_dict())) == "mirror"


async def test_a_removed_route_is_a_clear_error_on_the_next_turn():
    r = router()
    agent = ChatAgent(r, name="a", history=InMemoryHistoryProvider())
    s = agent.create_session()
    r.set_active_route(s, "mirror")
    r.remove_route("mirror")
    with pytest.raises(RouteNotFoundError, match=r"is on route 'mirror', which router 'router' no longer has"):
        await agent.run("hi", session=s)
    r.add_route("mirror", MirrorChatClient())
    assert (await agent.run("hi", session=s)).route == "mirror"


def test_routes_must_be_caller_managed_and_distinct():
    with pytest.raises(ServiceManagedHistoryError, match=r"route 'stored'.*keeps its conversation on the service"):
        RoutingChatClient({"stored": EchoChatClient(history_mode="service")})
    r = router()
    with pytest.raises(ValueError, match="already has a route 'echo'"):
        r.add_route("echo", EchoChatClient())
    with pytest.raises(ValueError, match="at least one route"):
        RoutingChatClient({})


async def test_switching_mid_conversation_keeps_the_whole_history():
    r = router()
    agent = ChatAgent(r, name="a", instructions="Be brief.", history=InMemoryHistoryProvider())
    s = agent.create_session()
    first = await agent.run("turn one", session=s)
    second = await agent.run("turn two", session=s)
    r.set_active_route(s, "mirror")
    third = await agent.run("turn three", session=s)
    assert (first.route, second.route, third.route) == ("echo", "echo", "mirror")
    assert third.text.startswith("I see 6 messages: system")
    assert 'user "turn one"' in third.text and 'user "turn three"' in third.text


async def test_select_chooses_per_request():
    def by_length(messages, options, session):
        return "mirror" if len(messages[-1].text) > 10 else None

    agent = ChatAgent(router(select=by_length), name="a")
    assert (await agent.run("short")).route == "echo"
    assert (await agent.run("a much longer question")).route == "mirror"


async def test_streaming_through_a_router_records_the_route():
    agent = ChatAgent(router(default_route="mirror"), name="a")
    updates = [u async for u in agent.run("hi", stream=True)]
    assert {u.route for u in updates} == {"mirror"}


# -- portability -----------------------------------------------------------------------


def test_pairing_rules():
    caps = Capabilities()
    assert check_history([Message("user", "q"), CALL, RESULT, Message("assistant", "18")], caps) == []
    orphan = check_history([Message("user", "q"), RESULT], caps)
    assert [(p.index, p.kind) for p in orphan] == [(1, "orphan_result")]
    interrupted = check_history([CALL, Message("user", "never mind"), RESULT], caps)
    assert [(p.index, p.kind) for p in interrupted] == [(0, "unanswered_call"), (2, "orphan_result")]
    assert [p.kind for p in check_history([Message("user", "q"), CALL], caps)] == ["unanswered_call"]
    assert check_history([Message("user", "q"), CALL], Capabilities(trailing_tool_call=True)) == []


def test_capability_checks():
    image = Message("user", ["look", DataContent(data=b"x", media_type="image/png")])
    problems = check_history(
        [Message("system", "s"), image, CALL, RESULT],
        Capabilities(tool_calls=False, images=False, system_messages=False, context_window=5),
    )
    assert [p.kind for p in problems] == ["system", "images", "tools", "tools", "context"]
    ids = check_history([CALL, RESULT], Capabilities(call_id_pattern=r"[a-zA-Z0-9]{9}"))
    assert [p.kind for p in ids] == ["call_id", "call_id"]


async def test_an_incompatible_history_is_refused_naming_the_messages():
    strict = RoutingChatClient({"plain": MirrorChatClient(capabilities=Capabilities(tool_calls=False))})
    history = InMemoryHistoryProvider()
    agent = ChatAgent(strict, name="a", history=history)
    s = agent.create_session()
    await history.save(s, [Message("user", "weather?"), CALL, RESULT, Message("assistant", "18C", author_name="a")])
    with pytest.raises(RouteIncompatibleError) as info:
        await agent.run("and tomorrow?", session=s)
    text = str(info.value)
    assert f"route 'plain' would reject this conversation of session {s.session_id!r} (2 problems)" in text
    assert 'message 2: assistant from a "function_call": a tool exchange, but this route has no tools' in text
    assert "history_policy='repair'" in text and "Nothing was sent" in text
    assert [p.index for p in info.value.problems] == [1, 2]
    assert len(await history.load(s)) == 4


async def test_repair_renders_tool_work_as_text_and_records_it():
    repairing = RoutingChatClient(
        {"plain": MirrorChatClient(capabilities=Capabilities(tool_calls=False))}, history_policy="repair"
    )
    history = InMemoryHistoryProvider()
    agent = ChatAgent(repairing, name="a", history=history)
    s = agent.create_session()
    await history.save(s, [Message("user", "weather?"), CALL, RESULT])
    r = await agent.run("thanks", session=s)
    assert r.repairs == ("rendered 2 tool messages as text (the route has no tools)",)
    assert 'assistant from a "[tool call toolu_01A: weather({"city": "Lisbon"})]"' in r.text
    assert 'user from a "[tool result toolu_01A: 18]"' in r.text
    assert len(await history.load(s)) == 5  # the stored history keeps the real tool messages


def test_repairs_drop_orphans_and_renumber_ids():
    fixed, notes = repair_history([Message("user", "q"), RESULT, CALL, Message("user", "next")], Capabilities())
    assert [m.role for m in fixed] == ["user", "user"] and "dropped 2" in notes[0]
    assert check_history(fixed, Capabilities()) == []
    caps = Capabilities(call_id_pattern=r"[a-zA-Z0-9]{9}")
    fixed, notes = repair_history([Message("user", "q"), CALL, RESULT], caps)
    assert check_history(fixed, caps) == []
    assert fixed[1].contents[0].call_id == fixed[2].contents[0].call_id == "c00000001"
    assert notes == ["renumbered 1 tool-call id to match '[a-zA-Z0-9]{9}'"]
    fixed, notes = repair_history(
        [Message("system", "Be brief."), Message("user", "q")], Capabilities(system_messages=False)
    )
    assert (
        fixed[0] == Message("user", "[system] Be brief.")
        and check_history(fixed, Capabilities(system_messages=False)) == []
    )


async def test_too_long_for_the_route_cannot_be_repaired():
    tiny = RoutingChatClient(
        {"tiny": EchoChatClient(capabilities=Capabilities(context_window=3))}, history_policy="repair"
    )
    with pytest.raises(RouteIncompatibleError, match=r"(?s)more than this route's 3.*shorten the conversation"):
        await ChatAgent(tiny, name="a").run("a question that is far too long for three tokens")


# -- fallback --------------------------------------------------------------------------


def failing(error):
    def fn(messages, options):
        raise error

    return FunctionChatClient(fn)


async def test_fallback_tries_the_next_on_retryable_errors_only():
    fb = FallbackChatClient(failing(ModelTimeout("slow")), EchoChatClient())
    assert (await fb.get_response([Message("user", "hi")])).text == "hi"
    with pytest.raises(ModelBadRequest):
        await FallbackChatClient(failing(ModelBadRequest("no")), EchoChatClient()).get_response([Message("user", "hi")])
    custom = FallbackChatClient(failing(KeyError("x")), EchoChatClient(), retry_on=(KeyError,))
    assert (await custom.get_response([Message("user", "hi")])).text == "hi"


async def test_all_failed_is_an_exception_group_of_every_attempt():
    fb = FallbackChatClient(failing(ModelTimeout("one")), failing(ConnectionError("two")))
    with pytest.raises(AllAttemptsFailed) as info:
        await fb.get_response([Message("user", "hi")])
    assert [type(e) for e in info.value.exceptions] == [ModelTimeout, ConnectionError]
    assert "all 2 clients failed (0: ModelTimeout: one; 1: ConnectionError: two)" in str(info.value)
    assert isinstance(info.value, BaseExceptionGroup)  # noqa: F821 - builtin on 3.11+


async def test_a_stream_never_switches_after_output_was_shown():
    class Dies(EchoChatClient):
        async def get_streaming_response(self, messages, options=None, *, session=None):
            yield ChatResponseUpdate(["partial"])
            raise ModelTimeout("mid-stream")

    fb = FallbackChatClient(Dies(), EchoChatClient())
    seen = []
    with pytest.raises(ModelTimeout, match="mid-stream"):
        async for u in fb.get_streaming_response([Message("user", "hi")]):
            seen.append(u.text)
    assert seen == ["partial"]
    early = FallbackChatClient(failing(ModelTimeout("before")), EchoChatClient())
    assert "".join([u.text async for u in early.get_streaming_response([Message("user", "one two")])]) == "one two"


def test_fallback_declares_what_every_client_accepts():
    fb = FallbackChatClient(
        EchoChatClient(capabilities=Capabilities(images=False, context_window=100)), EchoChatClient()
    )
    assert fb.capabilities.images is False and fb.capabilities.context_window == 100
    with pytest.raises(ServiceManagedHistoryError):
        FallbackChatClient(EchoChatClient(), EchoChatClient(history_mode="service"))
    with pytest.raises(ValueError, match="at least one fallback"):
        FallbackChatClient(EchoChatClient())


def test_a_duplicate_result_is_dropped_and_the_valid_one_kept():
    twice = Message(
        "tool",
        [FunctionResultContent(call_id="toolu_01A", result=18), FunctionResultContent(call_id="toolu_01A", result=19)],
    )
    history = [Message("user", "q"), CALL, twice]
    assert [(p.index, p.kind, p.position) for p in check_history(history, Capabilities())] == [(2, "orphan_result", 1)]
    fixed, _ = repair_history(history, Capabilities())
    assert check_history(fixed, Capabilities()) == [] and [c.result for c in fixed[2].contents] == [18]


def test_misplaced_content_and_reused_call_ids_are_flagged():
    stray = Message("tool", [FunctionResultContent(call_id="toolu_01A", result=18), "and some text"])
    reused = Message(
        "assistant", [FunctionCallContent(call_id="x", name="f"), FunctionCallContent(call_id="x", name="g")]
    )
    kinds = [p.kind for p in check_history([CALL, stray], Capabilities())]
    assert kinds == ["misplaced"]
    problems = check_history([reused, Message("tool", [FunctionResultContent(call_id="x", result=1)])], Capabilities())
    assert [p.detail for p in problems] == ["tool call id 'x' is used twice in one message"]
    fixed, _ = repair_history([CALL, stray], Capabilities())
    assert check_history(fixed, Capabilities()) == []


class Watched(Message):
    """A message that counts every read of its contents, whoever reads them."""

    def __getattribute__(self, name: str):
        if name == "contents":
            READS[0] += 1
        return super().__getattribute__(name)


READS = [0]


class Quiet:
    """A route that answers without looking at the request: every read of it is the router's check."""

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        self.capabilities = capabilities or Capabilities()

    async def get_response(self, messages, options=None, *, session=None):
        return ChatResponse([Message("assistant", "ok")])

    async def get_streaming_response(self, messages, options=None, *, session=None):
        yield ChatResponseUpdate(["ok"])


async def reads_to_send(router: RoutingChatClient, messages: list[Message], session: AgentSession) -> int:
    before = READS[0]
    await router.get_response(messages, session=session)
    return READS[0] - before


async def test_the_router_checks_only_the_new_messages_of_a_session():
    router = RoutingChatClient({"quiet": Quiet()})

    async def fresh(n: int) -> int:  # the reads to check n messages the router has never seen
        return await reads_to_send(router, [Watched("user", str(i)) for i in range(n)], AgentSession())

    assert 0 < await fresh(1) < await fresh(2) < await fresh(9)  # the probe sees the check
    session, conversation, per_turn = AgentSession(), [], []
    for turn in range(4):
        conversation = [*conversation, Watched("user", f"question {turn}")]  # a new list, the same messages
        per_turn.append(await reads_to_send(router, conversation, session))
        conversation.append(Watched("assistant", f"answer {turn}"))
    # the first turn is checked whole; every later one only for its two new messages, however long the history
    assert per_turn == [await fresh(1), await fresh(2), await fresh(2), await fresh(2)]
    # a reloaded history (equal messages, not the same objects) is checked afresh
    reloaded = [Watched(m.role, m.text, author_name=m.author_name) for m in conversation]
    reloaded.append(Watched("user", "question 4"))
    assert await reads_to_send(router, reloaded, session) == await fresh(9)
    # and so is the next turn after the route's capabilities changed
    router.remove_route("quiet")
    router.add_route("quiet", Quiet(Capabilities(images=False)))
    reloaded += [Watched("assistant", "answer 4"), Watched("user", "question 5")]
    new_caps = await reads_to_send(router, [Watched("user", str(i)) for i in range(11)], AgentSession())
    assert await reads_to_send(router, reloaded, session) == new_caps


async def test_a_problem_in_a_sessions_new_messages_is_found_and_new_capabilities_start_over():
    router = RoutingChatClient({"echo": EchoChatClient()})
    agent = ChatAgent(router, name="a", instructions="Be brief.", history=InMemoryHistoryProvider())
    session = agent.create_session()
    for text in ("one", "two", "three"):
        await agent.run(text, session=session)
    await agent.history.save(session, [Message("user", "q"), RESULT])
    with pytest.raises(RouteIncompatibleError, match="answers no call"):
        await agent.run("four", session=session)
    router.remove_route("echo")
    router.add_route("echo", EchoChatClient(capabilities=Capabilities(tool_calls=False)))
    with pytest.raises(RouteIncompatibleError, match="has no tools"):
        await agent.run("five", session=session)


async def test_a_route_without_tools_is_not_offered_the_agents_tools():
    client = ScriptedChatClient(["plain answer"], capabilities=Capabilities(tool_calls=False))

    def weather(city: str) -> str:
        return city

    agent = ChatAgent(RoutingChatClient({"plain": client}), name="a", tools=[weather], options={"tool_choice": "auto"})
    response = await agent.run("hi")
    assert "tools" not in client.requests[0][1] and "tool_choice" not in client.requests[0][1]
    assert response.repairs == ("the agent's tools were not offered: route 'plain' does not call tools",)


async def test_two_routers_of_one_name_on_one_session_are_refused_not_moving_each_others_route():
    planner_router = RoutingChatClient({"fast": EchoChatClient(), "smart": MirrorChatClient()})
    writer_router = RoutingChatClient({"fast": MirrorChatClient(), "smart": EchoChatClient()})  # same name: "router"
    shared = AgentSession("shared")
    planner = ChatAgent(planner_router, name="planner")
    writer = ChatAgent(writer_router, name="writer")
    await planner.run("hi", session=shared)
    await writer.run("hi", session=shared)  # both on the default: nothing was moved yet
    planner_router.set_active_route(shared, "smart")
    with pytest.raises(UsageError, match=r"two RoutingChatClients named 'router'.*its own name") as refused:
        await writer.run("and now?", session=shared)  # it would have been moved to "smart" behind its back
    assert "shared" in str(refused.value)
    with pytest.raises(UsageError, match="two RoutingChatClients named 'router'"):
        writer_router.set_active_route(shared, "fast")
    assert shared.state["routes"] == {"router": "smart"}  # left as it was

    named = RoutingChatClient({"fast": MirrorChatClient()}, name="writer's")
    named.set_active_route(shared, "fast")  # another name: its own place in the session
    assert shared.state["routes"] == {"router": "smart", "writer's": "fast"}


def test_a_router_left_behind_does_not_block_the_one_that_replaces_it():
    session = AgentSession()
    old = router()
    old.set_active_route(session, "mirror")
    del old
    gc.collect()
    new = router()  # a notebook cell run again: the same name, a new router
    assert new.get_active_route(session) == "mirror"
    new.set_active_route(session, "echo")


async def test_a_router_made_again_while_the_old_one_lives_takes_the_session_over():
    session = AgentSession("notebook")
    shown = []  # the old agent is still on screen (a widget, an Out[] entry): its router lives on
    for _ in range(2):  # the same cell, run twice
        agent = ChatAgent(router(), name="assistant")
        agent.client.set_active_route(session, "echo")
        assert (await agent.run("hi", session=session)).text == "hi"
        shown.append(agent)
    older, newer = shown
    assert session.state["routes"] == {"router": "echo"}
    with pytest.raises(UsageError, match=r"now routed by a newer RoutingChatClient named 'router'.*ran a cell again"):
        await older.run("still there?", session=session)
    newer.client.set_active_route(session, "mirror")  # the newer one goes on as before
    assert session.state["routes"] == {"router": "mirror"}
