"""``ConcurrentBuilder``: the same input to every participant at once, their answers gathered.

```
          ┌─> analyst ──┐
dispatch ─┼─> critic  ──┼─> aggregate        (or ─> summarizer, an aggregator agent)
          └─> poet    ──┘
```

``dispatch`` hands the run's input to every participant (fan-out) as the conversation so far, so
that each participant's context mode applies to it; the fan-in waits for every answer, then the
output is made: the answers, what an aggregator function makes of them, or the answer of an
aggregator agent that reads them through its own context mode.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

from ..agents import SupportsAgentRun
from ..errors import ArgumentError, bad_argument
from ..messages import AgentResponse, Message
from .agent_executor import AgentExecutorResponse
from .builder import WorkflowBuilder
from .executor import Executor, WorkflowContext, handler
from .handed import TakesTheInput, conversation_so_far
from .nested import node_for
from .orchestrations import ANSWERING, Answering, agent_participants, as_agent_executors, free_id
from .workflow import Workflow

if TYPE_CHECKING:
    from .checkpoints import CheckpointStorage

__all__ = ["Answers", "ConcurrentBuilder"]

Participant = Union[SupportsAgentRun, Answering]  # noqa: UP007
Aggregator = Union[Callable[[list[AgentResponse]], Any], SupportsAgentRun, Answering, None]  # noqa: UP007


class Answers(tuple[AgentResponse, ...]):
    """The participants' answers, in the order they were given; ``text`` puts each after its author."""

    __slots__ = ()

    @property
    def text(self) -> str:
        return "\n\n".join(f"{_author(a)}: {a.text}" for a in self)

    def describe(self) -> str:
        return f"{len(self)} answers ({', '.join(_author(a) for a in self)})"

    def __repr__(self) -> str:
        return f"Answers({', '.join(f'{_author(a)}={a.text[:30]!r}' for a in self)})"


def _author(answer: AgentResponse) -> str:
    return next((m.author_name for m in answer.messages if m.author_name), "?")


class Dispatch(TakesTheInput):
    """Hands the run's input to every participant at once (one object, shared: nothing is copied)."""

    kind = "dispatch"

    async def take(self, messages: list[Message], ctx: WorkflowContext[Any, Any]) -> None:
        if not messages:
            raise ValueError(
                f"executor {self.id!r} was given an empty list: there is nothing to hand out; send a question"
            )
        ctx._send(conversation_so_far(messages, self.id))


class Aggregate(Executor):
    """Once every participant has answered: their answers as the output, or what the aggregator makes of them."""

    kind = "aggregate"

    def __init__(self, id: str, merge: Callable[[list[AgentResponse]], Any] | None) -> None:
        super().__init__(id)
        self.merge = merge

    @handler
    async def gather(self, answered: list[AgentExecutorResponse], ctx: WorkflowContext[Any, Any]) -> None:
        answers = [a.agent_response for a in answered]
        if self.merge is None:
            ctx._output(Answers(answers))
            return
        merged = self.merge(answers)
        if inspect.isawaitable(merged):
            merged = await merged
        await ctx.yield_output(merged)


class ConcurrentBuilder:
    """The same input to every participant, at the same time; their answers gathered into one output.

    ``participants``: agents (each wrapped in a ``full`` executor; a workflow used as an agent,
    ``workflow.as_agent()``, runs nested in a ``WorkflowExecutor``) or ``AgentExecutor`` /
    ``WorkflowExecutor`` objects, used as they are, with their own context mode (``last_agent``
    reads only the input's last speaker's words, ``custom`` what its filter keeps).

    ``aggregator``: ``None``, and the output is ``Answers`` (the participants' ``AgentResponse``
    in the order given; its ``text`` puts each after its author); a function of that list of
    answers (sync or async), and the output is what it returns; or an agent (or
    ``AgentExecutor``), which receives every participant's conversation and answer through its
    context mode (``full``: the input once, then each answer, handed over as ``user`` messages
    from their authors; ``last_agent``: the answers only), and whose answer is the output.

    The participants' answers are ``intermediate`` events and stay in the trace. A participant
    that waits for an approval holds the aggregate until it is answered, in this process or,
    with ``checkpoint_storage``, in another one.
    """

    def __init__(
        self,
        participants: Sequence[Participant],
        *,
        aggregator: Aggregator = None,
        name: str = "concurrent",
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        where = f"ConcurrentBuilder {name!r}"
        self.participants = agent_participants(where, participants)
        self.aggregator = aggregator
        self.name = name
        self.checkpoint_storage = checkpoint_storage
        self._where = where

    def build(self) -> Workflow:
        nodes = as_agent_executors(self._where, self.participants)
        ids = [n.id for n in nodes]
        agent, merge = self._aggregator(ids)
        last: Executor = agent if agent is not None else Aggregate(free_id("aggregate", nodes), merge)
        dispatch = Dispatch(free_id("dispatch", [*nodes, last]))
        builder = WorkflowBuilder(
            start_executor=dispatch, name=self.name, output_from=[last], checkpoint_storage=self.checkpoint_storage
        )
        return builder.add_fan_out_edges(dispatch, nodes).add_fan_in_edges(nodes, last).build()

    def _aggregator(self, ids: list[str]) -> tuple[Answering | None, Callable[..., Any] | None]:
        given = self.aggregator
        if given is None:
            return None, None
        if isinstance(given, Executor) and not isinstance(given, ANSWERING):
            raise bad_argument(
                self._where,
                "aggregator",
                given,
                "give a function of the answers, an agent, or an AgentExecutor (another executor cannot be "
                "told the answers)",
            )
        if isinstance(given, (*ANSWERING, SupportsAgentRun)):
            node = given if isinstance(given, ANSWERING) else node_for(given)
            if node.id in ids:
                raise ArgumentError(
                    f"{self._where}: the aggregator's id {node.id!r} is also a participant's; give it its own name",
                    argument="aggregator",
                )
            return node, None
        if callable(given):
            return None, given
        raise bad_argument(self._where, "aggregator", given, "give None, a function of the answers, or an agent")
