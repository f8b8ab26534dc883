"""What makes an experiment the same experiment: a hash of its code and of what its code reads.

The store keys an experiment by a hash of its definition, so a change to the build function must
change the hash, or old cells would be mixed with new ones. ``code_digest`` therefore follows the
code where it goes: the functions and classes of the user's own modules it names (in any module
of theirs, not only the build's), the constants they read (texts, numbers, tuples), the values
their closures hold, their default arguments, and the settings of objects they use (a client's
model or words). Library code (the standard library, installed packages, agent_nb) counts by its
name only. What no hash can see — a file the build reads, the environment, the contents of a
mutable list or dict, which change as a run goes — is for the user to mark with another ``name=``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import inspect
import json
import sys
import sysconfig
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..clients.redaction import is_secret_key
from ..messages import Message
from ..workflow import AgentExecutor, Workflow
from .configs import plain_value

__all__ = ["IDENTITY", "code_digest", "definition_id", "object_settings", "target_identity", "users_module"]

IDENTITY = 2
"""The scheme of this module; a stored definition of another scheme was hashed differently."""

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_MAX_ITEMS = 1000
"""A constant tuple longer than this counts by its length and its first items."""


@functools.cache
def _library_roots() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    return tuple({Path(paths[k]).resolve() for k in ("purelib", "platlib", "stdlib", "platstdlib")})


@functools.cache
def users_module(name: str) -> bool:
    """Whether module ``name`` is the user's own code: ``__main__`` (a notebook, a script) or a file of theirs.

    The standard library, installed packages (and agent_nb, by name: it may be installed in place)
    and built-in modules are not.
    """
    if name == "__main__":
        return True
    if name.split(".")[0] in ("agent_nb", "cloudpickle"):
        return False
    module = sys.modules.get(name)
    if module is None:  # code made without an importable module (exec'd, a notebook's own): the user's
        return True
    file = getattr(module, "__file__", None)
    if file is None:
        return False
    where = Path(file).resolve()
    return where.suffix == ".py" and not any(root in where.parents for root in _library_roots())


def code_digest(value: Any) -> str:
    """A hash of a function's (a class's, a callable object's) code and of everything of the user's it reads."""
    digest = hashlib.sha256()
    _Reader(digest).follow(value)
    return digest.hexdigest()[:16]


def object_settings(value: Any) -> dict[str, Any]:
    """An object's public settings that are plain values (a client's model, a mirror's words); secrets left out."""
    attributes = getattr(value, "__dict__", None)
    if not isinstance(attributes, Mapping):
        return {}
    return {
        k: v for k, v in sorted(attributes.items()) if not k.startswith("_") and not is_secret_key(k) and _frozen(v)
    }


