"""Topics: a designed conversation of nodes, with variables that stay inside the topic.

A topic runs its nodes in order. Message, question and card nodes write to the user's
chat directly; a question or a card ends the turn and waits for the user (the topic holds
the conversation). Variables stay in the topic: only the declared ``outputs`` return
explicitly. The plain text of the exchange returns implicitly — message and question
texts, card content, typed replies; never a card's buttons or the user's click on one —
and it does not say whether the user saw it.

```python
hours = Topic(
    "opening_hours",
    [MessageNode("We are open 9:00-17:00, Monday to Friday."),
     SetVariable("responded", True)],
    description="Opening hours of the shop",
    outputs={"responded": "whether the topic answered the user"},
)
```
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Union

from ..contents import UserInputRequestContent
from ..errors import ArgumentError
from ..messages import Message
from ..workflow import Executor, WorkflowContext, handler
from .calls import REPLY, ComponentCall, ComponentResult, click_of, reply_text
from .components import Component, Input
from .matching import best_passage, content_words
from .state import Desk

__all__ = [
    "CardNode",
    "GenerativeAnswers",
    "MessageNode",
    "QuestionNode",
    "SetVariable",
    "Topic",
]


_PLACEHOLDER = re.compile(r"\{(\w+)(?::([^{}]*))?\}")


def fill(template: str, variables: Mapping[str, Any]) -> str:
    """``template`` with ``{name}`` (or ``{name:spec}``) replaced by the variable's value.

    Everything else stays as written: unknown names, and braces that are not a placeholder
    (JSON, code), so a message can show them.
    """

    def value(m: re.Match[str]) -> str:
        name, spec = m.group(1), m.group(2)
        if name not in variables:
            return m.group(0)
        try:
            return format(variables[name], spec or "")
        except (TypeError, ValueError):
            return m.group(0)  # a spec the value does not take: shown as written

    return _PLACEHOLDER.sub(value, template)


@dataclass(frozen=True, slots=True)
class MessageNode:
    """Writes ``text`` (``{variable}`` placeholders filled) to the chat."""

    text: str


@dataclass(frozen=True, slots=True)
class QuestionNode:
    """Asks ``text`` and waits; the user's typed reply goes into ``variable``."""

    text: str
    variable: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CardNode:
    """Asks with an adaptive card: content ``text`` and action buttons; the clicked action goes into ``variable``."""

    text: str
    actions: tuple[str, ...]
    variable: str

    def __post_init__(self) -> None:
        if not self.actions:
            raise ArgumentError(f"the card {self.text!r} needs at least one action button", argument="actions")


@dataclass(frozen=True, slots=True)
class SetVariable:
    """Sets ``name`` to ``value``: a value, a ``"{template}"`` string, or a function of the variables."""

    name: str
    value: Any


class GenerativeAnswers(Component):
    """A generative-answers node inside a topic: answers its input plus its agent's context over sources.

    With ``variable=None`` it writes the answer to the chat directly; otherwise the answer
    goes into that topic variable. Either way it returns nothing explicitly to the
    orchestrator — what it showed may be repeated.
    """

    kind = "generative answers"

    def __init__(
        self, id: str, sources: Mapping[str, str], *, input: str = "{request}", variable: str | None = None
    ) -> None:
        if not sources:
            raise ArgumentError(f"generative answers {id!r} needs at least one source", argument="sources")
        super().__init__(id, description=f"generative answers over {', '.join(sources)}")
        self.sources: Mapping[str, str] = MappingProxyType(dict(sources))
        self.input = input
        self.variable = variable

    async def answer(self, call: ComponentCall, desk: Desk) -> ComponentResult:
        query = str(call.inputs.get("input", call.request.text))
        context = call.context or call.conversation  # its agent's whole active context, as its topic was given it
        found = best_passage(query, dict(self.sources))
        text = found[1] if found else "I could not find that in my sources."
        proposed: tuple[Message, ...] = ()
        wrote: tuple[str, ...] = ()
        if self.variable is None:
            line = Message("assistant", [text], author_name=self.id, message_id=desk.new_id("m"))
            if desk.centralized:
                proposed = (line,)
            else:
                desk.write(line)
                wrote = (line.message_id or "",)
        desk.record(
            given=(*context, Message("user", [query], author_name=call.caller)),
            state={"input": query, "found": f"{found[0]}: {found[1]}" if found else "nothing"},
        )
        return self.result(call, outputs={"answer": text}, proposed=proposed, wrote=wrote)


