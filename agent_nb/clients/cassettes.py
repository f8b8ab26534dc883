"""The cassette file: its format, its seal, the checks that load it or refuse it, and its command line.

A cassette is JSON, ``{"format": 2, "interactions": [...]}``: each interaction holds a request
(``request_of``: the model, messages, options, tools, streamed or not) and its answer
(``response``, or every streamed ``chunks``). The clients that record and replay cassettes,
and ``cassette_client``, are in ``agent_nb.clients.replay``.

**Sealed.** Each interaction carries ``sha256`` (``seal_of``), the hash of the canonical JSON
(sorted keys, no spaces) of its request and answer. A cassette whose answers were edited by hand,
or that is damaged (invalid JSON, a missing answer, a wrong type, an unknown role), is refused
with a ``CassetteError`` naming the file and the interaction. ``check(path)`` checks a cassette
as a replay would; ``seal(path)`` re-seals one edited on purpose. ``main`` is their command line,
run through the replay module::

    python -m agent_nb.clients.replay seal cassettes/trip.json      # or: check PATH...

**Written whole, without secrets.** Every write goes to a temporary file beside the cassette that
then replaces it, and is redacted of every known secret (``OPENAI_API_KEY``, and those given),
answers included. The redaction is ``agent_nb.clients.redaction``'s, the one every client uses:
a request is written through ``redact_tree`` (what sits under a key that names a key, token,
secret, password or authorisation is masked, and every known secret and every ``Bearer`` or
``Basic`` credential), an answer through ``scrub_tree``. ``Sealer`` redacts and seals each
interaction once: a recording keeps the sealed form of those already written, so each write
only adds the new one (``RecordingChatClient``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from ..disk import os_problem, write_whole
from ..errors import AgentNbError, CassetteError
from ..messages import ChatResponse, ChatResponseUpdate, Message
from .redaction import Scrubber, redact_tree, scrub_tree

FORMAT = 2
"""Format 2: every interaction sealed with ``sha256``. Format 1 (no seals) is read only by ``seal``."""
REDACTED = "<redacted>"
RECORD_VARIABLE = "AGENT_NB_RECORD"
_SEAL = "sha256"
_ANSWERS = ("response", "chunks")


def request_of(
    messages: Sequence[Message], options: Mapping[str, Any] | None, *, stream: bool, model: str | None
) -> dict[str, Any]:
    """What a cassette stores of a request, in a form that compares exactly."""
    opts: dict[str, Any] = {}
    for key, value in sorted((options or {}).items()):
        if key == "tools":
            value = [t.schema() if hasattr(t, "schema") else t for t in value]
        opts[key] = to_jsonable_python(value, fallback=lambda v: f"<{type(v).__name__}>")
    return {
        "model": model,
        "stream": stream,
        "messages": [m.model_dump(mode="json", exclude_none=True) for m in messages],
        "options": opts,
    }


def _environment_secrets() -> list[str]:
    return [os.environ.get("OPENAI_API_KEY", "")]


def _canonical(interaction: Mapping[str, Any]) -> str:
    body = {k: interaction[k] for k in ("request", *_ANSWERS) if k in interaction}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def seal_of(interaction: Mapping[str, Any]) -> str:
    """The seal of one interaction: the SHA-256 of the canonical JSON of its request and answer."""
    return hashlib.sha256(_canonical(interaction).encode("utf-8")).hexdigest()


def _how_to_fix(path: Path) -> str:
    return (
        f"record it again ({RECORD_VARIABLE}=1), or, if you changed it on purpose, fix it and re-seal it: "
        f"python -m agent_nb.clients.replay seal {str(path)!r} (or agent_nb.clients.replay.seal(path))"
    )


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(p) for p in problem.get("loc", ())) or "it"
    given = repr(problem.get("input"))
    given = given if len(given) <= 60 else given[:59] + "…"
    return f"{where}: {problem.get('msg', 'not valid')} (given {given})"


class _Cassette:
    """The file: read and checked once; written whole, through a temporary file beside it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def temporary(self) -> Path:
        """A new file beside the cassette (hidden, its own name: two writers never share one)."""
        handle, name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        os.close(handle)
        return Path(name)

    def _refuse_a_folder(self) -> None:
        if self.path.is_dir():
            raise CassetteError(f"the cassette path {self.path} is a folder, not a file; give the path of a .json file")

    def text(self) -> str:
        self._refuse_a_folder()
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CassetteError(
                f"there is no cassette at {self.path}: record it first, with {RECORD_VARIABLE}=1 in the "
                "environment (or record=True), against the real model"
            ) from None
        except UnicodeDecodeError as exc:
            raise CassetteError(
                f"the cassette {self.path} is not UTF-8 text ({exc.reason}); {_how_to_fix(self.path)}"
            ) from None
        except OSError as exc:
            raise CassetteError(
                f"cannot read the cassette {self.path} ({type(exc).__name__}: {exc.strerror or exc})"
            ) from None

    def read(self, *, sealed: bool = True) -> list[dict[str, Any]]:
        """The interactions, each checked (its shape, its messages, its answer, and its seal when ``sealed``)."""
        text = self.text()
        try:
            data = json.loads(text)
        except ValueError as exc:
            where = (
                f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
                if isinstance(exc, json.JSONDecodeError)
                else str(exc)
            )
            raise CassetteError(
                f"the cassette {self.path} is not valid JSON ({where}); {_how_to_fix(self.path)}"
            ) from None
        version = data.get("format") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list) or version not in (1, FORMAT):
            raise CassetteError(
                f"the cassette {self.path} is not one this agent_nb reads (it reads format {FORMAT}: an object with "
                f'"format": {FORMAT} and a list of "interactions"); record it again'
            )
        if version == 1 and sealed:
            raise CassetteError(
                f"the cassette {self.path} is in format 1, which has no seals, so an edited answer would go "
                f"unnoticed; check it, then seal it: python -m agent_nb.clients.replay seal {str(self.path)!r} "
                f"(or agent_nb.clients.replay.seal(path)), or record it again ({RECORD_VARIABLE}=1)"
            )
        interactions = data["interactions"]
        for i, interaction in enumerate(interactions, start=1):
            problem = _problem(interaction, sealed=sealed)
            if problem is not None:
                raise CassetteError(
                    f"the cassette {self.path}, interaction {i} of {len(interactions)}: {problem}; "
                    + _how_to_fix(self.path)
                )
        return [dict(i) for i in interactions]

    def check_writable(self) -> None:
        """Refuse, before any model is called, a destination that cannot be written."""
        self._refuse_a_folder()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.temporary().unlink()
        except OSError as exc:
            why = os_problem(exc, self.path.parent, "record to a path you can write to")
            raise CassetteError(f"cannot record the cassette {self.path}: {why}") from None

    def snapshot(self) -> bytes | None:
        """The file's bytes as they are now (``None``: no file), to put back if a recording fails."""
        self._refuse_a_folder()
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CassetteError(
                f"cannot record the cassette {self.path}: the one there cannot be read, to be kept in case "
                f"the recording fails ({type(exc).__name__}: {exc.strerror or exc})"
            ) from None

    def write_bytes(self, data: bytes | None) -> None:
        """Replace the file by ``data`` (``None``: remove it), through a temporary file beside it."""
        try:
            if data is None:
                self.path.unlink(missing_ok=True)
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(self.path, data)
        except OSError as exc:
            raise CassetteError(
                f"cannot write the cassette {self.path} ({type(exc).__name__}: {exc.strerror or exc}); "
                "make its folder writable, or record to another path"
            ) from None

    def write(self, interactions: list[dict[str, Any]], secrets: Iterable[str] = ()) -> None:
        """Write ``interactions``, each redacted of ``secrets`` and sealed."""
        sealer = Sealer(secrets)
        self.write_sealed([sealer.seal(interaction) for interaction in interactions])

    def write_sealed(self, pieces: Sequence[str]) -> None:
        """Write interactions already redacted, sealed and serialised (``Sealer.seal``), whole."""
        self.write_bytes(document(pieces).encode("utf-8"))


