"""Message contents: text, tool calls and results, user-input requests, data and URIs.

A discriminated union on ``type``: JSON with an unknown ``type`` is refused, naming the known ones.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, TypeVar, Union, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, ValidationError

from .errors import bad_argument

__all__ = [
    "Content",
    "DataContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "Model",
    "TextContent",
    "UriContent",
    "UserInputRequestContent",
    "UserInputResponseContent",
    "shorten",
    "tool_work_as_text",
]

FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def shorten(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


UNSET: Any = object()


class Model(BaseModel):
    """A frozen model whose bad fields are ``ArgumentError``s naming the field, not pydantic's errors.

    Every text it is given is checked for lone surrogates first: such a text could never be
    stored or sent (it cannot be encoded as UTF-8).
    """

    model_config = FROZEN

    def __repr_args__(self) -> Any:
        """Pydantic's, without ``additional_properties`` when there are none (most of the time)."""
        for name, value in super().__repr_args__():
            if value is not None or name not in _QUIET:
                yield name, value

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        MODELS.add(cls)

    def __init__(self, /, **data: Any) -> None:
        made_from(self, data)


MODELS: set[type[Model]] = set()
"""Every ``Model`` class: their objects were checked when made, so a container holding them need not look inside."""


def made_from(model: Model, data: dict[str, Any]) -> None:
    """Make ``model`` from ``data`` (its fields by name): texts checked for lone surrogates, then pydantic's validation.

    The constructors call this directly (not ``super().__init__(**data)``): one call, no copy of ``data``.
    """
    for name, value in data.items():
        kind = value.__class__
        if kind is str:
            if not value.isascii() and _SURROGATE.search(value) is not None:  # isascii: one C pass
                _check_encodable(value, type(model).__name__, name)
        elif kind is tuple and _made(value):
            pass  # models made by their constructors, checked then (a message's contents, a response's messages)
        elif kind is dict or kind is list or kind is tuple or isinstance(value, (str, dict, list, tuple)):
            _check_encodable(value, type(model).__name__, name)  # containers, and subclasses of str
    try:
        model.__pydantic_validator__.validate_python(data, self_instance=model)
    except ValidationError as exc:
        raise _refused(type(model).__name__, exc) from None


IS_NONE = functools.partial(operator.is_, None)
"""``value is None``, called by pydantic's serializer without a Python frame (for ``exclude_if``)."""

Extra = Annotated[
    Union[dict[str, JsonValue], None],  # noqa: UP007 - evaluated at run time on Python 3.10
    BeforeValidator(lambda value: value or None),
    Field(exclude_if=IS_NONE),  # not written when there is none: stored messages keep their size
]
"""What another framework keeps on a message or a content that agent_nb has no field for (Agent
Framework's ``additional_properties``), carried unchanged; JSON values only, as everything agent_nb
stores; ``None`` when there is nothing (an empty dict is the same)."""
_QUIET = frozenset({"additional_properties", "total", "details"})
"""Optional fields a repr leaves out when they are ``None``."""


def _refused(where: str, exc: ValidationError) -> Exception:
    """Pydantic's first complaint as an ``ArgumentError``: the field, the value, and what it takes."""
    first = exc.errors(include_url=False)[0]
    field = ".".join(str(part) for part in first.get("loc", ())) or "the fields"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return bad_argument(where, field, first.get("input"), f"{first.get('msg', 'not valid')}{more}")


