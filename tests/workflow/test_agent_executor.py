import pytest
from doubles import RecordingAgent

from agent_nb import (
    AgentExecutor,
    AgentExecutorOptions,
    AgentExecutorRequest,
    AgentExecutorResponse,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    ChatAgent,
    ChatResponse,
    InputTypeError,
    Message,
    MirrorChatClient,
    ScriptedChatClient,
    StepFailed,
    TurnToken,
    WorkflowBuilder,
)
from agent_nb.workflow.filters import last_messages, user_messages, users_and_last_reply


def chain(*executors):
    return WorkflowBuilder(start_executor=executors[0]).add_chain(list(executors)).build()


def texts(messages):
    return [(m.role, m.author_name, m.text) for m in messages]


# -- identity and construction ---------------------------------------------------------


def test_id_defaults_to_the_agent_name_and_is_required():
    assert AgentExecutor(RecordingAgent("writer")).id == "writer"
    assert AgentExecutor(RecordingAgent("writer"), id="w2").id == "w2"
    with pytest.raises(ValueError, match=r"has no name: pass AgentExecutor\(agent, id=\.\.\.\)"):
        AgentExecutor(RecordingAgent(None))
    assert AgentExecutor(RecordingAgent(None), id="anon").id == "anon"


def test_a_filter_alone_means_custom_and_a_filter_with_another_mode_is_refused():
    ex = AgentExecutor(RecordingAgent("a"), context_filter=user_messages)
    assert ex.context_mode == "custom" and ex.context_filter is user_messages
    with pytest.raises(ValueError, match="only used with context_mode='custom', not 'full'"):
        AgentExecutor(RecordingAgent("a"), context_mode="full", context_filter=user_messages)
    ex.context_mode = "last_agent"  # switching away drops the filter
    assert ex.context_filter is None


def test_context_mode_validation():
    agent = RecordingAgent("a")
    with pytest.raises(
        ValueError, match="context_mode='everything' \\(str\\) is not accepted; use one of: full, last_agent, custom"
    ):
        AgentExecutor(agent, context_mode="everything")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'custom' needs a context_filter"):
        AgentExecutor(agent, context_mode="custom")
    ex = AgentExecutor(agent)
    with pytest.raises(ValueError, match="executor 'a'"):
        ex.context_mode = "nope"  # type: ignore[assignment]
    assert ex.context_mode == "full"


# -- context modes on a two-agent chain ------------------------------------------------


async def test_full_mode_gives_the_input_and_the_first_reply():
    first, second = RecordingAgent("first"), RecordingAgent("second")
    await chain(AgentExecutor(first), AgentExecutor(second, context_mode="full")).run("question")
    assert texts(second.seen[0]) == [("user", None, "question"), ("user", "first", "first saw 1")]


async def test_last_agent_mode_gives_only_the_first_reply():
    first, second = RecordingAgent("first"), RecordingAgent("second")
    result = await chain(AgentExecutor(first), AgentExecutor(second, context_mode="last_agent")).run("question")
    assert texts(second.seen[0]) == [("user", "first", "first saw 1")]
    snap = result.trace.last("second")
    assert texts(snap.dropped) == [("user", None, "question")]
    assert texts(snap.kept) == [("assistant", "first", "first saw 1")]


async def test_custom_mode_with_a_user_only_filter_gives_only_the_input():
    first, second = RecordingAgent("first"), RecordingAgent("second")
    ex = AgentExecutor(second, context_mode="custom", context_filter=user_messages)
    result = await chain(AgentExecutor(first), ex).run("question")
    assert texts(second.seen[0]) == [("user", None, "question")]
    snap = result.trace.last("second")
    assert snap.context_filter == "user_messages"
    assert texts(snap.dropped) == [("assistant", "first", "first saw 1")]


async def test_shipped_filters():
    msgs = [Message("user", "q"), Message("assistant", "a1"), Message("user", "q2"), Message("assistant", "a2")]
    assert [m.text for m in users_and_last_reply(msgs)] == ["q", "q2", "a2"]
    assert [m.text for m in last_messages(2)(msgs)] == ["q2", "a2"]
    assert last_messages(2).__name__ == "last_2_messages"
    with pytest.raises(ValueError):
        last_messages(0)


