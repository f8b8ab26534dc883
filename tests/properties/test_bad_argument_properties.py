"""Only agent_nb errors escape: made from generated junk, a message, content, response, session,
client, agent, executor, builder (and the workflow it builds, and a run's own arguments) either
works or raises an ``agent_nb.AgentNbError`` (many are ``ArgumentError``, also a TypeError and a
ValueError) — never a raw ``AttributeError``, ``KeyError``, ``pydantic.ValidationError`` or a
``TypeError``/``ValueError`` that is not agent_nb's.

The raw errors these properties once found are kept in ``FOUND``, each as its smallest call:
``test_a_call_that_once_raised_raw_now_raises_an_agent_nb_error`` holds every one fixed.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import content_dicts, examples, junk, messages, names, text

from agent_nb import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentNbError,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    ChatAgent,
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    EchoChatClient,
    Executor,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    ScriptedChatClient,
    TextContent,
    UriContent,
    UserInputRequestContent,
    UserInputResponseContent,
    WorkflowBuilder,
)
from agent_nb.messages import Usage, to_messages
from agent_nb.workflow import AgentExecutorOptions, FunctionExecutor, InMemoryCheckpointStorage


@dataclass(frozen=True)
class Found:
    """A call that once raised a raw error, and what it was."""

    id: str
    repro: Callable[[], Any]
    reason: str


def _name(exc: BaseException) -> str:
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"


def _tiny(**builder: Any) -> Any:
    a = AgentExecutor(ChatAgent(MirrorChatClient(), name="a"))
    return WorkflowBuilder(start_executor=a, **builder).build()


def _mirror(**kw: Any) -> ChatAgent:
    return ChatAgent(MirrorChatClient(), name="a", **kw)


FOUND: list[Found] = [
    Found("message-role", lambda: Message("bogus", "hi"), "Message with an unknown role"),
    Found("with-role", lambda: Message("user", "hi").with_role("bogus"), "Message.with_role with an unknown role"),
    Found("content-type-tag", lambda: Message("user", [{"type": "bogus"}]),
          "a content dict with an unknown type tag"),
    Found("message-fields", lambda: Message("user", "hi", author_name=5), "Message with a field of the wrong type (or missing, or extra)"),
    Found("content-fields", lambda: FunctionCallContent(call_id=1, name="f"), "a content with a field of the wrong type"),
    Found("text-content-fields", lambda: TextContent(5), "TextContent of a non-str"),
    Found("response-fields", lambda: AgentResponse([5]),
          "a response (or update) with a field of the wrong type"),
    Found("response-messages", lambda: AgentResponse(None), "AgentResponse(messages) of a non-iterable"),
    Found("executor-id", lambda: Executor(""), "Executor with an empty or non-str id"),
    Found("function-executor", lambda: FunctionExecutor(lambda m, c: None), "FunctionExecutor of a plain function"),
    Found("tool-callable", lambda: _mirror(tools=[None]), "ChatAgent(tools=[None])"),
    Found("tool-positional", lambda: _mirror(tools=[len]), "ChatAgent(tools=[len]): a positional-only parameter"),
    Found("tool-name", lambda: _mirror(tools=[lambda x: x]), "ChatAgent(tools=[lambda x: x]): a tool named '<lambda>'"),
    Found("filter-callable", lambda: AgentExecutor(_mirror(), context_filter=5), "AgentExecutor(context_filter=5)"),
    Found("custom-needs-filter", lambda: AgentExecutor(_mirror(), context_mode="custom"), "AgentExecutor(context_mode='custom') alone"),
    Found("filter-needs-custom", lambda: AgentExecutor(_mirror(), context_mode="full", context_filter=list),
          "AgentExecutor(context_mode='full', context_filter=...)"),
    Found("max-supersteps", lambda: WorkflowBuilder(max_supersteps=0),
          "WorkflowBuilder(max_supersteps=0) (and run(max_supersteps=0))"),
    Found("node-type", lambda: WorkflowBuilder(start_executor=5), "a workflow node that is no Executor, agent or id"),
    Found("node-list", lambda: WorkflowBuilder().add_chain(5), "add_chain / add_fan_out_edges / add_fan_in_edges / output_from "
          "given a non-iterable"),
    Found("checkpoint-storage", lambda: asyncio.run(_tiny(checkpoint_storage=5).run("hi")),
          "WorkflowBuilder(checkpoint_storage=5): was accepted, and its first run raised"),
    Found("run-kwargs", lambda: _tiny().run("hi", client_kwargs=[("*", {})]), "run(client_kwargs=<not a mapping>)"),
    Found("run-state", lambda: asyncio.run(_tiny().run("hi", state=[1])), "run(state=<not a mapping>)"),
    Found("session-json", lambda: AgentSession("s", {"k": {1, 2}}).to_dict(),
          "AgentSession.to_dict() of a state that is not JSON (a TypeError, not an AgentNbError)"),
]  # fmt: skip


def attempt(where: str, make: Callable[[], Any]) -> Any:
    """``make()``: its value, or ``None`` when it raised an agent_nb error; a raw error fails the example."""
    try:
        return make()
    except AgentNbError:
        return None
    except Exception as exc:
        trace = "".join(traceback.format_exception(exc)[-6:])
        raise AssertionError(f"{where} raised a raw {_name(exc)} (not an agent_nb error): {exc}\n{trace}") from exc


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- strategies of arguments: junk, or a valid value so that later checks are reached ----------------


def either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(valid, junk)


def kwargs(*, extra: bool = False, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Any subset of the named keywords; with ``extra``, sometimes a keyword the model does not have.

    (Only models get unknown keywords: a plain function refusing one is Python's own TypeError.)
    """
    chosen = st.fixed_dictionaries({}, optional=fields)
    if not extra:
        return chosen
    more = st.dictionaries(st.sampled_from(["bogus", "type", "text", "role"]), junk, max_size=1)
    return st.builds(lambda c, m: {**m, **c}, chosen, more)


