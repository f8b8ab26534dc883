"""GroupChatBuilder: participants take turns on one shared conversation, each through its own context mode."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from doubles import RecordingAgent

from agent_nb import (
    AgentExecutor,
    ChatAgent,
    FunctionChatClient,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    RoutingChatClient,
    ScriptedChatClient,
    tool,
)
from agent_nb.errors import ArgumentError, StepFailed
from agent_nb.messages import FunctionCallContent
from agent_nb.workflow import FileCheckpointStorage, GroupChatBuilder, ModelManager, said
from agent_nb.workflow.filters import user_messages


def team() -> list[RecordingAgent]:
    return [RecordingAgent("writer"), RecordingAgent("critic"), RecordingAgent("editor")]


async def test_round_robin_gives_each_participant_a_turn_until_max_rounds_and_outputs_the_transcript() -> None:
    writer, critic, editor = team()
    result = await GroupChatBuilder([writer, critic, editor], max_rounds=4).build().run("Write a haiku")
    assert [len(a.calls) for a in (writer, critic, editor)] == [2, 1, 1]
    (transcript,) = result.get_outputs()
    assert [(m.author_name, m.text) for m in transcript] == [
        (None, "Write a haiku"), ("writer", "writer saw 1"), ("critic", "critic saw 2"),
        ("editor", "editor saw 3"), ("writer", "writer saw 4"),
    ]  # fmt: skip
    assert result.text == "writer saw 4"  # the last word said
    assert [e.executor_id for e in result.events if e.type == "intermediate"] == [
        "writer",
        "critic",
        "editor",
        "writer",
    ]
    last = result.trace.last("manager").state
    assert last == {"speakers": ["writer", "critic", "editor", "writer"], "next": "nobody: max_rounds=4 reached"}


async def test_each_participant_reads_the_shared_conversation_through_its_own_mode() -> None:
    writer, critic, editor = team()
    recent = AgentExecutor(critic, context_mode="last_agent")
    result = await GroupChatBuilder([writer, recent, editor], max_rounds=3).build().run("Write a haiku")
    assert [m.text for m in critic.seen[0]] == ["writer saw 1"]  # the last speaker's words only
    assert [m.text for m in editor.seen[0]] == ["Write a haiku", "writer saw 1", "critic saw 1"]
    assert [m.role for m in editor.seen[0]] == ["user", "user", "user"]  # the others' replies, handed over
    rounds = [(s.executor_id, len(s.given)) for s in result.trace if s.kind == "agent"]
    assert rounds == [("writer", 1), ("critic", 1), ("editor", 3)]  # each round's active context, in the trace


async def test_a_participant_with_a_filter_of_its_own_reads_each_round_what_the_filter_keeps() -> None:
    writer, critic, editor = team()

    def writer_and_user(messages: list[Message]) -> list[Message]:
        return [m for m in messages if m.author_name in (None, "writer")]

    chat = GroupChatBuilder(
        [
            writer,
            AgentExecutor(critic, context_mode="custom", context_filter=user_messages),
            AgentExecutor(editor, context_filter=writer_and_user),
        ],
        max_rounds=5,
    ).build()
    result = await chat.run("Write a haiku")
    assert [[m.text for m in seen] for seen in critic.seen] == [["Write a haiku"], ["Write a haiku"]]
    assert [m.text for m in editor.seen[0]] == ["Write a haiku", "writer saw 1"]  # not the critic's words
    rounds = [(s.executor_id, s.mode, len(s.given), len(s.dropped)) for s in result.trace if s.kind == "agent"]
    assert rounds == [
        ("writer", "full", 1, 0),
        ("critic", "custom(user_messages)", 1, 1),
        ("editor", "custom(writer_and_user)", 2, 1),
        ("writer", "full", 4, 0),
        ("critic", "custom(user_messages)", 1, 4),
    ]
    dropped = result.trace.for_executor("editor")[0].dropped
    assert [(m.author_name, m.text) for m in dropped] == [("critic", "critic saw 1")]
    assert "editor<br/><small>agent · custom(writer_and_user)</small>" in chat.to_mermaid()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_manager_function_picks_from_the_conversation_and_ends_the_chat_with_none(kind: str) -> None:
    picked: list[tuple[int, int]] = []

    def by_conversation(conversation: Sequence[Message], participants: Sequence[str], round: int) -> str | None:
        picked.append((round, len(conversation)))
        return None if round == 3 else ("editor" if "writer" in conversation[-1].text else "writer")

    async def later(conversation: Sequence[Message], participants: Sequence[str], round: int) -> str | None:
        return by_conversation(conversation, participants, round)

    manager = by_conversation if kind == "sync" else later
    result = await GroupChatBuilder(team(), manager=manager).build().run("Write a haiku")
    assert [m.author_name for m in result.get_outputs()[0]] == [None, "writer", "editor"]
    assert picked == [(1, 1), (2, 2), (3, 3)]
    assert result.trace.last("manager").state["next"] == "nobody: the manager ended it"


async def test_a_manager_that_picks_a_stranger_fails_the_run_and_keeps_nothing() -> None:
    wf = GroupChatBuilder(team(), manager=lambda conversation, names, round: "ediotr").build()
    with pytest.raises(StepFailed, match=r"picked 'ediotr', who is not a participant .*did you mean 'editor'"):
        await wf.run("Write a haiku")
    assert wf.executors["manager"].snapshot_state()["conversation"] == ()  # the chat did not start


async def test_termination_ends_the_chat_once_a_participant_says_it_is_done() -> None:
    replies = iter(["a draft", "DONE: it is good", "never said"])
    critic = ChatAgent(FunctionChatClient(lambda messages, options: next(replies)), name="critic")
    result = await GroupChatBuilder([critic], termination=said("DONE")).build().run("Write a haiku")
    assert [m.text for m in result.get_outputs()[0]][1:] == ["a draft", "DONE: it is good"]
    assert result.trace.last("manager").state["next"] == "nobody: said('DONE') was met"


async def test_a_model_manager_is_told_the_participants_and_the_conversation_and_names_the_next_speaker() -> None:
    asked: list[list[Message]] = []
    answers = iter(["critic", "Editor.", "done"])

    def model(messages: list[Message], options: Any) -> str:
        asked.append(messages)
        return next(answers)

    result = await GroupChatBuilder(team(), manager=ModelManager(FunctionChatClient(model))).build().run("q")
    assert [m.author_name for m in result.get_outputs()[0]] == [None, "critic", "editor"]
    assert "Participants: writer, critic, editor." in asked[0][0].text
    assert [m.text for m in asked[1][1:]] == ["q", "critic saw 1"]  # the conversation so far


async def test_a_model_managers_requests_are_in_its_snapshots_as_an_agents_are() -> None:
    answers = iter(["critic", "done"])
    client = RoutingChatClient({"small": FunctionChatClient(lambda messages, options: next(answers))})
    result = await GroupChatBuilder(team(), manager=ModelManager(client)).build().run("Write a haiku")
    first, second = [s for s in result.trace if s.executor_id == "manager"]
    (request,) = first.model_requests
    assert request.agent == "manager" and request.route == "small" and request.error is None
    assert request.origins == ("instructions", "input")
    assert "Participants: writer, critic, editor." in request.messages[0].text
    (asked,) = second.model_requests
    assert [m.text for m in asked.of("handed over")] == ["critic saw 1"]  # the conversation, as its model got it
    assert [m.text for m in second.context()] == [asked.messages[0].text, "Write a haiku", "critic saw 1"]
    table = result.trace.who_has("critic saw 1")
    assert table["manager"].in_context and table["writer"].in_context == ()  # the writer never spoke
    html = result._repr_mimebundle_()["text/html"]
    assert html.count("sent to the model") == 2  # the manager's two requests, in its cards


async def test_a_model_manager_matches_a_speakers_name_whatever_its_case() -> None:
    ann, joanna = RecordingAgent("Ann"), RecordingAgent("Joanna")
    answers = iter(["JOANNA", "Next: ANN.", "DONE"])  # "ann" is in "joanna": only the whole name tells them apart
    manager = ModelManager(FunctionChatClient(lambda messages, options: next(answers)))
    result = await GroupChatBuilder([ann, joanna], manager=manager).build().run("q")
    assert result.trace.last("manager").state == {"speakers": ["Joanna", "Ann"], "next": "nobody: the manager ended it"}


async def test_a_model_manager_that_names_nobody_says_what_it_answered() -> None:
    manager = ModelManager(FunctionChatClient(lambda messages, options: "Let us hear from the poet"))
    with pytest.raises(StepFailed, match=r"manager model answered 'Let us hear from the poet', which names no single"):
        await GroupChatBuilder(team(), manager=manager).build().run("q")


async def test_the_next_run_goes_on_with_the_conversation_and_reset_starts_a_new_chat() -> None:
    writer, critic, editor = team()
    wf = GroupChatBuilder([writer, critic, editor], max_rounds=2).build()
    await wf.run("Write a haiku")
    second = await wf.run("Shorter, please")
    assert [m.text for m in second.get_outputs()[0]][-3:] == ["Shorter, please", "writer saw 4", "critic saw 5"]
    wf.reset()
    third = await wf.run("A limerick")
    assert len(third.get_outputs()[0]) == 3


@tool(requires_approval=True)
def publish(title: str) -> str:
    """Publish a text."""
    return f"published {title}"


def with_publisher(storage: Any = None, *, answered: bool = False) -> Any:
    call = FunctionCallContent(call_id="c1", name="publish", arguments={"title": "Rain"})
    script = ["Published."] if answered else [Message("assistant", [call]), "Published."]
    editor = ChatAgent(ScriptedChatClient(script), name="editor", tools=[publish])
    writer = ChatAgent(MirrorChatClient(), name="writer")
    return GroupChatBuilder([writer, editor], max_rounds=3, checkpoint_storage=storage).build()


async def test_a_participant_waiting_for_approval_pauses_the_chat_and_the_answer_lets_it_go_on() -> None:
    wf = with_publisher()
    first = await wf.run("Write and publish a haiku")
    (request,) = first.pending_requests
    assert first.status == "waiting" and request.executor_id == "editor"
    done = await wf.run(responses={request.request_id: True})
    transcript = done.get_outputs()[0]
    assert [m.author_name for m in transcript if m.role == "assistant"][-2:] == ["editor", "writer"]
    assert done.trace.last("manager").state["speakers"] == ["writer", "editor", "writer"]


async def test_a_waiting_group_chat_resumes_from_its_checkpoint_in_a_new_workflow(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    first = await with_publisher(storage).run("Write and publish a haiku")
    (request,) = first.pending_requests
    again = with_publisher(storage, answered=True)
    done = await again.run(
        checkpoint_id=first.checkpoint_id, checkpoint_storage=storage, responses={request.request_id: True}
    )
    assert done.status == "completed"
    assert done.trace.last("manager").state["speakers"] == ["writer", "editor", "writer"]
    assert "Published." in [m.text for m in done.get_outputs()[0]]


async def test_streaming_shows_each_reply_as_it_comes_and_the_transcript_last() -> None:
    wf = GroupChatBuilder(team(), max_rounds=2).build()
    events = [e async for e in wf.run("q", stream=True)]
    assert [e.executor_id for e in events if e.type == "output"] == ["manager"]
    assert {e.executor_id for e in events if e.type == "intermediate"} == {"writer", "critic"}


def test_bad_settings_are_refused_with_what_to_do() -> None:
    with pytest.raises(ArgumentError, match=r"participants.*give a non-empty list"):
        GroupChatBuilder([])
    with pytest.raises(ArgumentError, match="max_rounds"):
        GroupChatBuilder(team(), max_rounds=0)
    with pytest.raises(ArgumentError, match="manager"):
        GroupChatBuilder(team(), manager="round robin")
    with pytest.raises(ArgumentError, match="two participants have the id 'writer'"):
        GroupChatBuilder([RecordingAgent("writer"), RecordingAgent("writer")]).build()
    remembering = ChatAgent(MirrorChatClient(), name="critic", history=InMemoryHistoryProvider())
    with pytest.raises(ArgumentError, match="participant 'critic' keeps a history of its own"):
        GroupChatBuilder([RecordingAgent("writer"), remembering]).build()


def support_then_writer(approval: bool) -> Any:
    """A participant whose tool needs approval (or not), then one that reads what it did."""

    @tool(requires_approval=approval)
    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    def model(messages: list[Message], options: Any) -> Any:
        last = messages[-1].contents[-1]
        if last.type == "function_result":
            return f"Done: {last.result}"
        return Message(
            "assistant", ["Refunding.", FunctionCallContent(call_id="c1", name="refund", arguments={"order": "A7"})]
        )

    support = ChatAgent(FunctionChatClient(model), name="support", tools=[refund])
    return GroupChatBuilder([support, ChatAgent(MirrorChatClient(), name="writer")], max_rounds=2).build()


async def test_after_an_approval_the_transcript_holds_the_call_its_result_and_the_answer_as_without_one() -> None:
    plain = await support_then_writer(False).run("Refund A7")
    wf = support_then_writer(True)
    first = await wf.run("Refund A7")
    (request,) = first.pending_requests
    approved = await wf.run(responses={request.request_id: True})

    def shape(result: Any) -> list[tuple[str, str | None, list[Any]]]:
        return [(m.role, m.author_name, list(m.contents)) for m in result.get_outputs()[0]]

    assert shape(approved) == shape(plain)
    assert [(m.role, [c.type for c in m.contents]) for m in plain.get_outputs()[0]] == [
        ("user", ["text"]),
        ("assistant", ["text", "function_call"]),  # the call comes before its result
        ("tool", ["function_result"]),
        ("assistant", ["text"]),
        ("assistant", ["text"]),
    ]
    assert approved.text == plain.text  # the writer was handed the same conversation
    (answer,) = [e.data for e in approved.events if e.type == "intermediate" and e.executor_id == "support"]
    assert [m.role for m in answer.messages] == ["assistant", "tool", "assistant"]  # the whole turn, as its answer
    assert [m.role for m in approved.trace.last("support").response.messages] == ["tool", "assistant"]  # to the
    # requests of this invocation (after the approval), as the trace records each invocation