async def test_a_three_agent_chain_in_full_mode_grows_by_one_each_hop():
    agents = [RecordingAgent(f"a{i}") for i in range(3)]
    result = await chain(*[AgentExecutor(a) for a in agents]).run("q")
    assert [len(a.seen[0]) for a in agents] == [1, 2, 3]
    last = result.get_outputs()[-1]
    assert last.text == "a2 saw 3"
    conv = agents[2].seen[0]
    assert texts(conv)[1:] == [("user", "a0", "a0 saw 1"), ("user", "a1", "a1 saw 2")]


async def test_mode_changes_apply_from_the_next_message():
    first, second = RecordingAgent("first"), RecordingAgent("second")
    ex = AgentExecutor(second)
    wf = chain(AgentExecutor(first), ex)
    await wf.run("one")
    ex.context_mode = "last_agent"
    await wf.run("two")
    ex.set_context_mode("custom", user_messages)
    await wf.run("three")
    assert [len(s) for s in second.seen] == [2, 1, 1]
    assert second.seen[2][0].text == "three"


async def test_a_filter_that_raises_fails_the_run_naming_the_executor():
    def broken(messages):
        raise KeyError("oops")

    wf = chain(
        AgentExecutor(RecordingAgent("a")),
        AgentExecutor(RecordingAgent("b"), context_mode="custom", context_filter=broken),
    )
    with pytest.raises(
        StepFailed, match=r"executor 'b' failed.*context_filter 'broken' of executor 'b' raised KeyError"
    ):
        await wf.run("q")


async def test_a_filter_must_return_messages():
    wf = chain(
        AgentExecutor(RecordingAgent("a")),
        AgentExecutor(RecordingAgent("b"), context_mode="custom", context_filter=lambda ms: "nope"),
    )
    with pytest.raises(StepFailed, match="context_filter of executor 'b' must return a list of Message"):
        await wf.run("q")


# -- cache, preloading, inputs ---------------------------------------------------------


async def test_cache_is_cleared_after_each_call():
    agent = RecordingAgent("a")
    ex = AgentExecutor(agent)
    wf = chain(ex)
    await wf.run("one")
    await wf.run("two")
    assert texts(agent.seen[1]) == [("user", None, "two")]
    assert len(ex.cache) == 0
    assert texts(ex.conversation) == [("user", None, "two"), ("assistant", "a", "a saw 1")]


async def test_should_respond_false_only_preloads():
    agent = RecordingAgent("a")
    wf = chain(AgentExecutor(agent))
    result = await wf.run(AgentExecutorRequest(["background"], should_respond=False))
    assert agent.calls == [] and result.get_outputs() == []
    assert result.trace.last("a").status == "cached"
    await wf.run(AgentExecutorRequest([Message("user", "now answer")]))
    assert texts(agent.seen[0]) == [("user", None, "background"), ("user", None, "now answer")]


async def test_both_in_one_run():
    agent = RecordingAgent("a")
    await chain(AgentExecutor(agent)).run(AgentExecutorRequest("ctx", should_respond=False), "go")
    assert [m.text for m in agent.seen[0]] == ["ctx", "go"]


@pytest.mark.parametrize(
    "value",
    ["text", Message("user", "text"), ["text"], [Message("user", "text")], AgentExecutorRequest(["text"])],
    ids=["str", "Message", "list[str]", "list[Message]", "request"],
)
async def test_accepted_inputs(value):
    agent = RecordingAgent("a")
    await chain(AgentExecutor(agent)).run(value)
    assert texts(agent.seen[0]) == [("user", None, "text")]


async def test_a_response_without_full_conversation_falls_back_to_its_messages():
    agent = RecordingAgent("b")
    upstream = AgentResponse([Message("assistant", "hi", author_name="a")])
    await chain(AgentExecutor(agent)).run(AgentExecutorResponse("a", upstream))
    assert texts(agent.seen[0]) == [("user", "a", "hi")]