class Sealer:
    """Redacts interactions of every known secret and seals them, with one compiled scrubber.

    ``seal`` gives an interaction as the cassette holds it: its JSON text, at the indentation of
    the file (``document`` joins them). ``secrets`` are those given and ``OPENAI_API_KEY``.
    """

    def __init__(self, secrets: Iterable[str] | Scrubber = ()) -> None:
        self.scrubber = Scrubber.of(secrets).adding(_environment_secrets())

    def clean(self, interaction: Mapping[str, Any]) -> dict[str, Any]:
        """The interaction redacted (its request by ``redact_tree``, its answer by ``scrub_tree``) and sealed."""
        clean = {
            k: scrub_tree(v, self.scrubber, mask=REDACTED, answer=True)  # answers: a model's own words
            if k in _ANSWERS
            else redact_tree(v, self.scrubber, mask=REDACTED)
            for k, v in interaction.items()
            if k != _SEAL
        }
        clean[_SEAL] = seal_of(clean)
        return clean

    def seal(self, interaction: Mapping[str, Any]) -> str:
        """The interaction redacted and sealed, as the text the cassette holds."""
        return serialised(self.clean(interaction))


def serialised(sealed: Mapping[str, Any]) -> str:
    """One sealed interaction as it reads in the cassette file (indented as an item of its list)."""
    text = json.dumps(sealed, indent=1, ensure_ascii=False)
    return "\n".join("  " + line for line in text.split("\n"))  # JSON text has no raw newline in a string


