"""Runtime type checks for handler dispatch and build-time edge validation."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Any, Union, get_args, get_origin

_NEVER = {typing.NoReturn, getattr(typing, "Never", typing.NoReturn)}
try:  # typing_extensions.Never differs from typing.Never on Python 3.10
    import typing_extensions

    _NEVER.add(typing_extensions.Never)
except ImportError:  # pragma: no cover - pydantic depends on typing_extensions
    pass

_SEQUENCES = (list, tuple)


def flatten(spec: Any) -> tuple[Any, ...]:
    """The members of a union (``X | Y`` or ``Union[X, Y]``), or the spec itself."""
    if get_origin(spec) in (Union, types.UnionType):
        out: tuple[Any, ...] = ()
        for arg in get_args(spec):
            out += flatten(arg)
        return out
    return (spec,)


def is_never(spec: Any) -> bool:
    return spec in _NEVER


def accepts(spec: Any, value: Any) -> bool:
    """Tell whether ``value`` fits ``spec``: a class, a union, ``list[X]``, ``tuple[X, ...]`` or ``Any``."""
    if spec is Any or spec is object:
        return True
    origin = get_origin(spec)
    if origin is None:
        return isinstance(spec, type) and isinstance(value, spec)
    if origin in (Union, types.UnionType):
        return any(accepts(arg, value) for arg in get_args(spec))
    if origin in _SEQUENCES:
        if not isinstance(value, origin):
            return False
        args = [a for a in get_args(spec) if a is not Ellipsis]
        return not args or all(accepts(args[0], item) for item in value)
    return isinstance(value, origin)


def compatible(sent: Any, accepted: Any) -> bool:
    """Tell whether a value declared as ``sent`` could be taken by a handler declared for ``accepted``."""
    if sent is Any or accepted is Any or accepted is object:
        return True
    s_origin, a_origin = get_origin(sent), get_origin(accepted)
    if s_origin in (Union, types.UnionType):
        return any(compatible(s, accepted) for s in get_args(sent))
    if a_origin in (Union, types.UnionType):
        return any(compatible(sent, a) for a in get_args(accepted))
    if s_origin is None and a_origin is None:
        return isinstance(sent, type) and isinstance(accepted, type) and issubclass(sent, accepted)
    s_base, a_base = s_origin or sent, a_origin or accepted
    if not (isinstance(s_base, type) and isinstance(a_base, type) and issubclass(s_base, a_base)):
        return False
    s_args = [a for a in get_args(sent) if a is not Ellipsis]
    a_args = [a for a in get_args(accepted) if a is not Ellipsis]
    return not s_args or not a_args or compatible(s_args[0], a_args[0])


def any_compatible(sent: Iterable[Any], accepted: Iterable[Any]) -> bool:
    accepted = tuple(accepted)
    return any(compatible(s, a) for s in sent for a in accepted)


def type_name(spec: Any) -> str:
    """``str``, ``list[str | Message]``: how a type reads in an error message."""
    if spec is Any:
        return "Any"
    origin = get_origin(spec)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in get_args(spec))
    if origin is not None:
        args = ", ".join("..." if a is Ellipsis else type_name(a) for a in get_args(spec))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(spec, "__name__", repr(spec))