@pytest.mark.parametrize("bad", [42, {"role": "user"}, [1, 2]])
async def test_a_bad_input_type_names_the_executor_and_the_accepted_types(bad):
    wf = chain(AgentExecutor(RecordingAgent("writer")))
    with pytest.raises(TypeError) as info:
        await wf.run(bad)
    assert isinstance(info.value, InputTypeError)
    text = str(info.value)
    assert "'writer'" in text
    for accepted in (
        "AgentExecutorRequest",
        "AgentExecutorResponse",
        "str",
        "Message",
        "list[str | Message]",
        "TurnToken",
    ):
        assert accepted in text


async def test_a_failing_agent_fails_the_run_naming_it_and_keeps_its_state():
    agent = RecordingAgent("a", fail=ConnectionError("offline"))
    ex = AgentExecutor(agent)
    wf = chain(ex)
    await wf.run(AgentExecutorRequest("background", should_respond=False))
    with pytest.raises(StepFailed, match=r"executor 'a' failed in superstep 1.*ConnectionError: offline"):
        await wf.run("q")
    assert [m.text for m in ex.cache] == ["background"]  # "q" was cached in the failed run: undone
    assert len(ex.conversation) == 0 and ex.session is None
    agent.fail = None
    await wf.run("q2")
    assert [m.text for m in agent.seen[-1]] == ["background", "q2"]


async def test_a_failed_run_restores_session_state():
    class Counting(RecordingAgent):
        def run(self, messages=None, *, session=None, stream=False, **kwargs):
            session.state["turns"] = session.state.get("turns", 0) + 1
            return super().run(messages, session=session, stream=stream, **kwargs)

    session = AgentSession(state={"turns": 0})
    first, broken = Counting("first"), Counting("broken", fail=RuntimeError("down"))
    wf = chain(AgentExecutor(first, session=session), AgentExecutor(broken, session=session))
    with pytest.raises(StepFailed):
        await wf.run("q")
    assert session.state == {"turns": 0}
    broken.fail = None
    await wf.run("q")
    assert session.state == {"turns": 2}


async def test_an_agent_must_return_an_agent_response():
    class Wrong:
        name = "wrong"

        def create_session(self):
            return AgentSession()

        async def run(self, messages=None, *, session=None, stream=False):
            return "just text"

    with pytest.raises(StepFailed, match="returned str from run\\(\\); it must return an AgentResponse"):
        await chain(AgentExecutor(Wrong())).run("q")


# -- streaming -------------------------------------------------------------------------


async def test_streaming_yields_updates_and_downstream_gets_the_aggregate():
    first, second = RecordingAgent("first"), RecordingAgent("second")
    wf = chain(AgentExecutor(first), AgentExecutor(second))
    events = [e async for e in wf.run("q", stream=True)]
    outputs = [e for e in events if e.type == "output"]
    assert all(isinstance(e.data, AgentResponseUpdate) for e in outputs)
    assert [e.data.text for e in outputs if e.executor_id == "first"] == ["first", " saw", " 1"]
    assert texts(second.seen[0])[1] == ("user", "first", "first saw 1")
    assert first.calls[0]["stream"] is True


async def test_an_async_def_run_returning_a_stream_is_accepted():
    inner = RecordingAgent("inner")

    class AsyncRun:
        name = "wrapped"

        def create_session(self):
            return AgentSession()

        async def run(self, messages=None, *, session=None, stream=False):
            result = inner.run(messages, stream=stream)
            return result if stream else await result

    events = [e async for e in chain(AgentExecutor(AsyncRun())).run("q", stream=True)]
    assert "".join(e.data.text for e in events if e.type == "output") == "inner saw 1"


async def test_emit_options():
    agent = RecordingAgent("a")
    both = AgentExecutor(agent, options=AgentExecutorOptions(emit_update_events=True, emit_response_events=True))
    outputs = (await chain(both).run("q")).get_outputs()  # a non-streaming run that streams this agent
    assert [type(o).__name__ for o in outputs] == ["AgentResponseUpdate"] * 3 + ["AgentResponse"]
    quiet = AgentExecutor(
        RecordingAgent("b"), options=AgentExecutorOptions(emit_update_events=False, emit_response_events=False)
    )
    assert [e async for e in chain(quiet).run("q", stream=True) if e.type == "output"] == []


