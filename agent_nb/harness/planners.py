"""Planners: how an orchestrator decides its next step from its own active context.

A planner sees exactly what the orchestrator has — its context, its components'
descriptions, inputs and outputs, its plan state — and nothing a component only showed
the user. Two ship: ``DeterministicPlanner`` (offline, reproducible) and ``ModelPlanner``
(any chat client, the routing client included).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

from ..agents.requests import ModelRequest, recorder, safe_options
from ..contents import TextContent, shorten
from ..messages import Message
from ..trace.who_has import strings_of
from .calls import REPLY
from .matching import content_words, mentions

if TYPE_CHECKING:
    from ..sessions import AgentSession
    from .components import Component, Input

__all__ = [
    "NO_ANSWER",
    "Answer",
    "Ask",
    "Call",
    "DeterministicPlanner",
    "Finish",
    "ModelPlanner",
    "Planner",
    "PlannerView",
    "Step",
]

NO_ANSWER = "Sorry, I could not find an answer to that."
_NOT_SAID = frozenset({"responded", "plan", "reasoning"})
"""Outputs that say how a call went, not what to tell the user."""


@dataclass(frozen=True, slots=True)
class Call:
    """Call ``component`` with ``inputs``, for the request with id ``request``."""

    component: str
    inputs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    request: str | None = None
    call_id: str | None = None
    """The model's id for the call, when a model planned it."""
    reasoning: str = ""
    """Why, in the planner's words; the orchestrator keeps it in its context."""

    def __str__(self) -> str:
        inputs = ", ".join(f"{k}={v!r}" for k, v in self.inputs.items())
        return f"call {self.component}({inputs}) for {self.request}"


@dataclass(frozen=True, slots=True)
class Answer:
    """Tell the user ``text`` (the orchestrator's own answer)."""

    text: str
    request: str | None = None
    reasoning: str = ""

    def __str__(self) -> str:
        return f"answer {self.request}: {self.text!r}"


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask the user for an input the orchestrator could not fill, and wait."""

    text: str
    options: tuple[str, ...] = ()
    request: str | None = None
    component: str = ""
    input: str = ""
    reasoning: str = ""

    def __str__(self) -> str:
        return f"ask for {self.component}.{self.input}: {self.text!r}"


@dataclass(frozen=True, slots=True)
class Finish:
    """Nothing left to do this turn."""

    reason: str = ""

    def __str__(self) -> str:
        return f"finish ({self.reason})" if self.reason else "finish"


Step = Union[Call, Answer, Ask, Finish]  # noqa: UP007


@dataclass(frozen=True, slots=True)
class PlannerView:
    """What an orchestrator plans from: its own active context and its components' descriptions."""

    orchestrator: str
    instructions: str
    context: tuple[Message, ...]
    components: tuple[Component, ...]
    speakers: frozenset[str]
    """Orchestrators whose answers in this context reached the user: itself and those above it."""
    task: Message | None = None
    """A sub-agent's explicit request from its caller; ``None`` for the top orchestrator."""
    sandbox: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    plan: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Which request each of its own messages (calls, results, answers) was for: message id → request id."""

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.id == name), None)

    def plan_state(self) -> tuple[str, ...]:
        """Each request in its context and where it stands: what was called for it, what came back, answered or open.

        A request is answered when an orchestrator that talks to the user answered it, or a
        result says ``responded`` (implicit text never counts: it does not say the user saw it).
        """
        lines = []
        for request, after in _segments(self.context, self.plan):
            returned = {c.call_id: c.result for m in after for c in m.contents if c.type == "function_result"}
            work = []
            for c in (c for m in after for c in m.contents if c.type == "function_call"):
                back = returned.get(c.call_id)
                if back is None:
                    work.append(f"called {c.name}, nothing back yet")
                else:
                    names = ", ".join(back) if isinstance(back, Mapping) and back else "nothing"
                    work.append(f"called {c.name} → {names}")
            status = "answered" if _answered(after, self.speakers) else "open"
            lines.append(" · ".join([f"{shorten(repr(request.text), 60)} ({request.message_id}): {status}", *work]))
        return tuple(lines)


@runtime_checkable
class Planner(Protocol):
    """Anything that picks an orchestrator's next step from what it has in view."""

    async def next_step(self, view: PlannerView) -> Step: ...


def is_tool_work(m: Message) -> bool:
    return any(c.type in ("function_call", "function_result") for c in m.contents)


def results_in(messages: Sequence[Message]) -> list[Mapping[str, Any]]:
    """The explicit outputs returned in ``messages``."""
    return [
        c.result for m in messages for c in m.contents if c.type == "function_result" and isinstance(c.result, Mapping)
    ]


def _segments(context: Sequence[Message], plan: Mapping[str, str]) -> list[tuple[Message, list[Message]]]:
    """Each request (a user message with text) with what belongs to it.

    A message belongs to the request the orchestrator's plan says it was for (its calls,
    their results, its answers), and otherwise to the latest request before it.
    """
    requests: dict[str, tuple[Message, list[Message]]] = {}
    latest: str | None = None
    for m in context:
        if m.role == "user" and m.text:
            key = m.message_id or f"#{len(requests)}"
            if key not in requests:
                requests[key] = (m, [])
            latest = key
            continue
        owner = plan.get(m.message_id or "")
        owner = owner if owner in requests else latest
        if owner is not None:
            requests[owner][1].append(m)
    return list(requests.values())