class TextContent(Model):
    """Plain text."""

    type: Literal["text"] = "text"
    text: str
    additional_properties: Extra = None
    """What another framework keeps on this content that agent_nb has no field for (JSON values)."""

    def __init__(self, text: Any = None, /, **data: Any) -> None:
        if (
            not data
            and type(self) is TextContent
            and text.__class__ is str
            and (text.isascii() or not _SURROGATE.search(text))
        ):
            made_as(self, {"type": "text", "text": text, "additional_properties": None}, {"text"})
            return  # a plain text, checked: nothing for pydantic to add
        if text is not None:
            data["text"] = text
        made_from(self, data)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_encodable(value: Any, where: str | Callable[[], str], field: str = "text") -> None:
    r"""Refuse a lone surrogate (what ``json.loads('"\ud800"')`` makes), in a text or anywhere inside a value.

    Only texts and containers are looked into: anything else holds no text of its own, and a
    model was checked when it was made. ``where`` may be a function, called only to say the error.
    """
    if isinstance(value, (dict, list, tuple)):
        for item in value.values() if isinstance(value, dict) else value:
            if item.__class__ not in MODELS and isinstance(item, (str, dict, list, tuple)):
                _check_encodable(item, where, field)
        return
    if isinstance(value, str) and not value.isascii() and (found := _SURROGATE.search(value)) is not None:
        where = where if isinstance(where, str) else where()
        at = found.start()
        raise bad_argument(
            where,
            field,
            value[max(at - 20, 0) : at + 20],
            f"it holds a lone surrogate {found.group()!r} at character {at}, which cannot be encoded as UTF-8, "
            "so no model could be sent it",
            "it often comes from cutting a JSON escape in two; fix the text, e.g. "
            "text.encode('utf-8', 'replace').decode()",
        )


class FunctionCallContent(Model):
    """A model's request to call a function (a tool)."""

    type: Literal["function_call"] = "function_call"
    call_id: str
    """Pairs the call with its ``FunctionResultContent``."""
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """Parsed arguments, or the raw JSON text a provider sent."""
    additional_properties: Extra = None
    """What another framework keeps on this content that agent_nb has no field for (JSON values)."""


class FunctionResultContent(Model):
    """The result of a function call, answering the call with the same ``call_id``."""

    type: Literal["function_result"] = "function_result"
    call_id: str
    result: Any = None
    """Any JSON-serialisable value."""
    exception: str | None = None
    """Set when the function raised; ``result`` is then ``None``."""
    additional_properties: Extra = None
    """What another framework keeps on this content that agent_nb has no field for (JSON values)."""


class UserInputRequestContent(Model):
    """An agent asks a human for input (or for approval of ``function_call``)."""

    type: Literal["user_input_request"] = "user_input_request"
    request_id: str
    prompt: str = ""
    options: tuple[str, ...] = ()
    """The choices offered, such as the action buttons of a card."""
    function_call: FunctionCallContent | None = None
    additional_properties: Extra = None
    """What another framework keeps on this content that agent_nb has no field for (JSON values)."""


class UserInputResponseContent(Model):
    """A human's answer to the ``UserInputRequestContent`` with the same ``request_id``."""

    type: Literal["user_input_response"] = "user_input_response"
    request_id: str
    text: str = ""
    approved: bool | None = None
    additional_properties: Extra = None
    """What another framework keeps on this content that agent_nb has no field for (JSON values)."""