# -- roles and sessions ----------------------------------------------------------------


async def test_other_agents_become_users_own_replies_stay_assistant():
    mirror = MirrorChatClient()
    a, b = AgentExecutor(ChatAgent(mirror, name="a")), AgentExecutor(ChatAgent(mirror, name="b"))
    wf = (
        WorkflowBuilder(start_executor=a)
        .add_edge(a, b)
        .add_edge(b, a, lambda response: len(response.full_conversation) < 4)
        .build()
    )
    result = await wf.run("q")  # a → b → a → b
    second_turn_of_a = result.trace.for_executor("a")[1]
    assert [(m.role, m.author_name) for m in second_turn_of_a.given] == [
        ("user", None),
        ("assistant", "a"),  # its own reply keeps its role
        ("user", "b"),  # the other agent's reply is handed over as input
    ]
    assert second_turn_of_a.reassigned == (False, False, True)
    assert "user from b" in second_turn_of_a.response.text and "assistant from a" in second_turn_of_a.response.text
    assert [m.role for m in a.conversation] == ["user", "assistant", "assistant", "assistant"]  # original roles


async def test_reassignment_can_be_turned_off_and_full_conversation_keeps_roles():
    first, second = RecordingAgent("first"), RecordingAgent("second")
    ex = AgentExecutor(second, options=AgentExecutorOptions(reassign_other_agents_as_users=False))
    result = await chain(AgentExecutor(first), ex).run("q")
    assert texts(second.seen[0])[1] == ("assistant", "first", "first saw 1")
    sent = result.trace.last("first").sent[0].message
    assert isinstance(sent, AgentExecutorResponse)
    assert [m.role for m in sent.full_conversation] == ["user", "assistant"]


async def test_one_session_shared_by_several_executors():
    class Noting(RecordingAgent):
        def run(self, messages=None, *, session=None, stream=False, **kwargs):
            self.saw_notes = list(session.state.setdefault("notes", []))
            session.state["notes"] = [*self.saw_notes, self.name]
            return super().run(messages, session=session, stream=stream, **kwargs)

    session = AgentSession()
    a, b = Noting("a"), Noting("b")
    await chain(AgentExecutor(a, session=session), AgentExecutor(b, session=session)).run("q")
    assert a.calls[0]["session"] is session and b.calls[0]["session"] is session
    assert b.saw_notes == ["a"] and session.state["notes"] == ["a", "b"]


async def test_default_sessions_are_per_executor_and_kept_between_runs():
    a, b = RecordingAgent("a"), RecordingAgent("b")
    wf = chain(AgentExecutor(a), AgentExecutor(b))
    await wf.run("1")
    await wf.run("2")
    assert a.calls[0]["session"] is a.calls[1]["session"]
    assert a.calls[0]["session"] is not b.calls[0]["session"]


# -- turn tokens -----------------------------------------------------------------------


def turn_chain(*agents, forward=True, emit=None):
    opts = AgentExecutorOptions(wait_for_turn_token=True, forward_incoming_messages=forward, emit_update_events=emit)
    return chain(*[AgentExecutor(a, options=opts) for a in agents])


async def test_turn_token_caches_until_the_token_then_passes_it_on():
    a, b = RecordingAgent("a"), RecordingAgent("b")
    wf = turn_chain(a, b)
    result = await wf.run("hello")
    assert a.calls == [] and b.calls == []
    assert result.trace.last("a").status == "cached"
    result = await wf.run(TurnToken())
    assert texts(a.seen[0]) == [("user", None, "hello")]
    assert texts(b.seen[0]) == [("user", None, "hello"), ("user", "a", "a saw 1")]  # forwarded, then the reply
    sent = [type(s.message).__name__ for s in result.trace.last("a").sent]
    assert sent == ["list", "TurnToken"]


async def test_turn_token_without_forwarding_hands_on_only_the_reply():
    a, b = RecordingAgent("a"), RecordingAgent("b")
    await turn_chain(a, b, forward=False).run("hello", TurnToken())
    assert texts(b.seen[0]) == [("user", "a", "a saw 1")]


