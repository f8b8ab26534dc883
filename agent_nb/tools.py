"""Function tools: plain Python functions the model may call.

The JSON schema of a tool's parameters comes from the function's type hints (through
pydantic), its description from the docstring. Arguments the model sends are validated
against the same hints before the function runs; what goes wrong is returned to the model
as the call's result, so it can correct itself.

```python
def weather(city: str, unit: Literal["C", "F"] = "C") -> str:
    \"\"\"The weather in a city.\"\"\"
    return f"18 {unit} in {city}"

agent = ChatAgent(client, name="assistant", tools=[weather])
```

A tool that declares ``**kwargs`` also receives the run's ``function_invocation_kwargs``.
Plain functions run in a worker thread, ``async def`` ones on the event loop. A tool made
with ``requires_approval=True`` never runs on the model's word alone: the agent's turn ends
with an approval request, and the next turn runs it (approved) or tells the model it was rejected.

``timeout=`` (seconds) bounds one call: a call that takes longer ends its agent's turn with
``ToolTimeout`` (``ChatAgent(tool_timeout=...)`` sets it for every tool without one). An
``async def`` tool is cancelled there; a plain ``def`` cannot be stopped (Python cannot stop
a thread): it runs on in its thread until it returns, and what it returns is dropped.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import to_jsonable_python

from .errors import ArgumentError, bad_argument

__all__ = ["FunctionTool", "ToolArgumentsError", "as_tools", "check_timeout", "tool"]


class ToolArgumentsError(ValueError):
    """The model called a tool with arguments that do not fit its parameters."""


def _strip_titles(schema: Any) -> Any:
    """Pydantic's generated titles add tokens and say nothing the names do not."""
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):  # names here are the user's, not keywords
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out


class FunctionTool:
    """A Python function (sync or async) offered to a model as a tool."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool = False,
        timeout: float | None = None,
        ends_turn: bool = False,
    ) -> None:
        if not callable(fn):
            raise bad_argument("a tool", "fn", fn, "give a function (def or async def) with type hints")
        self.fn = fn
        self.requires_approval = requires_approval
        self.ends_turn = bool(ends_turn)
        """Once it has run, the turn ends: the model is not asked again (a hand-off to another agent)."""
        self.timeout = check_timeout(f"tool {getattr(fn, '__name__', fn)!r}", "timeout", timeout)
        self.name: str = str(name or getattr(fn, "__name__", ""))
        if not self.name.isidentifier():
            raise bad_argument(
                "a tool", "name", self.name, "a tool's name is letters, digits and underscores: pass name='...'"
            )
        doc = inspect.getdoc(fn) or ""
        self.description = description if description is not None else doc.split("\n\n")[0].strip()
        signature = inspect.signature(fn)
        try:
            hints = get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise ArgumentError(f"tool {self.name!r}: cannot resolve its type hints ({exc})", argument="fn") from exc
        # Fields get neutral names and the parameters' names as aliases, so that any parameter
        # name works (``json``, ``model_config`` or ``_private`` would clash with pydantic's own).
        fields: dict[str, Any] = {}
        self._names: dict[str, str] = {}  # field -> parameter
        self.takes_run_kwargs = False
        self.is_async = inspect.iscoroutinefunction(fn)
        for param in signature.parameters.values():
            if param.kind is param.VAR_KEYWORD:
                self.takes_run_kwargs = True
                continue
            if param.kind in (param.VAR_POSITIONAL, param.POSITIONAL_ONLY):
                raise ArgumentError(
                    f"tool {self.name!r}: parameter {param.name!r} must be passable by name", argument="fn"
                )
            if param.name not in hints:
                raise ArgumentError(
                    f"tool {self.name!r}: annotate parameter {param.name!r} so the model knows its type", argument="fn"
                )
            default = ... if param.default is param.empty else param.default
            field = f"p{len(fields)}"
            fields[field] = (Annotated[hints[param.name], Field(alias=param.name)], default)
            self._names[field] = param.name
        try:
            self._arguments: type[BaseModel] = create_model(
                f"{self.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
            )
            self.parameters: dict[str, Any] = _strip_titles(self._arguments.model_json_schema(by_alias=True))
        except Exception as exc:  # a type pydantic can neither validate nor describe to a model
            raise bad_argument(
                f"tool {self.name!r}",
                "its parameter types",
                {p: getattr(t, "__name__", repr(t)) for p, t in hints.items() if p != "return"},
                "use types a JSON schema can describe (str, int, float, bool, lists, dicts, Literal, pydantic "
                f"models, dataclasses); pydantic said: {type(exc).__name__}: {str(exc).splitlines()[0]}",
            ) from None

    def schema(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}``: what a provider needs to offer the tool."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def parse_arguments(self, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Validate what the model sent; ``ToolArgumentsError`` says what is wrong in words a model can use."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ToolArgumentsError(f"the arguments of {self.name} are not valid JSON: {exc}") from exc
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolArgumentsError(f"the arguments of {self.name} must be a JSON object, got {arguments!r:.60}")
        try:
            parsed = self._arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
            raise ToolArgumentsError(f"invalid arguments for {self.name}: {problems}") from exc
        return {param: getattr(parsed, field) for field, param in self._names.items()}

    async def invoke(self, arguments: Mapping[str, Any] | str | None, **run_kwargs: Any) -> Any:
        """Run the tool on the model's arguments (``run_kwargs`` reach a ``**kwargs`` parameter).

        A plain ``def`` runs in a worker thread, so a slow tool does not freeze the event loop
        (a notebook's included). The result comes back JSON-ready (models and dataclasses as
        dicts, anything else unknown as its ``str``), as it will be stored and sent.
        """
        values = self.parse_arguments(arguments)
        if self.takes_run_kwargs:
            values.update({k: v for k, v in run_kwargs.items() if k not in values})
        if self.is_async:
            result = await self.fn(**values)
        else:
            import asyncio

            result = await asyncio.to_thread(self.fn, **values)
            if inspect.isawaitable(result):  # a def that returns a coroutine
                result = await result
        return to_jsonable_python(result, fallback=str)

    def __repr__(self) -> str:
        approval = ", requires_approval=True" if self.requires_approval else ""
        timeout = f", timeout={self.timeout:g}" if self.timeout is not None else ""
        ends = ", ends_turn=True" if self.ends_turn else ""
        return f"FunctionTool({self.name!r}{approval}{timeout}{ends})"


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    timeout: float | None = None,
    ends_turn: bool = False,
) -> Any:
    """Make a ``FunctionTool``: ``@tool`` or ``@tool(name=..., requires_approval=True, timeout=30)``.

    ``ends_turn=True``: once the tool has run, the agent's turn ends with the call and its result,
    without asking the model again (how a hand-off tool passes the conversation on).
    """

    def make(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            requires_approval=requires_approval,
            timeout=timeout,
            ends_turn=ends_turn,
        )

    return make if fn is None else make(fn)


def check_timeout(where: str, argument: str, value: Any) -> float | None:
    """A timeout in seconds, once checked: ``None`` (no limit) or a number above 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise bad_argument(where, argument, value, "give a number of seconds above 0, or None for no limit")
    return float(value)


def as_tools(items: Iterable[Callable[..., Any] | FunctionTool]) -> list[FunctionTool]:
    """Functions and tools as tools; two with one name are an error."""
    tools = [t if isinstance(t, FunctionTool) else FunctionTool(t) for t in items]
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ArgumentError(
            f"two tools are named {', '.join(map(repr, twice))}; pass name='...' to tell them apart", argument="tools"
        )
    return tools
