"""``GroupChatBuilder``: participants take turns on one shared conversation, a manager picks who speaks.

```
          ┌──> writer ──┐
manager <─┼──> critic ──┤   one round: the manager hands the conversation so far to the
          └──> editor ──┘   speaker it picks; the speaker's reply joins the conversation
```

Each round the chosen participant is handed the whole shared conversation and reads it through
its own context mode (``full``, ``last_agent``: the last speaker's words, ``custom``: what its
filter keeps), so every participant sees a different slice of one conversation. The manager
records the order of speakers and why the chat ended in its state (its column in the run view).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..agents import SupportsAgentRun
from ..agents.requests import ModelRequest, recorder, recording
from ..clients.base import provider_of
from ..conversation import EMPTY, Conversation
from ..errors import ArgumentError, UsageError, bad_argument, did_you_mean
from ..messages import Message
from .agent_executor import AgentExecutorResponse
from .builder import WorkflowBuilder
from .executor import WorkflowContext, handler
from .handed import ConversationSoFar, TakesTheInput, conversation_so_far
from .orchestrations import Answering, agent_participants, as_agent_executors, free_id
from .workflow import Workflow

if TYPE_CHECKING:
    from ..clients import ChatClient
    from ..messages import ChatResponse
    from .checkpoints import CheckpointStorage

__all__ = ["GroupChatBuilder", "ModelManager", "Transcript", "round_robin", "said"]

Picker = Callable[..., Any]
"""``(conversation, participants, round) -> name | None`` (sync or async); ``None`` ends the chat."""


class Transcript(tuple[Message, ...]):
    """The shared conversation at the end of a group chat; its ``text`` is the last word said."""

    __slots__ = ()

    @property
    def text(self) -> str:
        return self[-1].text if self else ""

    def describe(self) -> str:
        return f"transcript of {len(self)} messages"


def round_robin(conversation: Sequence[Message], participants: Sequence[str], round: int) -> str:
    """Each participant in turn, in the order given."""
    return participants[(round - 1) % len(participants)]


def said(word: str) -> Callable[[Sequence[Message]], bool]:
    """A termination rule: the chat ends once a participant's reply contains ``word``."""

    def ends(conversation: Sequence[Message]) -> bool:
        return bool(conversation) and conversation[-1].role == "assistant" and word in conversation[-1].text

    ends.__name__ = f"said({word!r})"
    return ends


class ModelManager:
    """Picks the next speaker with a model: it is shown the participants and the conversation, and names one.

    ``client`` is any chat client (a ``RoutingChatClient`` too, with ``session=`` for its route),
    so the manager can be recorded and replayed like any other model. Its reply must name a
    participant (in any case), or say ``done`` to end the chat. Each request it sends is kept in
    the manager's snapshot as an agent's are (``model_requests``): the run view shows it, and
    ``who_has`` knows what the manager's model was given.
    """

    def __init__(
        self, client: ChatClient, *, instructions: str | None = None, session: Any = None, name: str = "manager"
    ) -> None:
        self.client, self.instructions, self.session, self.__name__ = client, instructions, session, name

    async def __call__(self, conversation: Sequence[Message], participants: Sequence[str], round: int) -> str | None:
        prompt = "\n".join(
            [
                self.instructions or "You run a group chat and choose who speaks next.",
                f"Participants: {', '.join(participants)}.",
                "Reply with the name of the participant who should speak next, or with done to end the chat.",
            ]
        )
        kwargs = {"session": self.session} if self.session is not None else {}
        request = [Message("system", prompt), *conversation]
        at = time.time()
        try:
            reply = await self.client.get_response(request, **kwargs)
        except BaseException as exc:
            self._sent(request, len(conversation), at, None, exc)
            raise
        self._sent(request, len(conversation), at, reply, None)
        text = reply.text.strip()
        word = text.strip(" .!\"'`*").lower()
        if word == "done":
            return None
        for name in participants:
            if word == name.lower():
                return name
        named = [p for p in participants if p.lower() in text.lower()]
        if len(named) == 1:
            return named[0]
        raise UsageError(
            f"the group chat's manager model answered {text[:80]!r}, which names no single participant "
            f"({', '.join(participants)}) and is not 'done'{did_you_mean(word, participants)}; give it "
            "instructions that make it answer with one name"
        )

    def _sent(
        self, request: list[Message], given: int, at: float, reply: ChatResponse | None, error: BaseException | None
    ) -> None:
        """Keep the request as it was sent, and who answered it (or how it failed), when someone records."""
        requests = recorder()
        if requests is None:
            return
        usage = reply.usage if reply is not None else None
        route = reply.route if reply is not None else None
        requests.append(
            ModelRequest(
                self.__name__,
                tuple(request),
                (1, 0, given),  # its instructions, then the conversation so far
                route=route,
                model=reply.model if reply is not None else None,
                error=None if error is None else f"{type(error).__name__}: {error}",
                repairs=reply.repairs if reply is not None else (),
                sent_at=at,
                duration=time.time() - at,
                input_tokens=usage.input_tokens if usage is not None else None,
                output_tokens=usage.output_tokens if usage is not None else None,
                finish_reason=reply.finish_reason if reply is not None else None,
                provider=provider_of(self.client, route),
            )
        )


