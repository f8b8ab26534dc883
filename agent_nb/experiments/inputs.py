"""An experiment's inputs, made one shape: ``Case`` (an id, what the user says turn by turn, the rest).

Accepted: strings, messages, dicts (``{"id", "input" or "turns", "expected", ...}``), lists of
user turns (a multi-turn script), or the path of a JSONL file of any of those. Ids are the ones
given, else the input's position; two inputs with one id are refused, since a stored cell is
found again by its id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ArgumentError, bad_argument
from ..messages import Message
from .configs import plain_value

__all__ = ["Case", "read_inputs"]

WHERE = "Experiment"


@dataclass(frozen=True)
class Case:
    """One input: ``turns`` holds what the user says, one run per turn (a single input is one turn)."""

    id: str
    turns: tuple[Any, ...]
    fields: Mapping[str, Any] = field(default_factory=dict)
    """The input's other fields (``expected``, ``scenario``, …), for the build function and the scorers."""

    @property
    def input(self) -> Any:
        """The first turn: the input, for a single-turn case."""
        return self.turns[0]

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def identity(self) -> Any:
        """What the experiment's hash reads of this case (JSON-ready)."""
        return [self.id, plain_value(list(self.turns)), plain_value(dict(self.fields))]


def read_inputs(inputs: Any) -> tuple[Case, ...]:
    """The cases of ``inputs``, in order; a bad entry is an ``ArgumentError`` naming its position."""
    if isinstance(inputs, (str, Path)) and str(inputs).endswith(".jsonl"):
        entries: Iterable[Any] = _jsonl(Path(inputs))
    elif isinstance(inputs, (str, Message, Mapping)) or not isinstance(inputs, Iterable):
        raise bad_argument(
            WHERE,
            "inputs",
            inputs,
            "give a list of inputs (strings, messages, dicts, or lists of user turns) or the path of a .jsonl file",
        )
    else:
        entries = inputs
    cases: list[Case] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        case = _case(i, entry)
        if case.id in seen:
            raise ArgumentError(
                f"{WHERE}: two inputs have the id {case.id!r} (the second at position {i}); give each a distinct "
                "'id', since a stored cell is found again by its input's id",
                argument="inputs",
            )
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise ArgumentError(f"{WHERE}: inputs is empty; give at least one input", argument="inputs")
    return tuple(cases)


def _case(i: int, entry: Any) -> Case:
    if isinstance(entry, (str, Message)):
        return Case(str(i), (entry,))
    if isinstance(entry, Mapping):
        fields = {str(k): v for k, v in entry.items()}
        given_id = fields.pop("id", i)
        if not isinstance(given_id, (str, int)) or isinstance(given_id, bool):
            raise bad_argument(WHERE, f"inputs[{i}]['id']", given_id, "give a str or an int")
        if "turns" in fields:
            turns = fields.pop("turns")
            if isinstance(turns, (str, Message)) or not isinstance(turns, (list, tuple)) or not turns:
                raise bad_argument(WHERE, f"inputs[{i}]['turns']", turns, "give a non-empty list of user turns")
            return Case(str(given_id), tuple(_turn(i, t) for t in turns), fields)
        if "input" not in fields:
            raise ArgumentError(
                f"{WHERE}: inputs[{i}] has neither 'input' nor 'turns' (keys: {', '.join(fields) or 'none'}); "
                "give {'input': ...} for one turn or {'turns': [...]} for a script",
                argument="inputs",
            )
        return Case(str(given_id), (_turn(i, fields.pop("input")),), fields)
    if isinstance(entry, (list, tuple)) and entry:
        return Case(str(i), tuple(_turn(i, t) for t in entry))
    raise bad_argument(
        WHERE, f"inputs[{i}]", entry, "give a str, a Message, a dict with 'input' or 'turns', or a list of user turns"
    )


def _turn(i: int, turn: Any) -> Any:
    """A user turn: a text or a message; for a harness also ``("click", action)`` or ``("say", text)``."""
    if isinstance(turn, (str, Message)):
        return turn
    if isinstance(turn, (list, tuple)) and len(turn) == 2 and turn[0] in ("say", "click") and isinstance(turn[1], str):
        return (turn[0], turn[1])
    raise bad_argument(WHERE, f"a turn of inputs[{i}]", turn, "give a str, a Message, or ('click', action)")


def _jsonl(path: Path) -> list[Any]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ArgumentError(f"{WHERE}: cannot read the inputs file {path}: {exc}", argument="inputs") from exc
    entries = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                entries.append(json.loads(line))
            except ValueError as exc:
                raise ArgumentError(
                    f"{WHERE}: line {n} of {path} is not JSON ({exc}); each line holds one input", argument="inputs"
                ) from exc
    return entries
