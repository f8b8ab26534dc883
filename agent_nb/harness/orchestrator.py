"""Orchestrators: plan which component to call, fill its inputs, answer the user.

An orchestrator keeps its own active context — the user's requests, its calls and their
results, implicit text returned by components, its own answers — and plans only from
that. What a component shows the user directly never enters it. A connected or child
agent is an orchestrator that is itself called as a component (``subagents.py``).

In a centralised harness the top orchestrator is the only one that writes to the chat:
everything its components would show comes back to it, and it writes each thing once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..agents.requests import recording
from ..contents import (
    FunctionCallContent,
    FunctionResultContent,
    UserInputRequestContent,
    UserInputResponseContent,
    shorten,
)
from ..errors import ArgumentError, BudgetExceeded
from ..messages import Message, estimate_tokens
from ..trace.text import message_line
from ..workflow import Executor, WorkflowContext, handler
from .calls import ComponentCall, ComponentResult, UserInput, reply_text
from .components import Component, output_descriptions
from .matching import similar
from .planners import Answer, Ask, Call, DeterministicPlanner, Finish, Planner, PlannerView, Step, is_tool_work
from .state import SANDBOX, WAITING, Desk

__all__ = ["Orchestrator", "OrchestratorState", "conversation_of"]


def conversation_of(context: Sequence[Message]) -> tuple[Message, ...]:
    """The conversation in a context: what was said, without the plan's calls, results and notes."""
    return tuple(m for m in context if m.role in ("user", "assistant") and not is_tool_work(m))


@dataclass(frozen=True, slots=True)
class OrchestratorState:
    """What an orchestrator keeps between invocations (in the run's shared state)."""

    context: tuple[Message, ...] = ()
    turn: int = 0
    steps: int = 0
    """Planning steps taken in ``turn``."""
    last_call: ComponentCall | None = None
    holder: ComponentCall | None = None
    """The call whose component now holds the conversation (it waits on the user)."""
    asked: Message | None = None
    """Its own question that waits on the user."""
    serving: ComponentCall | None = None
    """As a sub-agent: the call it is working on."""
    said: tuple[str, ...] = ()
    """As a sub-agent: its answers during the call (its ``response``)."""
    responded: bool = False
    """As a sub-agent: whether the user was answered during the call, by it or by a component that says so."""
    wrote: tuple[str, ...] = ()
    """Ids of chat messages written during the call by it and by its components (as they reported)."""
    proposed: tuple[Message, ...] = ()
    plan: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Which request each of its own messages was for (message id → request id)."""
    found: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """As a sub-agent: the values of its declared outputs its components returned during the call."""
    reasoning: tuple[str, ...] = ()
    """As a sub-agent: its planner's reasoning during the call."""

    def noting(self, request: str | None, *messages: Message) -> OrchestratorState:
        """The state with ``messages`` added to the context, as work on ``request``."""
        plan = self.plan
        if request is not None:
            plan = MappingProxyType({**plan, **{m.message_id or "": request for m in messages}})
        return replace(self, context=(*self.context, *messages), plan=plan)


RETURNED = MappingProxyType(
    {
        "response": "its answers during the call, joined",
        "responded": "whether the user was answered during the call",
    }
)
"""What every orchestrator called as an agent returns."""
SHARED = MappingProxyType(
    {
        "plan": "each request in its context and where it stands",
        "reasoning": "its planner's reasoning during the call",
    }
)
"""What it returns besides, with ``returns_plan=True``."""