Node = Union[MessageNode, QuestionNode, CardNode, SetVariable, GenerativeAnswers]  # noqa: UP007


@dataclass(frozen=True, slots=True)
class TopicRun:
    """A topic between two invocations: where it is, its variables, what it owes its caller."""

    call: ComponentCall
    position: int
    variables: Mapping[str, Any]
    implicit: tuple[str, ...] = ()
    proposed: tuple[Message, ...] = ()
    wrote: tuple[str, ...] = ()
    waiting: Message | None = None


def _sets(node: Node) -> str | None:
    if isinstance(node, (QuestionNode, CardNode)):
        return node.variable
    if isinstance(node, SetVariable):
        return node.name
    if isinstance(node, GenerativeAnswers):
        return node.variable
    return None


class Topic(Component):
    """A topic: nodes run in order; variables stay inside; declared ``outputs`` return explicitly.

    Args:
        id: the topic's name (an identifier).
        nodes: message, question, card, set-variable and generative-answers nodes.
        description: what the orchestrator reads to decide whether to call it.
        triggers: phrases that should start it, added to what a planner matches.
        inputs: values the orchestrator fills before the call; they become variables.
        outputs: variables returned explicitly at the end (name → description). A
            ``responded`` output set to true tells the orchestrator the user was answered.
    """

    kind = "topic"

    def __init__(
        self,
        id: str,
        nodes: Iterable[Node],
        *,
        description: str = "",
        triggers: Iterable[str] = (),
        inputs: Iterable[Input | str] = (),
        outputs: Mapping[str, str] | Iterable[str] = (),
    ) -> None:
        super().__init__(id, description=description, inputs=inputs, outputs=outputs)
        self.nodes: tuple[Node, ...] = tuple(nodes)
        self.triggers = tuple(triggers)
        kinds = (MessageNode, QuestionNode, CardNode, SetVariable, GenerativeAnswers)
        for i, node in enumerate(self.nodes):
            if not isinstance(node, kinds):
                raise ArgumentError(
                    f"topic {id!r}: node {i + 1} is a {type(node).__name__}, not a topic node", argument="nodes"
                )
        settable = {"request"} | {i.name for i in self.inputs} | {v for n in self.nodes if (v := _sets(n))}
        never = [name for name in self.outputs if name not in settable]
        if never:
            raise ArgumentError(
                f"topic {id!r}: output {', '.join(map(repr, never))} is never set; add a node that sets "
                f"the variable (SetVariable, a question or a card), or drop the output",
                argument="outputs",
            )

    def parts(self) -> tuple[Executor, ...]:
        return tuple(n for n in self.nodes if isinstance(n, GenerativeAnswers))

    def keywords(self) -> frozenset[str]:
        return super().keywords() | content_words(" ".join(self.triggers))

    # -- handlers ---------------------------------------------------------------------

    @handler
    async def on_call(self, call: ComponentCall, ctx: WorkflowContext[ComponentResult | ComponentCall]) -> None:
        desk = Desk(ctx, self.id)
        if call.reply is None:
            variables = {"request": call.request.text, **call.inputs}
            run = TopicRun(call, 0, MappingProxyType(variables))
        else:
            run = desk.load()
            if run is None or run.waiting is None:
                raise RuntimeError(f"topic {self.id!r} was handed a reply but it is not waiting on the user")
            node = self.nodes[run.position]
            assert isinstance(node, (QuestionNode, CardNode))
            value = reply_text(call.reply)
            typed = () if click_of(call.reply) is not None else (REPLY + value,)  # a click never reaches context
            run = replace(
                run,
                call=replace(run.call, conversation=call.conversation, context=call.context),  # as they are now
                position=run.position + 1,
                variables=MappingProxyType({**run.variables, node.variable: value}),
                implicit=run.implicit + typed,
                waiting=None,
            )
        await self._go(run, desk, ctx)

    @handler
    async def on_answer(self, result: ComponentResult, ctx: WorkflowContext[ComponentResult | ComponentCall]) -> None:
        desk = Desk(ctx, self.id)
        run: TopicRun = desk.load()
        node = self.nodes[run.position]
        assert isinstance(node, GenerativeAnswers)
        answer = str(result.outputs.get("answer", ""))
        variables = dict(run.variables)
        if node.variable is not None:
            variables[node.variable] = answer
        shown = bool(result.wrote or result.proposed)
        run = replace(
            run,
            position=run.position + 1,
            variables=MappingProxyType(variables),
            implicit=run.implicit + ((answer,) if shown else ()),
            proposed=run.proposed + result.proposed,
            wrote=run.wrote + result.wrote,
        )
        await self._go(run, desk, ctx)

    # -- running the nodes ------------------------------------------------------------

    async def _go(self, run: TopicRun, desk: Desk, ctx: WorkflowContext[Any, Any]) -> None:
        implicit, proposed, wrote = list(run.implicit), list(run.proposed), list(run.wrote)
        variables = dict(run.variables)
        call = run.call

        def show(contents: list[Any]) -> Message:
            line = Message("assistant", contents, author_name=self.id, message_id=desk.new_id("m"))
            if desk.centralized:
                proposed.append(line)
            else:
                desk.write(line)
                wrote.append(line.message_id or "")
            return line

        def keep(position: int, waiting: Message | None = None) -> TopicRun:
            return TopicRun(
                call,
                position,
                MappingProxyType(dict(variables)),
                tuple(implicit),
                tuple(proposed),
                tuple(wrote),
                waiting,
            )

        for i in range(run.position, len(self.nodes)):
            node = self.nodes[i]
            if isinstance(node, MessageNode):
                text = fill(node.text, variables)
                show([text])
                implicit.append(text)
            elif isinstance(node, SetVariable):
                value = node.value
                variables[node.name] = (
                    value(dict(variables))
                    if callable(value)
                    else fill(value, variables)
                    if isinstance(value, str)
                    else value
                )
            elif isinstance(node, (QuestionNode, CardNode)):
                text = fill(node.text, variables)
                options = node.actions if isinstance(node, CardNode) else node.choices
                prompt = show([UserInputRequestContent(request_id=desk.new_id("q"), prompt=text, options=options)])
                implicit.append(text)  # the card's content, never its buttons
                self._record(desk, keep(i, prompt), f"node {i + 1}: waiting for the user")
                desk.save(
                    TopicRun(call, i, MappingProxyType(dict(variables)), waiting=prompt)
                )  # the rest is returned now
                await ctx.send_message(self._result(call, {}, implicit, proposed, wrote, prompt), target_id=call.caller)
                return
            else:  # a generative-answers node: its own executor, with this topic's agent context
                query = fill(node.input, variables)
                ask = ComponentCall(
                    self.id,
                    node.id,
                    desk.new_id("c"),
                    call.turn,
                    call.request,
                    MappingProxyType({"input": query}),
                    call.conversation,
                    context=call.context,
                )
                self._record(desk, keep(i), f"node {i + 1}: asking {node.id}")
                desk.save(keep(i))
                await ctx.send_message(ask, target_id=node.id)
                return
        outputs = {name: variables[name] for name in self.outputs if name in variables}
        self._record(desk, keep(len(self.nodes)), "done")
        desk.save(None)
        await ctx.send_message(self._result(call, outputs, implicit, proposed, wrote, None), target_id=call.caller)

    def _record(self, desk: Desk, run: TopicRun, node: str) -> None:
        inputs = {i.name: run.variables[i.name] for i in self.inputs if i.name in run.variables}
        desk.record(state={"variables": dict(run.variables), "inputs": inputs, "node": node})

    def _result(
        self,
        call: ComponentCall,
        outputs: Mapping[str, Any],
        implicit: list[str],
        proposed: list[Message],
        wrote: list[str],
        waiting: Message | None,
    ) -> ComponentResult:
        return self.result(
            call,
            outputs=outputs,
            implicit="\n".join(implicit),
            proposed=tuple(proposed),
            wrote=tuple(wrote),
            waiting=waiting,
        )