async def test_the_turn_token_decides_streaming_unless_the_option_does():
    a = RecordingAgent("a")
    out = (await turn_chain(a).run("q", TurnToken(emit_events=True))).get_outputs()
    assert [type(o).__name__ for o in out] == ["AgentResponseUpdate"] * 3
    b = RecordingAgent("b")
    out = (await turn_chain(b, emit=False).run("q", TurnToken(emit_events=True))).get_outputs()
    assert [type(o).__name__ for o in out] == ["AgentResponse"]


async def test_nothing_to_answer_is_a_clear_error():
    wf = chain(AgentExecutor(RecordingAgent("a")))
    with pytest.raises(StepFailed, match="'a' has nothing to answer: it was handed no message"):
        await wf.run([])
    with pytest.raises(StepFailed, match="nothing to answer: a turn token came"):
        await wf.run(TurnToken())


async def test_a_turn_token_answers_what_was_preloaded():
    agent = RecordingAgent("a")
    await chain(AgentExecutor(agent)).run(AgentExecutorRequest("ctx", should_respond=False), TurnToken())
    assert [m.text for m in agent.seen[0]] == ["ctx"]


async def test_a_hand_built_response_with_a_list_conversation_works_in_every_mode():
    reply = Message("assistant", "hi", author_name="a")
    upstream = AgentExecutorResponse("a", AgentResponse([reply]), [Message("user", "q"), reply])
    for mode in ("full", "last_agent"):
        agent = RecordingAgent("b")
        await chain(AgentExecutor(agent, context_mode=mode)).run(upstream)
        assert agent.seen[0][-1].text == "hi"


async def test_an_agent_as_fan_in_target_sees_each_message_once():
    start, left, right = RecordingAgent("start"), RecordingAgent("left"), RecordingAgent("right")
    joiner = RecordingAgent("joiner")
    for mode, expected in (
        ("full", ["q", "start saw 1", "left saw 2", "right saw 2"]),
        ("last_agent", ["left saw 2", "right saw 2"]),
    ):
        joiner.calls.clear()
        wf = (
            WorkflowBuilder(start_executor=start)
            .add_fan_out_edges(start, [left, right])
            .add_fan_in_edges([left, right], AgentExecutor(joiner, context_mode=mode))
            .build()
        )
        await wf.run("q")
        assert [m.text for m in joiner.seen[0]] == expected


async def test_another_agents_tool_calls_are_handed_over_as_text():
    from agent_nb import FunctionCallContent, FunctionResultContent

    class ToolUser(RecordingAgent):
        async def _respond(self, text):
            return AgentResponse(
                [
                    Message(
                        "assistant",
                        [FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Lisbon"})],
                        author_name="tools",
                    ),
                    Message("tool", [FunctionResultContent(call_id="c1", result={"temp": 18})], author_name="tools"),
                    Message("assistant", "It is 18 degrees.", author_name="tools"),
                ]
            )

    second = RecordingAgent("second")
    await chain(AgentExecutor(ToolUser("tools")), AgentExecutor(second)).run("weather?")
    assert [(m.role, m.author_name, m.text) for m in second.seen[0]] == [
        ("user", None, "weather?"),
        ("user", "tools", '[tool call c1: weather({"city": "Lisbon"})]'),
        ("user", "tools", '[tool result c1: {"temp": 18}]'),
        ("user", "tools", "It is 18 degrees."),
    ]
    assert all(c.type == "text" for m in second.seen[0] for c in m.contents)


async def test_streamed_multi_message_replies_stay_separate_and_keep_the_model():
    reply = ChatResponse([Message("assistant", "first part"), Message("assistant", "second part")], model="m1")
    stream = chain(AgentExecutor(ChatAgent(ScriptedChatClient([reply]), name="two"))).run("q", stream=True)
    updates = [e.data async for e in stream if e.type == "output"]
    assert "".join(u.text for u in updates) == "first partsecond part"
    response = stream.result.trace.last("two").response
    assert [m.text for m in response.messages] == ["first part", "second part"]
    assert response.model == "m1"
