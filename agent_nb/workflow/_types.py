"""Type tests for handler dispatch (built once per handler) and build-time edge validation."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, Union, cast, get_args, get_origin

_NEVER = {typing.NoReturn, getattr(typing, "Never", typing.NoReturn)}
try:  # typing_extensions.Never differs from typing.Never on Python 3.10
    import typing_extensions

    _NEVER.add(typing_extensions.Never)
except ImportError:  # pragma: no cover - pydantic depends on typing_extensions
    pass

_UNIONS = (Union, types.UnionType)
_SEQUENCES = (list, tuple)


def flatten(spec: Any) -> tuple[Any, ...]:
    """The members of a union (``X | Y`` or ``Union[X, Y]``), or the spec itself."""
    if get_origin(spec) in _UNIONS:
        out: tuple[Any, ...] = ()
        for arg in get_args(spec):
            out += flatten(arg)
        return out
    return (spec,)


def is_never(spec: Any) -> bool:
    return spec in _NEVER


def _plain_classes(members: tuple[Any, ...]) -> tuple[type, ...] | None:
    if all(isinstance(m, type) and get_origin(m) is None for m in members):
        return members
    return None


@dataclass(frozen=True, slots=True)
class TypeTest:
    """How to tell whether a value fits a handler's type hint.

    ``covers`` decides from ``type(value)`` alone which values may fit; when ``exact``
    is true that is the whole answer, otherwise ``check(value)`` looks at the contents
    (the items of a ``list[X]``).
    """

    covers: tuple[type, ...]
    exact: bool
    check: Callable[[Any], bool]


def _always(value: Any) -> bool:
    return True


def _items_test(origin: type, item: Any) -> Callable[[Any], bool]:
    classes = _plain_classes(flatten(item))
    inner = None if classes is not None else compile_type(item)

    def check(value: Any) -> bool:
        if not isinstance(value, origin):
            return False
        items = cast("Iterable[Any]", value)
        if classes is not None:  # set(map(type, ...)) runs in C: one pass, then a check per distinct type
            return all(issubclass(k, classes) for k in set(map(type, items)))
        assert inner is not None
        return all(isinstance(v, inner.covers) and (inner.exact or inner.check(v)) for v in items)

    return check


@cache
def compile_type(spec: Any) -> TypeTest:
    """The ``TypeTest`` of a hint: a class, a union, ``list[X]``, ``tuple[X, ...]`` or ``Any``."""
    if spec is Any or spec is object:
        return TypeTest((object,), True, _always)
    origin = get_origin(spec)
    if origin is None:
        if isinstance(spec, type):
            return TypeTest((spec,), True, _always)
        return TypeTest((), True, _always)  # an unresolved hint never matches
    if origin in _UNIONS:
        members = flatten(spec)
        classes = _plain_classes(members)
        if classes is not None:
            return TypeTest(classes, True, _always)
        tests = [compile_type(m) for m in members]
        covers = tuple(dict.fromkeys(c for t in tests for c in t.covers))

        def any_member(value: Any) -> bool:
            return any(isinstance(value, t.covers) and (t.exact or t.check(value)) for t in tests)

        return TypeTest(covers, False, any_member)
    if origin in _SEQUENCES:
        args = [a for a in get_args(spec) if a is not Ellipsis]
        if not args or args[0] is Any:
            return TypeTest((origin,), True, _always)
        return TypeTest((origin,), False, _items_test(origin, args[0]))
    return TypeTest((origin,), True, _always) if isinstance(origin, type) else TypeTest((), True, _always)


def accepts(spec: Any, value: Any) -> bool:
    """Tell whether ``value`` fits the type hint ``spec``."""
    test = compile_type(spec)
    return isinstance(value, test.covers) and (test.exact or test.check(value))


def compatible(sent: Any, accepted: Any) -> bool:
    """Tell whether a value declared as ``sent`` could be taken by a handler declared for ``accepted``."""
    if sent is Any or accepted is Any or accepted is object:
        return True
    s_origin, a_origin = get_origin(sent), get_origin(accepted)
    if s_origin in _UNIONS:
        return any(compatible(s, accepted) for s in get_args(sent))
    if a_origin in _UNIONS:
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
    if origin in _UNIONS:
        return " | ".join(type_name(a) for a in get_args(spec))
    if origin is not None:
        args = ", ".join("..." if a is Ellipsis else type_name(a) for a in get_args(spec))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(spec, "__name__", repr(spec))
