"""Components an orchestrator calls: the base, a tool or flow, a knowledge step.

Each is a workflow executor: it takes a ``ComponentCall``, records what was in its
active context, and sends a ``ComponentResult`` back to its caller. What each one sees,
may write and returns follows docs/context-distribution.md#the-summary-table:

- a **tool or flow** receives only the inputs the orchestrator generated, cannot write to
  the chat, and returns its outputs;
- a **knowledge** step answers from the user's request plus its agent's active context,
  over the sources it is given; it writes to its agent, not to the chat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import ArgumentError, bad_argument
from ..tools import FunctionTool, ToolArgumentsError
from ..workflow import Executor, WorkflowContext, handler
from .calls import ComponentCall, ComponentResult
from .matching import best_passage, content_words
from .state import Desk

__all__ = ["Component", "Description", "Input", "Knowledge", "Tool"]


@dataclass(frozen=True, slots=True)
class Input:
    """An input the orchestrator fills from its own active context before it calls the component."""

    name: str
    description: str = ""
    choices: tuple[str, ...] = ()
    """The values it can take; a deterministic planner looks for one of them in its context."""
    required: bool = True

    def __str__(self) -> str:
        about = f" — {self.description}" if self.description else ""
        choices = f" [{'|'.join(self.choices)}]" if self.choices else ""
        return f"{self.name}{about}{choices}{'' if self.required else ' (optional)'}"

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.description:
            out["description"] = self.description
        if self.choices:
            out["enum"] = list(self.choices)
        return out


@dataclass(frozen=True, slots=True)
class Description:
    """A component as its orchestrator plans with it: what it is for, its inputs and its outputs, in one line.

    ``who_has`` reads its words but not the choices an input offers: a value that may be
    chosen is not a fact of the run, as a card's buttons are not a click.
    """

    line: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return self.line

    def texts(self) -> tuple[str, ...]:
        return self.words


def output_descriptions(outputs: Mapping[str, str] | Iterable[str]) -> Mapping[str, str]:
    pairs = outputs.items() if isinstance(outputs, Mapping) else ((name, "") for name in outputs)
    return MappingProxyType(dict(pairs))


class Component(Executor):
    """A part with a description the orchestrator plans by, inputs it is given and outputs it returns.

    Component ids are identifiers: a model-backed planner offers each component as a tool
    of that name.
    """

    kind = "component"

    def __init__(
        self,
        id: str,
        *,
        description: str = "",
        inputs: Iterable[Input | str] = (),
        outputs: Mapping[str, str] | Iterable[str] = (),
    ) -> None:
        if not isinstance(id, str) or not id.isidentifier():
            raise ArgumentError(
                f"component id {id!r} cannot be used: use letters, digits and underscores "
                "(a model planner offers each component as a tool of that name)",
                argument="id",
            )
        super().__init__(id)
        self.description = description
        self.inputs: tuple[Input, ...] = tuple(i if isinstance(i, Input) else Input(i) for i in inputs)
        self.outputs: Mapping[str, str] = output_descriptions(outputs)

    def parts(self) -> tuple[Executor, ...]:
        """The executors this component calls itself (wired into the harness's graph)."""
        return ()

    def keywords(self) -> frozenset[str]:
        """The words a deterministic planner matches a request against: id and description."""
        return content_words(f"{self.id.replace('_', ' ')} {self.description}")

    def described(self) -> Description:
        """What its orchestrator plans with: its description, its inputs' and its outputs' descriptions."""
        inputs = "; ".join(map(str, self.inputs)) or "none"
        outputs = "; ".join(f"{k} — {v}" if v else k for k, v in self.outputs.items()) or "none declared"
        line = f"{self.id}: {self.description} ({self.kind}; inputs: {inputs}; outputs: {outputs})"
        words = (
            self.description,
            *(t for i in self.inputs for t in (i.name, i.description)),
            *(t for pair in self.outputs.items() for t in pair),
        )
        return Description(line, tuple(w for w in words if w))

    def schema(self) -> dict[str, Any]:
        """The component as a tool a model can call: name, description, inputs as parameters."""
        return {
            "name": self.id,
            "description": self.description,
            "parameters": {
                "type": "object",
                "properties": {i.name: i.schema() for i in self.inputs},
                "required": [i.name for i in self.inputs if i.required],
            },
        }

    @handler
    async def on_call(self, call: ComponentCall, ctx: WorkflowContext[ComponentResult]) -> None:
        desk = Desk(ctx, self.id)
        result = await self.answer(call, desk)
        await ctx.send_message(result, target_id=call.caller)

    async def answer(self, call: ComponentCall, desk: Desk) -> ComponentResult:
        raise NotImplementedError(f"{type(self).__name__} must define answer(call, desk)")

    def result(self, call: ComponentCall, **fields: Any) -> ComponentResult:
        outputs = fields.pop("outputs", None)
        return ComponentResult(
            self.id, call.caller, call.call_id, call.turn, MappingProxyType(dict(outputs or {})), **fields
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"


class Tool(Component):
    """A tool or flow: a Python function. It sees only its inputs and cannot write to the chat.

    The function's type hints become the inputs (``Literal`` values become choices); a dict
    it returns becomes the outputs, any other value the output ``result``, ``None`` no output.
    """

    kind = "tool"

    def __init__(self, fn: Callable[..., Any], *, id: str | None = None, description: str | None = None) -> None:
        name = id if id is not None else getattr(fn, "__name__", "")
        if not isinstance(name, str) or not name.isidentifier():
            raise bad_argument(
                "Tool", "id", name, "give letters, digits and underscores (a tool's name, as the model sees it)"
            )
        self.function = FunctionTool(fn, name=id, description=description)
        schema = self.function.parameters
        required = set(schema.get("required", ()))
        inputs = [
            Input(
                name,
                spec.get("description", ""),
                tuple(str(v) for v in spec.get("enum", [spec["const"]] if "const" in spec else ())),
                name in required,
            )
            for name, spec in schema.get("properties", {}).items()
        ]
        super().__init__(self.function.name, description=self.function.description, inputs=inputs)

    async def answer(self, call: ComponentCall, desk: Desk) -> ComponentResult:
        inputs = dict(call.inputs)
        desk.record(state={"inputs": inputs})  # its whole active context
        try:
            value = await self.function.invoke(inputs)
        except ToolArgumentsError as exc:  # the caller's mistake, said back to it as an output
            return self.result(call, outputs={"error": str(exc)})
        if value is None:
            return self.result(call)
        return self.result(call, outputs=value if isinstance(value, dict) else {"result": value})


class Knowledge(Component):
    """A knowledge step: answers from the request plus its agent's active context, over ``sources``.

    It returns its answer to the agent that called it and never writes to the chat.
    A short follow-up ("and for children?") borrows the words of the agent's previous request.
    """

    kind = "knowledge"

    def __init__(self, id: str, sources: Mapping[str, str], *, description: str = "") -> None:
        if not sources:
            raise ArgumentError(
                f"knowledge {id!r} needs at least one source: sources={{'title': 'text', ...}}", argument="sources"
            )
        super().__init__(id, description=description, outputs={"answer": "the answer found", "source": "its source"})
        self.sources: Mapping[str, str] = MappingProxyType(dict(sources))

    def keywords(self) -> frozenset[str]:
        return super().keywords() | content_words(" ".join(self.sources))  # its description and source titles

    async def answer(self, call: ComponentCall, desk: Desk) -> ComponentResult:
        context = call.context or call.conversation  # its agent's whole active context, when the caller gave it
        if all(m.message_id != call.request.message_id for m in context):
            context = (*context, call.request)
        query = call.request.text
        if len(content_words(query)) < 3:  # a follow-up: read it with the previous request
            earlier = [m.text for m in context if m.role == "user" and m.text and m is not call.request]
            query = f"{earlier[-1]} {query}" if earlier else query
        found = best_passage(query, dict(self.sources))
        desk.record(
            given=context,
            state={"sources": tuple(self.sources), "found": f"{found[0]}: {found[1]}" if found else "nothing"},
        )
        if found is None:
            return self.result(call)
        return self.result(call, outputs={"answer": found[1], "source": found[0]})
