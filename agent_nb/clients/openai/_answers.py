"""Checking what a server sent back: answers read as plain JSON data, then checked field by field.

``plain`` turns an SDK object into the JSON data it was made from; ``get`` and ``an_object`` take
a field out of it only if it is of the expected kind, else raise ``Malformed`` (where, what was
expected, what came instead: ``kind_of``), which the client turns into a ``ModelError``
(``OpenAIClientBase.bad_answer``, which shows at most ``_SHOWN`` characters of it, ``as_json``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_SHOWN = 300
"""How much of a bad answer an error shows."""
_MISSING: Any = object()
_KINDS: dict[type, str] = {str: "a string", int: "a number", list: "a list", dict: "an object", bool: "true or false"}


def kind_of(value: Any) -> str:
    """What a JSON value is, in words: ``a string``, ``null``, ``a list`` ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


class Malformed(Exception):
    """A field of an answer that is missing or of the wrong type; the client raises a ``ModelError`` for it."""

    def __init__(self, where: str, expected: str, got: Any = _MISSING) -> None:
        self.where, self.expected, self.got = where, expected, got
        super().__init__(self.describe())

    def describe(self) -> str:
        if self.got is _MISSING:
            return f"{self.where} is missing (it should be {self.expected})"
        return f"{self.where} should be {self.expected}, not {kind_of(self.got)}"


def get(obj: Mapping[str, Any], key: str, kind: type, where: str = "", *, required: bool = False) -> Any:
    """``obj[key]`` if it is of ``kind`` (``None`` when absent or null, unless ``required``); else ``Malformed``."""
    path = f"{where}.{key}" if where else key
    value = obj.get(key)
    if value is None:
        if required:
            raise Malformed(path, _KINDS[kind], _MISSING if key not in obj else None)
        return None
    ok = (isinstance(value, int) and not isinstance(value, bool)) if kind is int else isinstance(value, kind)
    if not ok:
        raise Malformed(path, _KINDS[kind], value)
    return value


def an_object(value: Any, where: str) -> dict[str, Any]:
    """An element of a list that must be an object."""
    if not isinstance(value, dict):
        raise Malformed(where, "an object", value)
    return value


def plain(value: Any) -> Any:
    """An SDK object as the JSON data it was made from (fields it was given, and extra ones; no defaults)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    fields = getattr(value, "model_fields_set", None)
    if isinstance(fields, (set, frozenset)) and hasattr(value, "__dict__"):  # a pydantic model, as the SDK builds it
        out = {k: plain(v) for k, v in vars(value).items() if k in fields}
        out.update({str(k): plain(v) for k, v in (getattr(value, "__pydantic_extra__", None) or {}).items()})
        return out
    return value


def as_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _looks_like_html(text: str) -> bool:
    start = text.lstrip()[:300].lower()
    return start.startswith(("<!doctype", "<html", "<head", "<body")) or "<html" in start