class Orchestrator(Component):
    """The orchestration layer: it plans from its own context which component to call, and answers.

    Args:
        id: its name.
        components: the topics, tools, knowledge, generative answers and agents it may call.
        planner: how it decides; ``DeterministicPlanner()`` by default.
        instructions: what a model planner is told it is for.
        description: what a parent reads when this orchestrator is called as an agent.
        outputs: called as an agent, what it returns beside ``response`` and ``responded``
            (name → description): the latest value of each name its components return during
            the call. An output no component returned is left out.
        returns_plan: called as an agent, it also returns its ``plan`` (each request in its
            context and where it stands) and its planner's ``reasoning``.
        max_steps: planning steps allowed per turn before the turn fails.
    """

    kind = "orchestrator"

    def __init__(
        self,
        id: str = "orchestrator",
        components: Iterable[Component] = (),
        *,
        planner: Planner | None = None,
        instructions: str = "",
        description: str = "",
        inputs: Iterable[Any] = (),
        outputs: Mapping[str, str] | Iterable[str] = (),
        returns_plan: bool = False,
        max_steps: int = 12,
    ) -> None:
        own = dict(output_descriptions(outputs))
        taken = sorted(set(own) & {*RETURNED, *SHARED})
        if taken:
            raise ArgumentError(
                f"{self.kind} {id!r}: {', '.join(map(repr, taken))} is returned by every agent (response, responded) "
                "or with returns_plan=True (plan, reasoning); declare outputs of your own, named as its components "
                "return them",
                argument="outputs",
            )
        self.declared: tuple[str, ...] = tuple(own)
        """Its own outputs: names its components return, passed on to its caller."""
        self.returns_plan = returns_plan
        every = {**RETURNED, **own, **(SHARED if returns_plan else {})}
        super().__init__(id, description=description or instructions, inputs=inputs, outputs=every)
        self.components: tuple[Component, ...] = tuple(components)
        if not self.components:
            raise ArgumentError(f"orchestrator {id!r} needs at least one component to call", argument="components")
        names = [c.id for c in self.components]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ArgumentError(
                f"orchestrator {id!r} has two components named {', '.join(map(repr, twice))}", argument="components"
            )
        self.planner: Planner = planner or DeterministicPlanner()
        self.instructions = instructions
        self.max_steps = max_steps

    def parts(self) -> tuple[Executor, ...]:
        return self.components

    takes_parent_context = True
    """Whether, called as an agent, it takes its caller's conversation into its own context."""
    answers_directly = True
    """Whether, called as an agent in a standard harness, it writes its answers to the chat itself."""

    # -- handlers ---------------------------------------------------------------------

    @handler
    async def on_input(self, turn: UserInput, ctx: WorkflowContext[ComponentCall]) -> None:
        """The user's turn (this is the top orchestrator)."""
        desk = Desk(ctx, self.id)
        st = self._load(desk)
        waiting = ctx.get_state(WAITING)
        ctx.set_state(WAITING, None)
        message = turn.message
        if st.holder is not None:  # a component holds the conversation: the reply is its
            if desk.centralized:  # ... but here everything the user says reaches the orchestrator first
                st = replace(st, context=(*st.context, _as_reply(waiting, st.holder.call_id, message)))
            await self._hand_over(st, desk, ctx, message)
            return
        if st.asked is not None:
            st = replace(st, asked=None).noting(
                st.plan.get(st.asked.message_id or ""), _as_reply(st.asked, "", message)
            )
        else:
            st = replace(st, context=(*st.context, message))
        await self._plan(st, desk, ctx)

    @handler
    async def on_call(self, call: ComponentCall, ctx: WorkflowContext[ComponentCall | ComponentResult]) -> None:
        """Called as an agent by another orchestrator."""
        desk = Desk(ctx, self.id)
        st = self._load(desk)
        if call.reply is not None:
            await self._hand_over(st, desk, ctx, call.reply)
            return
        known = {m.message_id for m in st.context}
        incoming = [m for m in call.conversation if m.message_id not in known] if self.takes_parent_context else []
        if call.request.message_id not in known | {m.message_id for m in incoming}:
            incoming.append(call.request)
        if call.inputs:
            listed = ", ".join(f"{k}={v!r}" for k, v in call.inputs.items())
            incoming.append(Message("system", [f"inputs from {call.caller}: {listed}"], message_id=desk.new_id("n")))
        st = replace(st, context=(*st.context, *incoming), serving=call, **_CALL_STARTS)
        await self._plan(st, desk, ctx)

    @handler
    async def on_result(self, result: ComponentResult, ctx: WorkflowContext[ComponentCall | ComponentResult]) -> None:
        """A component's result comes back: its outputs explicitly, its plain text implicitly."""
        desk = Desk(ctx, self.id)
        st = self._load(desk)
        added = [
            Message(
                "tool",
                [FunctionResultContent(call_id=result.call_id, result=dict(result.outputs))],
                author_name=result.component,
                message_id=desk.new_id("r"),
            )
        ]
        if result.implicit:
            added.append(
                Message(
                    "assistant",
                    [result.implicit],
                    author_name=f"{result.component} (implicit)",
                    message_id=desk.new_id("i"),
                )
            )
        request = st.plan.get(result.call_id)
        found = {k: v for k, v in result.outputs.items() if k in self.declared}
        st = replace(
            st,
            wrote=st.wrote + result.wrote,
            responded=st.responded or result.responded,
            found=MappingProxyType({**st.found, **found}) if found else st.found,
        )
        st = st.noting(request, *added)
        if desk.centralized and desk.setting("sandbox", True):
            self._keep_in_sandbox(desk, result)
        for line in result.proposed:  # centralised: what the component would have shown comes here
            st = self._speak(st, desk, line, request=request)
        if result.waiting is not None:
            st = replace(st, holder=st.last_call)
            if st.serving is None:
                ctx.set_state(WAITING, self._said_as_mine(result.waiting) if desk.centralized else result.waiting)
                self._save(desk, st, f"{result.component} holds the conversation")
            else:
                self._record(desk, st, (), (), note=f"{result.component} holds the conversation")
                await self._return(st, desk, ctx, waiting=result.waiting)
            return
        await self._plan(st, desk, ctx)

    # -- planning -----------------------------------------------------------------------

    async def _plan(self, st: OrchestratorState, desk: Desk, ctx: WorkflowContext[Any, Any]) -> None:
        """Plan until a step hands over or ends; what a model planner sent its model is kept for the trace."""
        with recording() as sent:
            try:
                await self._planned(st, desk, ctx)
            finally:
                if sent:
                    ctx.record_context(model_requests=tuple(sent))

    async def _planned(self, st: OrchestratorState, desk: Desk, ctx: WorkflowContext[Any, Any]) -> None:
        steps: list[Step] = []
        dropped: tuple[Message, ...] = ()
        if desk.centralized:  # once per invocation, before it plans
            st, dropped = self._compact(st, desk)
        while True:
            if st.steps >= self.max_steps:
                raise BudgetExceeded(
                    f"orchestrator {self.id!r} took {self.max_steps} planning steps in turn {desk.turn} without "
                    "finishing; its planner keeps choosing steps that do not answer the request. Look at its "
                    "steps in the trace, or raise max_steps."
                )
            step = await self.planner.next_step(self._view(st, desk))
            steps.append(step)
            st = replace(st, steps=st.steps + 1)
            reasoning = getattr(step, "reasoning", "")
            if reasoning:  # the planner's reasoning stays in its context, as work on the request
                note = Message("system", [f"reasoning: {reasoning}"], author_name=self.id, message_id=desk.new_id("p"))
                st = replace(st, reasoning=(*st.reasoning, reasoning)).noting(getattr(step, "request", None), note)
            if isinstance(step, Call):
                await self._call(st, desk, ctx, step, steps, dropped)
                return
            if isinstance(step, Answer) or (isinstance(step, Ask) and st.serving is not None):
                st = self._answer(st, desk, step.text, step.request)
                continue
            if isinstance(step, Ask):
                prompt = Message(
                    "assistant",
                    [UserInputRequestContent(request_id=desk.new_id("q"), prompt=step.text, options=step.options)],
                    author_name=self.id,
                    message_id=desk.new_id("m"),
                )
                desk.write(prompt)
                ctx.set_state(WAITING, prompt)
                st = replace(st, asked=prompt).noting(step.request, prompt)
                self._save(desk, st, steps=steps, dropped=dropped)
                return
            assert isinstance(step, Finish)
            if st.serving is not None:
                self._record(desk, st, steps, dropped)
                await self._return(st, desk, ctx)
            else:
                self._save(desk, st, steps=steps, dropped=dropped)
            return

    async def _call(
        self,
        st: OrchestratorState,
        desk: Desk,
        ctx: WorkflowContext[Any, Any],
        step: Call,
        steps: list[Step],
        dropped: tuple[Message, ...],
    ) -> None:
        if step.component not in {c.id for c in self.components}:
            raise ValueError(f"orchestrator {self.id!r}: its planner chose {step.component!r}, which it cannot call")
        call_id = step.call_id or desk.new_id("c")
        note = Message(
            "assistant",
            [FunctionCallContent(call_id=call_id, name=step.component, arguments=dict(step.inputs))],
            author_name=self.id,
            message_id=call_id,
        )
        request = next((m for m in st.context if m.message_id == step.request), None) or self._latest_request(st)
        call = ComponentCall(
            self.id,
            step.component,
            call_id,
            desk.turn,
            request,
            MappingProxyType(dict(step.inputs)),
            conversation_of(st.context),
            context=st.context,
        )
        st = replace(st, last_call=call).noting(step.request or request.message_id, note)
        self._save(desk, st, steps=steps, dropped=dropped)
        await ctx.send_message(call, target_id=step.component)

    def _answer(self, st: OrchestratorState, desk: Desk, text: str, request: str | None) -> OrchestratorState:
        line = Message("assistant", [text], author_name=self.id, message_id=desk.new_id("m"))
        return self._speak(replace(st, said=(*st.said, text)), desk, line, own=True, request=request)

    def _speak(
        self, st: OrchestratorState, desk: Desk, line: Message, *, own: bool = False, request: str | None = None
    ) -> OrchestratorState:
        """Say ``line`` to the user, by the rules of the harness and of this orchestrator's place in it."""
        mine = line if own else self._said_as_mine(line)
        if desk.centralized:
            if not own and any(similar(mine.text, m.text) for m in st.context if _is_answer_of(m, self.id)):
                return st  # it already told the user this: it sees everything it said
            st = st.noting(request, mine)
            if st.serving is None:
                desk.write(mine)
                return st
            return replace(st, proposed=(*st.proposed, mine))
        st = st.noting(request, mine)
        if st.serving is None or self.answers_directly:
            desk.write(mine)
            return replace(st, wrote=(*st.wrote, mine.message_id or ""), responded=True)
        return st

    def _said_as_mine(self, line: Message) -> Message:
        return line.model_copy(update={"author_name": self.id})

    async def _return(
        self, st: OrchestratorState, desk: Desk, ctx: WorkflowContext[Any, Any], *, waiting: Message | None = None
    ) -> None:
        call = st.serving
        assert call is not None
        outputs: dict[str, Any] = {"response": " ".join(st.said), "responded": st.responded, **st.found}
        if self.returns_plan:
            outputs.update(plan=self._view(st, desk).plan_state(), reasoning=st.reasoning)
        result = ComponentResult(
            self.id,
            call.caller,
            call.call_id,
            call.turn,
            MappingProxyType(outputs),
            proposed=st.proposed,
            waiting=waiting,
            wrote=st.wrote,
        )
        desk.save(replace(st, serving=call if waiting is not None else None, **_CALL_STARTS))
        await ctx.send_message(result, target_id=call.caller)

    async def _hand_over(
        self, st: OrchestratorState, desk: Desk, ctx: WorkflowContext[Any, Any], reply: Message
    ) -> None:
        holder = st.holder
        assert holder is not None
        call = replace(
            holder, reply=reply, conversation=conversation_of(st.context), context=st.context, turn=desk.turn
        )
        st = replace(st, holder=None, last_call=holder)
        self._save(desk, st, f"handed the user's reply to {holder.component}")
        await ctx.send_message(call, target_id=holder.component)

    # -- centralised: compaction and the sandbox ------------------------------------------

    def _compact(self, st: OrchestratorState, desk: Desk) -> tuple[OrchestratorState, tuple[Message, ...]]:
        budget = desk.setting("context_budget")
        if budget is None or estimate_tokens(st.context) <= budget:
            return st, ()
        keep = max(int(desk.setting("keep_recent", 6)), 1)
        cut = len(st.context) - keep
        while cut > 0 and st.context[cut].role == "tool":  # never separate a result from its call
            cut -= 1
        if cut <= 0 or (cut == 1 and _is_summary(st.context[0], self.id)):
            return st, ()
        latest = max((i for i, m in enumerate(st.context) if m.role == "user" and m.text), default=cut)
        cut = min(cut, latest)  # the request being worked on stays whole
        if cut <= 0:
            return st, ()
        old, recent = st.context[:cut], st.context[cut:]
        earlier = sum(int(m.text.split()[2]) for m in old if _is_summary(m, self.id))  # "Summary of N ..."
        lines = [message_line(m, 90) for m in old if not _is_summary(m, self.id)]
        path = f"context/compacted-t{desk.turn}-{len(desk.ctx.get_state(SANDBOX, {})) + 1}.txt"
        self._write_file(desk, path, "\n".join(lines))
        room = max(int(budget) * 2, 160)  # about half the budget, in characters
        head = f"Summary of {earlier + len(lines)} earlier messages (in full in the sandbox, under context/): "
        summary = Message(
            "system", [head + shorten(" | ".join(lines), room)], author_name=self.id, message_id=desk.new_id("s")
        )
        return replace(st, context=(summary, *recent)), old

    def _keep_in_sandbox(self, desk: Desk, result: ComponentResult) -> None:
        if result.outputs:
            import json

            body = json.dumps(dict(result.outputs), default=str, sort_keys=True)
            self._write_file(desk, f"outputs/{result.component}-{result.call_id}.json", body)

    def _write_file(self, desk: Desk, path: str, text: str) -> None:
        files = dict(desk.ctx.get_state(SANDBOX, {}))
        files[path] = text
        desk.ctx.set_state(SANDBOX, MappingProxyType(files))

    # -- state and records --------------------------------------------------------------

    def _load(self, desk: Desk) -> OrchestratorState:
        st: OrchestratorState = desk.load() or OrchestratorState()
        if st.turn != desk.turn:
            st = replace(st, turn=desk.turn, steps=0)
        return st

    def _save(
        self,
        desk: Desk,
        st: OrchestratorState,
        note: str = "",
        *,
        steps: Sequence[Step] = (),
        dropped: tuple[Message, ...] = (),
    ) -> None:
        desk.save(st)
        self._record(desk, st, steps, dropped, note)

    def _record(
        self,
        desk: Desk,
        st: OrchestratorState,
        steps: Sequence[Step],
        dropped: tuple[Message, ...],
        note: str = "",
    ) -> None:
        """The snapshot: its context as the invocation left it, what it plans with, the steps it took.

        What it plans with is part of its active context: each component with its inputs' and
        outputs' descriptions, and the plan state (each request and where it stands).
        """
        state: dict[str, Any] = {
            "components": tuple(c.described() for c in self.components),
            "plan": self._view(st, desk).plan_state(),
        }
        if steps:
            state["steps"] = tuple(steps)
        if note:
            state["step"] = note
        fields: dict[str, Any] = {"given": st.context, "state": state}
        if dropped:
            fields.update(dropped=dropped, context_filter="compaction")
        desk.record(**fields)

    def _view(self, st: OrchestratorState, desk: Desk) -> PlannerView:
        return PlannerView(
            self.id,
            self.instructions,
            st.context,
            self.components,
            frozenset({self.id, *desk.setting("speakers", ())}),
            st.serving.request if st.serving is not None else None,
            desk.ctx.get_state(SANDBOX, MappingProxyType({})) if desk.centralized else MappingProxyType({}),
            st.plan,
        )

    def _latest_request(self, st: OrchestratorState) -> Message:
        for m in reversed(st.context):
            if m.role == "user" and m.text:
                return m
        if st.serving is not None:
            return st.serving.request
        raise ValueError(f"orchestrator {self.id!r} planned a call, but its context holds no request")


_CALL_STARTS: Mapping[str, Any] = MappingProxyType(
    {"said": (), "responded": False, "wrote": (), "proposed": (), "found": MappingProxyType({}), "reasoning": ()}
)
"""What a sub-agent's state holds for one call only: emptied when a call starts and when it returns."""


def _as_reply(prompt: Message | None, fallback_id: str, message: Message) -> Message:
    """The user's reply as the orchestrator keeps it: an answer to the prompt it saw, not a new request."""
    contents = prompt.contents if prompt is not None else ()
    request_id = next((c.request_id for c in contents if c.type == "user_input_request"), fallback_id)
    return Message(
        "user",
        [UserInputResponseContent(request_id=request_id, text=reply_text(message))],
        author_name="user",
        message_id=message.message_id,
    )


def _is_summary(m: Message, author: str) -> bool:
    return m.role == "system" and m.author_name == author and m.text.startswith("Summary of")


def _is_answer_of(m: Message, author: str) -> bool:
    return m.role == "assistant" and m.author_name == author and bool(m.text) and not is_tool_work(m)