class Manager(TakesTheInput):
    """Keeps the shared conversation, picks each round's speaker, and ends the chat."""

    kind = "manager"

    def __init__(
        self,
        id: str,
        participants: Sequence[str],
        pick: Picker,
        max_rounds: int,
        termination: Callable[..., Any] | None,
    ) -> None:
        super().__init__(id)
        self.participants = tuple(participants)
        self.pick, self.max_rounds, self.termination = pick, max_rounds, termination
        self._conversation: Conversation = EMPTY
        self._speakers: tuple[str, ...] = ()
        """Who spoke in this run's rounds, in order (their number is the rounds so far)."""

    @handler
    async def on_reply(
        self, answer: AgentExecutorResponse, ctx: WorkflowContext[ConversationSoFar, Transcript]
    ) -> None:
        self._conversation = self._conversation.extend(answer.agent_response.messages, validate=False)
        await self._next(ctx)

    async def take(self, messages: list[Message], ctx: WorkflowContext[Any, Any]) -> None:
        """A new input joins the conversation so far (a chat goes on across runs); the rounds count anew."""
        self._conversation = self._conversation.extend(messages)
        self._speakers = ()
        await self._next(ctx)

    async def _next(self, ctx: WorkflowContext[Any, Any]) -> None:
        conversation, rounds = self._conversation, len(self._speakers)
        ended = None
        if rounds >= self.max_rounds:
            ended = f"max_rounds={self.max_rounds} reached"
        elif self.termination is not None and rounds and await _maybe(self.termination(conversation)):
            ended = f"{getattr(self.termination, '__name__', 'termination')} was met"
        speaker = None
        if ended is None:
            with recording() as sent:  # a manager that asks a model: its requests, as an agent's
                try:
                    speaker = await _maybe(self.pick(conversation, self.participants, rounds + 1))  # a view: no copy
                finally:
                    if sent:
                        ctx.record_context(model_requests=tuple(sent))
            if speaker is None:
                ended = "the manager ended it"
            elif speaker not in self.participants:
                raise UsageError(
                    f"the group chat's manager picked {speaker!r}, who is not a participant "
                    f"({', '.join(self.participants)}){did_you_mean(str(speaker), self.participants)}"
                )
        ctx.record_context(state={"speakers": list(self._speakers), "next": speaker or f"nobody: {ended}"})
        if speaker is None:
            await ctx.yield_output(Transcript(conversation))
            return
        self._speakers += (speaker,)
        await ctx.send_message(conversation_so_far(conversation, self.id), target_id=speaker)

    def snapshot_state(self) -> dict[str, Any]:
        return {"conversation": self._conversation, "speakers": self._speakers}

    def restore_state(self, state: dict[str, Any]) -> None:
        self._conversation, self._speakers = state["conversation"], tuple(state["speakers"])

    def reset(self) -> None:
        """Forget the conversation: the next run starts a new chat."""
        self._conversation, self._speakers = EMPTY, ()


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class GroupChatBuilder:
    """Participants speak in turn on one shared conversation; a manager picks each round's speaker.

    ``manager``: ``round_robin`` (the default: each in the order given), a function
    ``(conversation, participants, round) -> name | None`` (sync or async; ``None`` ends the chat),
    or a ``ModelManager(client)`` that asks a model. The chat ends after ``max_rounds`` replies,
    when ``termination(conversation)`` is true after a reply (``said("DONE")``: a participant says
    it is done), or when the manager picks nobody. The output is the ``Transcript``: the shared
    conversation, its ``text`` the last word said; each reply is also an ``intermediate`` event.

    Participants are agents (wrapped in ``full`` executors; a workflow used as an agent runs nested,
    in a ``WorkflowExecutor``) or ``AgentExecutor`` / ``WorkflowExecutor`` objects, used as they are:
    each reads the shared conversation through its own mode. They are handed the whole
    conversation each round, so an agent that keeps a history of its own would see it twice: one
    with a history provider is refused. A next run's input joins the conversation so far
    (``workflow.reset()`` starts a new chat).
    """

    def __init__(
        self,
        participants: Sequence[SupportsAgentRun | Answering],
        *,
        manager: Picker = round_robin,
        max_rounds: int = 10,
        termination: Callable[..., Any] | None = None,
        name: str = "group_chat",
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        where = f"GroupChatBuilder {name!r}"
        self.participants = agent_participants(where, participants)
        if not callable(manager):
            raise bad_argument(
                where,
                "manager",
                manager,
                "give round_robin, a function (conversation, participants, round), or a ModelManager",
            )
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
            raise bad_argument(where, "max_rounds", max_rounds, "give an int >= 1")
        if termination is not None and not callable(termination):
            raise bad_argument(
                where, "termination", termination, "give a function of the conversation, or said('DONE')"
            )
        self.manager, self.max_rounds = manager, max_rounds
        self.termination, self.name, self.checkpoint_storage = termination, name, checkpoint_storage
        self._where = where

    def build(self) -> Workflow:
        nodes = as_agent_executors(self._where, self.participants)
        ids = [n.id for n in nodes]
        for node in nodes:
            if getattr(getattr(node, "agent", None), "history", None) is not None:
                raise ArgumentError(
                    f"{self._where}: participant {node.id!r} keeps a history of its own; in a group chat every "
                    "participant is handed the shared conversation each round, so it would see it twice. Give "
                    "its agent no history provider (the manager keeps the conversation)",
                    argument="participants",
                )
        manager = Manager(free_id("manager", nodes), ids, self.manager, self.max_rounds, self.termination)
        builder = WorkflowBuilder(
            start_executor=manager,
            name=self.name,
            output_from=[manager],
            checkpoint_storage=self.checkpoint_storage,
            max_supersteps=2 * self.max_rounds + 2,
        )
        for node in nodes:
            builder.add_edge(manager, node).add_edge(node, manager)
        return builder.build()