def _frozen(value: Any) -> bool:
    """A value that cannot change after it is made: plain, or a tuple or frozenset of such."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (tuple, frozenset)):
        return len(value) <= _MAX_ITEMS and all(_frozen(v) for v in value)
    return False


class _Reader:
    """Walks code and the values it reads, feeding what identifies them to ``digest``."""

    def __init__(self, digest: Any) -> None:
        self.digest = digest
        self.seen: set[int] = set()
        self.alive: list[Any] = []  # what was walked stays referenced, so no id in ``seen`` is reused meanwhile

    def add(self, text: str) -> None:
        self.digest.update(text.encode("utf-8", "surrogatepass") + b"\0")

    def follow(self, item: Any) -> None:
        """A callable, a class or a module: its code if it is the user's, else its name."""
        if id(item) in self.seen:
            self.add("(again)")
            return
        self.seen.add(id(item))
        self.alive.append(item)
        if isinstance(item, (types.MethodType, functools.partial)):
            if isinstance(item, types.MethodType):
                self.follow(item.__func__)
                self.value(item.__self__)
            else:
                self.follow(item.func)
                self.value(item.args)
                self.settings(item.keywords)
            return
        if isinstance(item, (staticmethod, classmethod)):
            self.follow(item.__func__)
            return
        if isinstance(item, property):
            for accessor in (item.fget, item.fset, item.fdel):
                if accessor is not None:
                    self.follow(accessor)
            return
        if not (inspect.isfunction(item) or inspect.isclass(item) or inspect.ismodule(item) or inspect.isbuiltin(item)):
            self.value(item)  # a callable object: its class, and its settings
            return
        module = getattr(item, "__module__", None)
        name = getattr(item, "__qualname__", None) or item.__name__
        if inspect.ismodule(item) or not isinstance(module, str) or not users_module(module):
            self.add(f"{module}.{name}")  # library code: known by its name
            return
        self.add(name)  # the user's code: by its name and what follows, wherever its module is
        if inspect.isclass(item):
            for key, member in sorted(vars(item).items()):
                if key.startswith("__") and key.endswith("__") and key not in ("__init__", "__call__"):
                    continue
                self.add(key)
                self.value(member)
            return
        code = getattr(item, "__code__", None)
        if code is None:
            return
        self.code(code)
        self.value(getattr(item, "__defaults__", None))
        self.settings(getattr(item, "__kwdefaults__", None))
        for cell in getattr(item, "__closure__", None) or ():
            try:
                self.value(cell.cell_contents)
            except ValueError:  # a cell not filled yet
                self.add("(empty)")
        space = getattr(item, "__globals__", {})
        names = _names(code)
        for global_name in sorted(names):
            if global_name in space:
                self.add(global_name)
                self.value(space[global_name], names)

    def code(self, code: types.CodeType) -> None:
        """The code's bytes, constants and names, nested functions included."""
        self.digest.update(code.co_code)
        for const in code.co_consts:
            if inspect.iscode(const):
                self.code(const)
            else:
                self.value(const)  # a frozenset constant (``x in {"a", "b"}``) in a stable order
        self.add(repr(code.co_names))

    def value(self, value: Any, names: frozenset[str] = frozenset()) -> None:
        """A value the code reads: plain values and frozen containers whole, code followed, objects by their settings.

        A list, a dict or a set counts by its type only: it may change as a run goes (a cache of
        clients, a log), and an experiment must keep its identity from one run to the next.
        """
        if isinstance(value, _PLAIN):
            self.add(f"{type(value).__name__}:{value!r}")
        elif isinstance(value, (tuple, frozenset)):
            items = sorted(value, key=repr) if isinstance(value, frozenset) else list(value)
            self.add(f"{type(value).__name__}[{len(items)}]")
            for item in items[:_MAX_ITEMS]:
                self.value(item)
        elif isinstance(value, types.MappingProxyType):
            self.settings(value)
        elif isinstance(value, (list, dict, set, bytearray)):
            self.add(type(value).__qualname__)
        elif isinstance(value, Message):
            self.add(value.model_dump_json(exclude_none=True))
        elif isinstance(value, enum.Enum):
            self.add(f"{type(value).__qualname__}.{value.name}")
        elif inspect.ismodule(value):
            self.add(f"module {value.__name__}")
            if users_module(value.__name__):  # ``helpers.make_client``: what the code names of it
                for attribute in sorted(names & vars(value).keys()):
                    self.add(attribute)
                    self.value(vars(value)[attribute])
        elif (
            inspect.isfunction(value)
            or inspect.isclass(value)
            or inspect.isbuiltin(value)
            or isinstance(value, (types.MethodType, functools.partial, staticmethod, classmethod, property))
        ):
            self.follow(value)
        elif dataclasses.is_dataclass(value) and getattr(
            getattr(type(value), "__dataclass_params__", None), "frozen", False
        ):
            self.add(type(value).__qualname__)
            self.settings({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
        else:  # an object: its class, and the settings that cannot change under it
            self.add(f"{type(value).__module__}.{type(value).__qualname__}")
            if users_module(type(value).__module__):
                self.follow(type(value))
            self.settings(object_settings(value))

    def settings(self, values: Mapping[Any, Any] | None) -> None:
        """Named values that belong to the definition (defaults, settings, a partial's keywords): each whole."""
        for key, item in sorted((values or {}).items(), key=lambda kv: str(kv[0])):
            if not is_secret_key(str(key)):
                self.add(str(key))
                self.value(item)


def _names(code: types.CodeType) -> frozenset[str]:
    """The global and attribute names a code object (and the code nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _names(const)
    return frozenset(names)


def definition_id(definition: Mapping[str, Any]) -> str:
    """A stable hash of an experiment's definition: its id in the store, the same in every process."""
    text = json.dumps(definition, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def target_identity(build: Callable[..., Any] | None, ready: Workflow | None) -> Any:
    """A build function by name and code; a ready workflow by its graph, modes, agents and their clients' settings."""
    if build is not None:
        return {"build": plain_value(build), "code": code_digest(build)}
    assert ready is not None
    executors = []
    for eid, ex in sorted(ready.executors.items()):
        part: dict[str, Any] = {"id": eid, "class": type(ex).__qualname__}
        if isinstance(ex, AgentExecutor):
            agent = ex.agent
            client = getattr(agent, "client", None)
            part.update(
                mode=ex.context_mode,
                filter=None
                if ex.context_filter is None
                else [plain_value(ex.context_filter), code_digest(ex.context_filter)],
                agent=type(agent).__qualname__,
                instructions=getattr(agent, "instructions", None),
                client=type(client).__qualname__,
                settings={k: plain_value(v) for k, v in object_settings(client).items()},
                tools=sorted(
                    code_digest(getattr(t, "fn", t)) + code_digest(t) for t in getattr(agent, "tools", None) or ()
                ),
            )
        else:
            part["code"] = code_digest(type(ex))
        executors.append(part)
    edges = [f"{g.kind} {','.join(g.sources)}->{','.join(g.targets)}" for g in ready.groups]
    return {"workflow": ready.name, "start": ready.start_executor_id, "executors": executors, "edges": edges}