class DeterministicPlanner:
    """Plans by matching words, and answers only what its own context shows unanswered.

    For each request in its context (a user message), oldest first:

    1. It is answered when what belongs to it (see ``_segments``) holds an answer from an
       orchestrator that talks to the user (this one, or the one that passed the context
       down), or a result whose ``responded`` output is true. Implicit text is never an
       answer: it does not say whether the user saw it.
    2. If a component it called for the request returned something, it answers the
       request itself with that (outputs first, then implicit text).
    3. Otherwise it calls the next component whose id and description share the most
       words with the request (each at most once per request), filling inputs from its
       context: an input with choices takes the choice most recently mentioned; any other
       takes the output of the same name most recently returned. A required input it
       cannot fill, it asks the user for. With no component left, it says it found nothing.

    A sub-agent only takes up requests of its caller's conversation that one of its
    components matches; its own task it always answers.

    ``explain=True`` gives each step its reasoning (which words matched, where an input
    came from, what is missing), which the orchestrator keeps in its context.
    """

    def __init__(self, *, explain: bool = False) -> None:
        self.explain = explain

    async def next_step(self, view: PlannerView) -> Step:
        task_id = view.task.message_id if view.task is not None else None
        for request, after in _segments(view.context, view.plan):
            if _answered(after, view.speakers):
                continue
            called = {c.name for m in after for c in m.contents if c.type == "function_call"}
            ranked = _ranked(request.text, view.components)
            mine = view.task is None or request.message_id == task_id
            if not ranked and not mine:
                continue  # a request of the parent's conversation this agent cannot help with
            composed = _compose(after)
            if composed:  # what came back is enough to answer with
                return Answer(composed, request.message_id, self._why("what came back for it answers it"))
            for component in ranked:
                if component.id in called:
                    continue
                inputs, missing = _fill(component, request, view)
                shared = ", ".join(sorted(content_words(request.text) & component.keywords()))
                if missing is None:
                    filled = "; inputs from my context: " + ", ".join(inputs) if inputs else ""
                    why = self._why(f"{component.id} matches the request on {shared}{filled}")
                    return Call(component.id, MappingProxyType(inputs), request.message_id, reasoning=why)
                prompt = missing.description or f"What is the {missing.name.replace('_', ' ')}?"
                why = self._why(f"{component.id} matches on {shared} but needs {missing.name}, and my context lacks it")
                if view.task is not None:
                    return Answer(f"I need to know this first: {prompt}", request.message_id, why)
                return Ask(prompt, missing.choices, request.message_id, component.id, missing.name, why)
            why = "every component that matches was tried" if ranked else "no component matches the request"
            return Answer(NO_ANSWER, request.message_id, self._why(why))
        return Finish("every request in its context is answered")

    def _why(self, text: str) -> str:
        return text if self.explain else ""


def _answered(after: Sequence[Message], speakers: frozenset[str]) -> bool:
    for m in after:  # the cheap tests first: this runs for every request at every step
        if m.role == "assistant" and m.author_name in speakers and not is_tool_work(m) and m.text:
            return True
    return any(bool(r.get("responded")) for r in results_in(after))


def _ranked(request: str, components: Sequence[Component]) -> list[Component]:
    words = content_words(request)
    scored = [(len(words & c.keywords()), -i, c) for i, c in enumerate(components)]
    return [c for score, _, c in sorted(scored, key=lambda t: (t[0], t[1]), reverse=True) if score > 0]


def _fill(component: Component, request: Message, view: PlannerView) -> tuple[dict[str, Any], Input | None]:
    values: dict[str, Any] = {}
    newest_first = list(reversed(view.context))
    files = [text for path, text in reversed(list(view.sandbox.items())) if path.startswith("outputs/")]
    for spec in component.inputs:
        value: Any = None
        if spec.choices:
            for m in newest_first:
                texts = list(strings_of(m, offered=False))  # what a question offers is not an answer
                value = next((ch for ch in spec.choices if any(mentions(t, ch) for t in texts)), None)
                if value is not None:
                    break
            for text in files if value is None else ():  # newest first, as the context
                value = next((ch for ch in spec.choices if mentions(text, ch)), None)
                if value is not None:
                    break
        elif spec.name in ("request", "question", "query"):
            value = request.text
        else:
            value = next((r[spec.name] for r in reversed(results_in(view.context)) if spec.name in r), None)
        if value is None:
            if spec.required:
                return values, spec
            continue
        values[spec.name] = value
    return values, None