class DataContent(Model):
    """Inline binary data such as an image or a file (base64 in JSON)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", defer_build=True, ser_json_bytes="base64", val_json_bytes="base64"
    )
    type: Literal["data"] = "data"
    data: bytes
    media_type: str
    additional_properties: Extra = None
    """What another framework keeps on this content that agent_nb has no field for (JSON values)."""


class UriContent(Model):
    """A reference to data that lives elsewhere."""

    type: Literal["uri"] = "uri"
    uri: str
    media_type: str | None = None
    additional_properties: Extra = None
    """What another framework keeps on this content that agent_nb has no field for (JSON values)."""


Content = Annotated[
    Union[  # noqa: UP007 - a discriminated union needs the Union form on Python 3.10
        TextContent,
        FunctionCallContent,
        FunctionResultContent,
        UserInputRequestContent,
        UserInputResponseContent,
        DataContent,
        UriContent,
    ],
    Field(discriminator="type"),
]
CONTENT_CLASSES: frozenset[type[Model]] = frozenset(get_args(get_args(Content)[0]))
"""The content models (the union's members), for an exact-class test (isinstance on a pydantic model: an ABC check)."""
_CONTENT_TYPES = (
    "text",
    "function_call",
    "function_result",
    "user_input_request",
    "user_input_response",
    "data",
    "uri",
)


def to_contents(value: Any, where: str | Callable[[], str] = "Message") -> Any:
    """Accept a string, or an iterable of strings, content objects and content dicts.

    Only constructors call this: JSON and dicts go straight to pydantic, which checks
    the ``type`` tags itself (and names the known ones when a tag is unknown). ``where``
    names the message in an error (a function of no arguments: made only for an error).
    """
    if isinstance(value, str):
        _check_encodable(value, where)
        return (TextContent(value),)
    kind = value.__class__
    if kind is not tuple and kind is not list:  # the common forms, without isinstance on ABCs
        if isinstance(value, (BaseModel, dict)):
            value = (value,)
        elif not isinstance(value, Iterable) or isinstance(value, bytes):
            raise bad_argument(_said(where), "contents", value, _ACCEPTED)
    out = []
    for item in value:
        if item.__class__ in CONTENT_CLASSES:  # made, so checked, already
            pass
        elif isinstance(item, str):
            _check_encodable(item, where)
            item = TextContent(item)
        elif isinstance(item, dict) and item.get("type") not in _CONTENT_TYPES:
            raise bad_argument(_said(where), "contents", item, f"its type must be one of: {', '.join(_CONTENT_TYPES)}")
        elif not isinstance(item, (BaseModel, dict)):
            raise bad_argument(_said(where), "contents", item, _ACCEPTED)
        out.append(item)
    return tuple(out)


_new = object.__new__
_M = TypeVar("_M", bound=BaseModel)
_set = object.__setattr__


def made_as(model: Any, values: dict[str, Any], given: set[str]) -> None:
    """Give ``model`` the field ``values`` its constructor already checked (``given``: the fields passed).

    What pydantic's ``model_construct`` does, without its cost: the four slots every pydantic
    model has (its fields, the fields set, no extras, no private attributes). For the common
    shapes only (a text, a message of texts, a response of messages, of these exact classes:
    a subclass may add fields); anything else goes through pydantic's validation.
    """
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", given)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)


def made(cls: type[_M], values: dict[str, Any], given: set[str]) -> _M:
    """A new ``cls`` given ``values`` (``made_as``): for a copy of a model whose fields are valid already."""
    model: _M = _new(cls)
    made_as(model, values, given)
    return model


def text_content(text: str) -> TextContent:
    """``TextContent(text)`` for a ``str`` known to hold no lone surrogate (checked by the caller)."""
    return made(TextContent, {"type": "text", "text": text, "additional_properties": None}, {"text"})


def plain_contents(items: Any) -> tuple[Any, ...] | None:
    """``items`` as contents when each is a plain text or a content already made, else ``None`` (then validate)."""
    if items.__class__ is not list and items.__class__ is not tuple:
        return None
    out = []
    for item in items:
        kind = item.__class__
        if kind is str:
            if not item.isascii() and _SURROGATE.search(item) is not None:
                return None  # the full path says what is wrong with it
            out.append(text_content(item))
        elif kind in CONTENT_CLASSES:
            out.append(item)
        else:
            return None
    return tuple(out)


def plain_text(value: Any) -> bool:
    """Whether ``value`` is ``None`` or a ``str`` with no lone surrogate (an optional text field, already fine)."""
    return value is None or (value.__class__ is str and (value.isascii() or _SURROGATE.search(value) is None))


def _made(items: tuple[Any, ...]) -> bool:
    """Whether every item is a model (made by its constructor, so already checked)."""
    for item in items:  # noqa: SIM110 - a loop: all() over a generator costs more than the test
        if item.__class__ not in MODELS:
            return False
    return True


def _said(where: str | Callable[[], str]) -> str:
    return where if isinstance(where, str) else where()


_ACCEPTED = "give a str, a content (TextContent, FunctionCallContent, ...), or a list of them"


def tool_work_as_text(content: Any) -> Any:
    """A function call or result as text (``[tool call c1: f({...})]``, ``[tool result c1: ...]``); others as they are.

    Used wherever a tool exchange must reach a model that cannot take it as such.
    """
    if content.type == "function_call":
        args = content.arguments if isinstance(content.arguments, str) else json.dumps(content.arguments)
        return TextContent(f"[tool call {content.call_id}: {content.name}({args})]")
    if content.type == "function_result":
        if content.exception:
            return TextContent(f"[tool result {content.call_id}: error: {content.exception}]")
        return TextContent(f"[tool result {content.call_id}: {json.dumps(content.result, default=str)}]")
    return content