def document(pieces: Sequence[str]) -> str:
    """The cassette file made of serialised interactions: what ``json.dumps`` (``indent=1``) writes."""
    if not pieces:
        return json.dumps({"format": FORMAT, "interactions": []}, indent=1) + "\n"
    items = ",\n".join(pieces)
    return f'{{\n "format": {FORMAT},\n "interactions": [\n{items}\n ]\n}}\n'


def _problem(interaction: Any, *, sealed: bool) -> str | None:
    """What is wrong with one interaction of a cassette, or ``None``."""
    if not isinstance(interaction, dict):
        return f"it should be an object with a request and its answer, not {type(interaction).__name__}"
    request = interaction.get("request")
    if not isinstance(request, dict):
        return 'it has no "request" object'
    for key, kinds, name in (
        ("model", (str, type(None)), "a string or null"),
        ("stream", (bool,), "true or false"),
        ("messages", (list,), "a list"),
        ("options", (dict,), "an object"),
    ):
        if key not in request or not isinstance(request[key], kinds):
            given = json.dumps(request[key])[:40] if key in request else "missing"
            return f"request.{key} should be {name}, not {given}"
    for j, message in enumerate(request["messages"]):
        try:
            Message.model_validate_json(json.dumps(message))
        except ValidationError as exc:
            return f"request.messages[{j}]: {_first_problem(exc)}"
    answers = [k for k in _ANSWERS if k in interaction]
    expected = "chunks" if request["stream"] else "response"
    if answers != [expected]:
        found = " and ".join(f'"{a}"' for a in answers) or "no answer"
        return f'a {"streamed" if request["stream"] else "whole"} request is answered by "{expected}"; it has {found}'
    try:
        if expected == "response":
            if not isinstance(interaction["response"], dict):
                return "response should be an object"
            ChatResponse.model_validate_json(json.dumps(interaction["response"]))
        else:
            if not isinstance(interaction["chunks"], list):
                return "chunks should be a list"
            for j, chunk in enumerate(interaction["chunks"]):
                try:
                    ChatResponseUpdate.model_validate_json(json.dumps(chunk))
                except ValidationError as exc:
                    return f"chunks[{j}]: {_first_problem(exc)}"
    except ValidationError as exc:
        return f"response: {_first_problem(exc)}"
    if sealed:
        seal = interaction.get(_SEAL)
        if not isinstance(seal, str):
            return "it has no seal (sha256)"
        if seal != seal_of(interaction):
            return "it was changed after it was recorded (its sha256 seal does not match its request and answer)"
    return None


def seal(path: str | os.PathLike[str], *, secrets: Iterable[str] = ()) -> int:
    """Seal the cassette at ``path`` again, after changing it on purpose; the number of interactions.

    Every interaction is checked as a replay checks it (but for its seal), redacted of ``secrets``
    and ``OPENAI_API_KEY``, and given a new seal; a format-1 cassette becomes format 2.
    """
    cassette = _Cassette(path)
    interactions = cassette.read(sealed=False)
    cassette.write(interactions, secrets)
    return len(interactions)


def check(path: str | os.PathLike[str]) -> int:
    """Check the cassette at ``path`` as a replay would (shape and seals); the number of interactions."""
    return len(_Cassette(path).read())


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agent_nb.clients.replay seal|check PATH...``: re-seal (or check) cassettes."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] not in ("seal", "check"):
        print(
            "usage: python -m agent_nb.clients.replay seal PATH...   seal cassettes again after editing them\n"
            "       python -m agent_nb.clients.replay check PATH...  check cassettes as a replay would",
            file=sys.stderr,
        )
        return 2
    command, paths = args[0], args[1:]
    status = 0
    for path in paths:
        try:
            n = seal(path) if command == "seal" else check(path)
        except AgentNbError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            status = 1
        else:
            print(f"{path}: {'sealed' if command == 'seal' else 'good'}, {n} interaction{'s' if n != 1 else ''}")
    return status