def _compose(after: Sequence[Message]) -> str:
    """An answer from what came back: an answer or response output, other text outputs, else implicit text."""
    parts: list[str] = []
    for r in results_in(after):
        for key in ("answer", "response"):
            if isinstance(r.get(key), str) and r[key]:
                parts.append(r[key])
                break
        else:
            if "error" in r:
                parts.append(f"Sorry, that did not work: {r['error']}")
            else:
                parts.extend(str(v) for k, v in r.items() if k not in _NOT_SAID and isinstance(v, (str, int, float)))
    if parts:
        return " ".join(parts)
    implicit = [m.text for m in after if m.role == "assistant" and m.text and not is_tool_work(m)]
    if not implicit:
        return ""
    lines = [line for line in implicit[-1].splitlines() if line and not line.startswith(REPLY)]
    return " ".join(lines)


def _readable(m: Message) -> Message:
    """A context message as a model can take it: card prompts and replies as text."""
    if not any(c.type in ("user_input_request", "user_input_response") for c in m.contents):
        return m
    contents: list[Any] = []
    for c in m.contents:
        if c.type == "user_input_request":
            options = f" (options: {', '.join(c.options)})" if c.options else ""
            contents.append(TextContent(f"[asked the user: {c.prompt}{options}]"))
        elif c.type == "user_input_response":
            contents.append(TextContent(f"[the user answered: {c.text}]"))
        else:
            contents.append(c)
    return m.model_copy(update={"contents": tuple(contents)})


def _for_the_model(c: Component) -> str:
    """A component in a model planner's prompt: its description, its inputs' descriptions, its outputs' names.

    Outputs go by name only: their descriptions (in the orchestrator's recorded context) made
    a small local model answer in words instead of calling a tool.
    """
    inputs = "; ".join(map(str, c.inputs)) or "none"
    outputs = ", ".join(c.outputs) or "none"
    return f"{c.id}: {c.description} (inputs: {inputs}; outputs: {outputs})"


class ModelPlanner:
    """Plans with a model: each component is offered as a tool; a tool call is a call, text an answer.

    ``client`` is any chat client (``RoutingChatClient`` included; pass ``session=`` for
    its route). The model sees the orchestrator's context and nothing else: its prompt
    lists each component with its inputs' descriptions and its outputs, then, once there is
    more than one open request, the plan state (each request, what was called for it,
    answered or open). Text the model writes beside a tool call is the step's reasoning.
    """

    def __init__(
        self,
        client: Any,
        *,
        instructions: str = "",
        options: Mapping[str, Any] | None = None,
        session: AgentSession | None = None,
    ) -> None:
        self.client = client
        self.instructions = instructions
        self.options = dict(options or {})
        self.session = session

    def prompt(self, view: PlannerView) -> str:
        lines = [
            self.instructions or view.instructions or "You coordinate the components below for the user.",
            "Call a component when it can handle the user's request; otherwise answer the user yourself.",
            "Components:",
            *(f"- {_for_the_model(c)}" for c in view.components),
        ]
        plan = view.plan_state()
        if len(plan) > 1 or any(" · " in line for line in plan):  # news beyond the one open request
            lines += ["The requests so far and where they stand:", *(f"- {line}" for line in plan)]
        return "\n".join(lines)

    def _request(
        self,
        view: PlannerView,
        messages: list[Message],
        options: Mapping[str, Any],
        route: str | None = None,
        model: str | None = None,
        repairs: tuple[str, ...] = (),
        error: str | None = None,
    ) -> ModelRequest:
        """One request as sent: its prompt (instructions), then the orchestrator's context; components as tools."""
        tools = tuple(c.id for c in view.components)
        return ModelRequest(
            view.orchestrator, tuple(messages), (1, 0, len(messages) - 1), tools, safe_options(options), 0,
            route, model, error, repairs,
        )  # fmt: skip

    async def next_step(self, view: PlannerView) -> Step:
        last = view.context[-1] if view.context else None
        if last is not None and last.role == "assistant" and last.author_name == view.orchestrator and last.text:
            return Finish("answered")
        requests = [m for m in view.context if m.role == "user" and m.text]
        request = requests[-1].message_id if requests else None
        messages = [Message("system", [self.prompt(view)]), *(_readable(m) for m in view.context)]
        options = {**self.options, "tools": [c.schema() for c in view.components]}
        sent = recorder()  # the orchestrator records what its model received, for the trace
        try:
            response = await self.client.get_response(messages, options, session=self.session)
        except Exception as exc:
            if sent is not None:
                sent.append(self._request(view, messages, options, error=f"{type(exc).__name__}: {exc}"))
            raise
        if sent is not None:
            sent.append(self._request(view, messages, options, response.route, response.model, response.repairs))
        calls = [c for m in response.messages for c in m.contents if c.type == "function_call"]
        if calls:
            call = calls[0]
            if view.component(call.name) is None:
                return Finish(f"the model called {call.name!r}, which is not a component")
            try:
                arguments = json.loads(call.arguments or "{}") if isinstance(call.arguments, str) else call.arguments
            except json.JSONDecodeError:
                return Finish(f"the model called {call.name!r} with arguments that are not JSON")
            reasoning = response.text  # what the model said beside its call
            return Call(call.name, MappingProxyType(dict(arguments or {})), request, call.call_id, reasoning)
        if response.text:
            return Answer(response.text, request)
        return Finish("the model said nothing")