roles = either(st.sampled_from(["system", "user", "assistant", "tool"]))
contents_args = either(st.lists(st.one_of(text, content_dicts, st.builds(TextContent, text)), max_size=3))


clients = st.sampled_from([MirrorChatClient(), EchoChatClient(), ScriptedChatClient(["x"])])
agents = st.builds(lambda n: ChatAgent(MirrorChatClient(), name=n), st.sampled_from(["a", "b", "c"]))


# -- messages and contents -------------------------------------------------------------------


@examples(120)
@given(
    st.one_of(
        st.tuples(
            st.just(()),
            kwargs(extra=True, role=roles, contents=contents_args, author_name=either(names), message_id=junk),
        ),
        st.tuples(st.tuples(roles), kwargs(extra=True, contents=contents_args, author_name=either(names))),
        st.tuples(st.tuples(roles, contents_args), kwargs(author_name=either(names), message_id=either(names))),
    )
)
def test_a_message_made_of_junk_is_made_or_refused_by_agent_nb(call: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kw = call
    attempt("Message", lambda: Message(*args, **kw))


@examples(30)
@given(messages, junk)
def test_a_message_given_a_junk_role_is_refused_by_agent_nb(message: Message, role: Any) -> None:
    attempt("Message.with_role", lambda: message.with_role(role))


CONTENTS: dict[str, tuple[type, dict[str, st.SearchStrategy[Any]]]] = {
    "TextContent": (TextContent, {"text": either(text)}),
    "FunctionCallContent": (
        FunctionCallContent,
        {"call_id": either(names), "name": either(names), "arguments": either(st.dictionaries(text, text))},
    ),
    "FunctionResultContent": (FunctionResultContent, {"call_id": either(names), "result": junk, "exception": junk}),
    "UserInputRequestContent": (
        UserInputRequestContent,
        {"request_id": either(names), "prompt": junk, "options": junk, "function_call": junk},
    ),
    "UserInputResponseContent": (
        UserInputResponseContent,
        {"request_id": either(names), "text": junk, "approved": either(st.booleans())},
    ),
    "DataContent": (DataContent, {"data": either(st.binary()), "media_type": either(text)}),
    "UriContent": (UriContent, {"uri": either(text), "media_type": junk}),
    "Usage": (Usage, {"input_tokens": either(st.integers(0)), "output_tokens": junk}),
}


@examples(25)
@pytest.mark.parametrize("kind", sorted(CONTENTS))
@given(data=st.data())
def test_a_content_made_of_junk_is_made_or_refused_by_agent_nb(kind: str, data: st.DataObject) -> None:
    cls, fields = CONTENTS[kind]
    kw = data.draw(kwargs(extra=True, **fields))
    positional = data.draw(st.lists(junk, max_size=1)) if kind == "TextContent" else []
    attempt(kind, lambda: cls(*positional, **kw))


RESPONSES = {
    "AgentResponse": AgentResponse,
    "ChatResponse": ChatResponse,
    "AgentResponseUpdate": AgentResponseUpdate,
    "ChatResponseUpdate": ChatResponseUpdate,
}


@examples(25)
@pytest.mark.parametrize("kind", sorted(RESPONSES))
@given(
    st.lists(either(st.lists(messages, max_size=2)), max_size=1),
    kwargs(
        extra=True,
        response_id=junk,
        model=either(text),
        route=junk,
        repairs=junk,
        usage=junk,
        role=roles,
        finish_reason=junk,
    ),
)
def test_a_response_made_of_junk_is_made_or_refused_by_agent_nb(
    kind: str, positional: list[Any], kw: dict[str, Any]
) -> None:
    cls = RESPONSES[kind]
    if not kind.endswith("Update"):
        kw.pop("role", None)  # a response has no role; an update has one
    attempt(kind, lambda: cls(*positional, **kw))


@examples(40)
@given(junk, st.sampled_from(["to_messages", "AgentExecutorRequest"]), junk)
def test_an_input_made_of_junk_is_taken_or_refused_by_agent_nb(value: Any, kind: str, flag: Any) -> None:
    if kind == "to_messages":
        attempt(kind, lambda: to_messages(value))
    else:
        attempt(kind, lambda: AgentExecutorRequest(value, flag))


@examples(40)
@given(st.lists(either(names), max_size=1), kwargs(state=either(st.dictionaries(text, text)), session_id=junk))
def test_a_session_made_of_junk_is_made_or_refused_by_agent_nb(positional: list[Any], kw: dict[str, Any]) -> None:
    if positional:
        kw.pop("session_id", None)
    session = attempt("AgentSession", lambda: AgentSession(*positional, **kw))
    if session is not None:
        attempt("AgentSession.to_dict", session.to_dict)
    attempt("AgentSession.from_dict", lambda: AgentSession.from_dict(kw))


# -- clients, agents, executors ----------------------------------------------------------------


@examples(40)
@given(
    st.sampled_from(["ScriptedChatClient", "FunctionChatClient", "MirrorChatClient", "EchoChatClient"]),
    junk,
    kwargs(stream_delay=junk, capabilities=junk, history_mode=either(st.sampled_from(["caller", "service"]))),
)
def test_a_client_made_of_junk_is_made_or_refused_by_agent_nb(kind: str, first: Any, kw: dict[str, Any]) -> None:
    make = {
        "ScriptedChatClient": lambda: ScriptedChatClient(first, **kw),
        "FunctionChatClient": lambda: FunctionChatClient(first, **kw),
        "MirrorChatClient": lambda: MirrorChatClient(words=first, **kw),
        "EchoChatClient": lambda: EchoChatClient(**kw),
    }[kind]
    attempt(kind, make)


@examples(120)
@given(
    either(clients),
    kwargs(
        name=either(names),
        instructions=either(text),
        description=junk,
        options=either(st.dictionaries(text, text)),
        history=either(st.just(InMemoryHistoryProvider())),
        tools=either(st.lists(st.sampled_from([len, print, lambda x: x]), max_size=2)),
        max_tool_rounds=either(st.integers(-2, 10)),
        tool_timeout=either(st.floats(0, 10)),
    ),
)
def test_an_agent_made_of_junk_is_made_or_refused_by_agent_nb(client: Any, kw: dict[str, Any]) -> None:
    kw.setdefault("name", "a")
    attempt("ChatAgent", lambda: ChatAgent(client, **kw))


@examples(120)
@given(
    either(agents),
    kwargs(
        session=either(st.builds(AgentSession)),
        id=either(names),
        context_mode=either(st.sampled_from(["full", "last_agent", "custom"])),
        context_filter=either(st.sampled_from([lambda ms: ms, list])),
        options=either(st.builds(AgentExecutorOptions, wait_for_turn_token=st.booleans())),
    ),
)
def test_an_agent_executor_made_of_junk_is_made_or_refused_by_agent_nb(agent: Any, kw: dict[str, Any]) -> None:
    attempt("AgentExecutor", lambda: AgentExecutor(agent, **kw))


async def _passthrough(message: str, ctx: Any) -> None:
    await ctx.send_message(message)


def _sync(message: str, ctx: Any) -> None:
    pass


@examples(40)
@given(junk, st.sampled_from(["Executor", "FunctionExecutor"]), either(st.sampled_from([_passthrough, _sync])))
def test_an_executor_made_of_junk_is_made_or_refused_by_agent_nb(ident: Any, kind: str, fn: Any) -> None:
    if kind == "Executor":
        attempt("Executor", lambda: Executor(ident))
    else:
        attempt("FunctionExecutor", lambda: FunctionExecutor(fn, id=ident))


# -- builders, the workflows they build, and the arguments of a run ------------------------------------


@st.composite
def nodes(draw: st.DrawFn) -> Any:
    """A node: a fresh agent or agent executor, an id (known or not), or junk."""
    name = draw(st.sampled_from(["a", "b", "c"]))
    return draw(
        st.one_of(
            st.just(ChatAgent(MirrorChatClient(), name=name)),
            st.just(AgentExecutor(ChatAgent(MirrorChatClient(), name=name))),
            st.sampled_from(["a", "b", "c", "zz"]),
            junk,
        )
    )


conditions = either(st.sampled_from([lambda m: True, lambda m: False, lambda m: 1 / 0]))
selections = either(st.sampled_from([lambda m, ts: ts, lambda m, ts: [], lambda m, ts: ts[0], lambda m, ts: None]))

operations = st.one_of(
    st.tuples(st.just("add_edge"), st.tuples(nodes(), nodes()), kwargs(condition=conditions, label=junk)),
    st.tuples(st.just("add_fan_out_edges"), st.tuples(nodes(), either(st.lists(nodes(), max_size=3))),
              kwargs(selection=selections)),
    st.tuples(st.just("add_fan_in_edges"), st.tuples(either(st.lists(nodes(), max_size=3)), nodes()), st.just({})),
    st.tuples(st.just("add_chain"), st.tuples(either(st.lists(nodes(), max_size=3))), st.just({})),
    st.tuples(st.just("add_executor"), st.tuples(nodes()), st.just({})),
    st.tuples(st.just("set_start_executor"), st.tuples(nodes()), st.just({})),
    st.tuples(st.just("with_checkpointing"), st.tuples(either(st.builds(InMemoryCheckpointStorage))), st.just({})),
)  # fmt: skip


@examples(80)
@given(
    kwargs(
        start_executor=nodes(),
        name=either(names),
        description=junk,
        max_supersteps=either(st.integers(-1, 5)),
        output_from=either(st.lists(nodes(), max_size=2)),
        checkpoint_storage=either(st.builds(InMemoryCheckpointStorage)),
    ),
    st.lists(operations, max_size=5),
    st.lists(either(text), min_size=1, max_size=2),
)
def test_a_builder_given_junk_builds_or_refuses_and_what_it_builds_runs_or_fails_by_agent_nb(
    kw: dict[str, Any], ops: list[tuple[str, tuple[Any, ...], dict[str, Any]]], inputs: list[Any]
) -> None:
    builder = attempt("WorkflowBuilder", lambda: WorkflowBuilder(**kw))
    if builder is None:
        return
    for op, args, options in ops:
        options = {k: v for k, v in options.items() if k in ("condition", "label", "selection")}
        call = getattr(builder, op)
        if (
            attempt(f"WorkflowBuilder.{op}", lambda call=call, args=args, options=options: call(*args, **options))
            is None
        ):
            return
    workflow = attempt("WorkflowBuilder.build", builder.build)
    if workflow is None:
        return
    attempt("Workflow.run", lambda: run(workflow.run(*inputs)))


@examples(60)
@given(
    st.lists(either(text), max_size=2),
    kwargs(
        client_kwargs=either(st.just({"*": {"temperature": 0}})),
        function_invocation_kwargs=junk,
        max_supersteps=either(st.integers(-1, 5)),
        state=either(st.dictionaries(text, text)),
        responses=either(st.just({"nope": 1})),
        checkpoint_id=either(st.sampled_from(["abc", "../x", ""])),
        checkpoint_storage=either(st.builds(InMemoryCheckpointStorage)),
        stream=st.booleans(),
    ),
)
def test_a_run_given_junk_arguments_runs_or_refuses_by_agent_nb(inputs: list[Any], kw: dict[str, Any]) -> None:
    stream = kw.pop("stream", False)
    a, b = AgentExecutor(_mirror()), AgentExecutor(ChatAgent(EchoChatClient(), name="b"))
    workflow = WorkflowBuilder(start_executor=a).add_edge(a, b).build()

    async def go() -> Any:
        if not stream:
            return await workflow.run(*inputs, **kw)
        async with workflow.run(*inputs, stream=True, **kw) as events:
            return [e async for e in events]

    attempt("Workflow.run arguments", lambda: run(go()))


# -- the raw errors found, one minimal reproduction each -------------------------------------------


@pytest.mark.parametrize("found", FOUND, ids=[f.id for f in FOUND])
def test_a_call_that_once_raised_raw_now_raises_an_agent_nb_error(found: Found) -> None:
    with pytest.raises(AgentNbError):
        found.repro()
