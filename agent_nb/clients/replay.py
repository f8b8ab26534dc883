"""Record a real model's answers once, replay them forever: cassettes for notebooks that run as tests.

```python
from agent_nb.clients.replay import cassette_client

client = cassette_client("cassettes/trip.json", lambda: OpenAIChatClient("gemma", base_url=URL))
```

It replays from the file, with no network; ``AGENT_NB_RECORD=1`` in the environment (or
``record=True``) calls the real client instead and writes what it answered. A cassette is JSON:
each request (the model, messages, options, tools, streamed or not) and its answer (the response,
or every streamed chunk). A request that does not match the next recorded one fails with a diff and the
way to record again.

**Recording is safe.** Making a recorder changes nothing: the cassette is first written when the
first answer arrives, and every write goes to a temporary file beside the cassette that then
replaces it whole. If a real call fails (or is interrupted), the recording stops and the cassette
is put back as it was before the recording began; the next call through that recorder is refused.
A destination that cannot be written is refused when the recorder is made, before any call.

**Cassettes are sealed.** Each interaction carries ``sha256``, the hash of the canonical JSON
(sorted keys, no spaces) of its request and answer. A cassette whose answers were edited by hand,
or that is damaged (invalid JSON, a missing answer, a wrong type, an unknown role), is refused
with a ``CassetteError`` naming the file and the interaction. To keep a hand edit on purpose,
re-seal the file::

    python -m agent_nb.clients.replay seal cassettes/trip.json      # or: replay.seal(path)

**Nothing secret is written.** Values under keys that name a key, token, secret, password or
authorisation are redacted from requests, and every known secret is redacted wherever it appears,
in answers too (a server that echoes the key back): the real client's own (its API key, the
values of its secret headers and options), ``OPENAI_API_KEY``, the secrets of each request's
options (``extra_headers``), and any ``secrets=`` given to ``cassette_client`` or the clients.
A ``Bearer`` token is redacted wherever it appears. The recorder hands the caller the answer as it
is written (redacted), so a recording and its replay behave the same; a ``CassetteError`` diff
never shows a known secret.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from ..errors import AgentNbError, CassetteError
from ..messages import ChatResponse, ChatResponseUpdate, Message
from .base import Capabilities, ChatClient, HistoryMode, capabilities_of, history_mode_of
from .redaction import SECRET_KEY, TextScrubber, scrub, scrub_tree, secrets_in

if TYPE_CHECKING:
    from ..sessions import AgentSession

__all__ = ["FORMAT", "RecordingChatClient", "ReplayChatClient", "cassette_client", "check", "seal"]

FORMAT = 2
"""Format 2: every interaction sealed with ``sha256``. Format 1 (no seals) is read only by ``seal``."""
REDACTED = "<redacted>"
_SECRET_KEY = SECRET_KEY
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+")
RECORD_VARIABLE = "AGENT_NB_RECORD"
_SEAL = "sha256"
_ANSWERS = ("response", "chunks")


def cassette_client(
    path: str | os.PathLike[str],
    real: Callable[[], ChatClient],
    *,
    record: bool | None = None,
    secrets: Iterable[str] = (),
) -> Any:
    """A client that replays ``path``, or, when recording, calls ``real()`` and writes ``path``.

    ``record=None`` follows the environment: ``AGENT_NB_RECORD=1`` records. ``real()`` is called in
    both cases (making a client sends nothing): the replay then checks that the recording was made
    with the same model, and declares the real client's capabilities and history mode.
    ``secrets`` are strings never to write (when recording) nor show (in a replay's errors), on top of
    those the real client knows.
    """
    if record is None:
        record = os.environ.get(RECORD_VARIABLE, "") in ("1", "true", "yes")
    client = real()
    if record:
        return RecordingChatClient(client, path, secrets=secrets)
    return ReplayChatClient(
        path,
        model=getattr(client, "model", None),
        capabilities=capabilities_of(client),
        history_mode=history_mode_of(client),
        secrets=[*secrets, *_own_secrets(client)],
    )


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


def _redact(value: Any) -> Any:
    """A request with what sits under a secret-naming key, and every ``Bearer`` token, redacted."""
    if isinstance(value, dict):
        return {
            k: REDACTED if _SECRET_KEY.search(str(k)) and not isinstance(v, dict) else _redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v) for v in value]
    if isinstance(value, str):
        return _BEARER.sub(f"Bearer {REDACTED}", value)
    return value


def _own_secrets(client: object) -> list[str]:
    """The secrets a client says it holds (agent_nb's OpenAI clients name theirs)."""
    own = getattr(client, "_secrets", None)
    if not callable(own):
        return []
    try:
        return [s for s in own() if isinstance(s, str)]
    except Exception:  # a client that cannot say has nothing to add
        return []


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
            raise CassetteError(
                f"cannot record the cassette {self.path}: its folder cannot be written "
                f"({type(exc).__name__}: {exc.strerror or exc}); make it writable, or record to another path"
            ) from None

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
        temporary = None
        try:
            if data is None:
                self.path.unlink(missing_ok=True)
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.temporary()
            temporary.write_bytes(data)
            mode = self.path.stat().st_mode & 0o777 if self.path.exists() else 0o644  # not mkstemp's 0o600
            temporary.chmod(mode)
            os.replace(temporary, self.path)
        except OSError as exc:
            if temporary is not None:
                temporary.unlink(missing_ok=True)
            raise CassetteError(
                f"cannot write the cassette {self.path} ({type(exc).__name__}: {exc.strerror or exc}); "
                "make its folder writable, or record to another path"
            ) from None

    def write(self, interactions: list[dict[str, Any]], secrets: Iterable[str] = ()) -> None:
        """Write ``interactions``, each redacted of ``secrets`` and sealed."""
        known = [*secrets, *_environment_secrets()]
        sealed = []
        for interaction in interactions:
            clean = {
                k: scrub_tree(v, known, mask=REDACTED, answer=k in _ANSWERS)  # answers: a model's own words
                for k, v in interaction.items()
                if k != _SEAL
            }
            clean[_SEAL] = seal_of(clean)
            sealed.append(clean)
        text = json.dumps({"format": FORMAT, "interactions": sealed}, indent=1, ensure_ascii=False)
        self.write_bytes((text + "\n").encode("utf-8"))


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


class RecordingChatClient:
    """Calls ``inner`` and writes each request and its answer to the cassette at ``path``.

    Nothing is written until the first answer; then the cassette holds every answer so far (a
    notebook stopped between two calls keeps what it recorded). A call that fails puts the
    cassette back as it was before this recorder was made, and ends the recording. The answers
    handed back are those written, redacted of ``secrets`` and of every secret the inner client
    and the request's options hold.
    """

    def __init__(self, inner: ChatClient, path: str | os.PathLike[str], *, secrets: Iterable[str] = ()) -> None:
        self.inner = inner
        self._cassette = _Cassette(path)
        self._secrets = list(secrets)
        self.interactions: list[dict[str, Any]] = []
        self._cassette.check_writable()
        self._before = self._cassette.snapshot()
        self._written = False
        self._failed: str | None = None

    @property
    def history_mode(self) -> HistoryMode:
        return history_mode_of(self.inner)

    @property
    def capabilities(self) -> Capabilities:
        return capabilities_of(self.inner)

    def _known_secrets(self, options: Mapping[str, Any] | None = None) -> list[str]:
        found = [*self._secrets, *_environment_secrets(), *_own_secrets(self.inner)]
        if options:
            found += secrets_in(options)
        return found

    def _refuse_after_failure(self) -> None:
        if self._failed is not None:
            raise CassetteError(
                f"{self!r}: the recording stopped at {self._failed}, so the cassette {self._cassette.path} "
                f"was left as it was before recording; fix the cause and record again ({RECORD_VARIABLE}=1)"
            )

    def _fail(self, exc: BaseException) -> None:
        """A call failed: end the recording, put the cassette back, and say so on the error."""
        number = len(self.interactions) + 1
        self._failed = f"request {number}, which failed ({type(exc).__name__})"
        restored = "as it was before recording"
        if self._written:
            try:
                self._cassette.write_bytes(self._before)
            except CassetteError as error:
                restored = f"NOT restored ({error})"
        was = "there was none before" if self._before is None else "its earlier recording is kept"
        if hasattr(exc, "add_note"):
            exc.add_note(
                f"{type(self).__name__}: request {number} failed, so the recording stopped; the cassette "
                f"{self._cassette.path} is {restored} ({was})"
            )

    def _keep(self, request: dict[str, Any], answer: dict[str, Any], secrets: list[str]) -> None:
        """Add an interaction, redacted of its own request's secrets too (a later write does not know them)."""
        kept = {"request": scrub_tree(_redact(request), secrets, mask=REDACTED)}
        kept.update({k: scrub_tree(v, secrets, mask=REDACTED, answer=True) for k, v in answer.items()})
        self.interactions.append(kept)
        try:
            self._cassette.write(self.interactions, secrets)
        except CassetteError as exc:
            self.interactions.pop()
            self._fail(exc)
            raise
        self._written = True

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        self._refuse_after_failure()
        request = request_of(messages, options, stream=False, model=getattr(self.inner, "model", None))
        try:
            response = await self.inner.get_response(messages, options, session=session)
        except BaseException as exc:
            self._fail(exc)
            raise
        secrets = self._known_secrets(options)
        dumped = response.model_dump(mode="json", exclude_none=True)
        written = scrub_tree(dumped, secrets, mask=REDACTED, answer=True)
        self._keep(request, {"response": written}, secrets)
        return response if written == dumped else ChatResponse.model_validate_json(json.dumps(written))

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        self._refuse_after_failure()
        request = request_of(messages, options, stream=True, model=getattr(self.inner, "model", None))
        secrets = self._known_secrets(options)
        text = TextScrubber(secrets, mask=REDACTED)
        chunks: list[dict[str, Any]] = []
        last: dict[str, Any] = {}
        updates = self.inner.get_streaming_response(messages, options, session=session)
        try:
            async for update in updates:
                dumped = update.model_dump(mode="json", exclude_none=True)
                written = _scrub_chunk(dumped, secrets, text)
                chunks.append(written)
                last = written
                yield update if written == dumped else ChatResponseUpdate.model_validate_json(json.dumps(written))
        except GeneratorExit:  # the caller stopped reading: the answer as far as it was read
            self._finish(request, chunks, last, text, secrets)
            raise
        except BaseException as exc:
            self._fail(exc)
            raise
        finally:
            close = getattr(updates, "aclose", None)
            if close is not None:
                await close()  # the inner stream too, now (left early, it would wait for the event loop)
        rest = self._finish(request, chunks, last, text, secrets)
        if rest is not None:
            yield rest

    def _finish(
        self,
        request: dict[str, Any],
        chunks: list[dict[str, Any]],
        last: dict[str, Any],
        text: TextScrubber,
        secrets: list[str],
    ) -> ChatResponseUpdate | None:
        """Record a stream; the text held back at its end (it might have been a secret) as a last chunk."""
        held = text.flush()
        extra = None
        if held:
            tail: dict[str, Any] = {
                k: last[k] for k in ("role", "author_name", "message_id", "response_id", "model") if k in last
            }
            chunks.append({"contents": [{"type": "text", "text": held}], **tail})
            extra = ChatResponseUpdate.model_validate_json(json.dumps(chunks[-1]))
        self._keep(request, {"chunks": chunks}, secrets)
        return extra

    def __repr__(self) -> str:
        return f"RecordingChatClient({self.inner!r}, {str(self._cassette.path)!r})"


def _scrub_chunk(chunk: dict[str, Any], secrets: list[str], text: TextScrubber) -> dict[str, Any]:
    """A streamed chunk redacted: its texts through ``text`` (a secret may span chunks), the rest whole."""
    contents = []
    for content in chunk.get("contents", ()):
        if content.get("type") == "text" and isinstance(content.get("text"), str):
            content = {**content, "text": text.feed(content["text"])}
        else:
            held = text.flush()  # what was held goes before a non-text content, in order
            if held:
                contents.append({"type": "text", "text": held})
            content = scrub_tree(content, secrets, mask=REDACTED, answer=True)
        contents.append(content)
    rest = {k: v for k, v in chunk.items() if k != "contents"}
    return {"contents": contents, **scrub_tree(rest, secrets, mask=REDACTED, answer=True)}


class ReplayChatClient:
    """Answers from a cassette, in the order recorded; no network, the same answers every time.

    The whole cassette is checked when the client is made: a damaged or edited one is refused at
    once (see the module docstring). ``secrets`` are never shown in a diff.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        model: str | None = None,
        capabilities: Capabilities | None = None,
        history_mode: HistoryMode = "caller",
        secrets: Iterable[str] = (),
    ) -> None:
        self._cassette = _Cassette(path)
        self.interactions = self._cassette.read()
        self.model = model
        """The model the recording must have been made with; ``None`` accepts the recorded one."""
        self.used = 0
        self.capabilities = capabilities or Capabilities()
        self.history_mode = history_mode
        self._secrets = list(secrets)

    def _next(self, request: dict[str, Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
        n = len(self.interactions)
        if self.used >= n:
            raise CassetteError(
                f"the cassette {self._cassette.path} holds {n} answers and all were replayed; request {n + 1} "
                f"has none. Record again with {RECORD_VARIABLE}=1, or check why the code asks the model once more"
            )
        recorded = self.interactions[self.used]
        if self.model is None:
            request["model"] = recorded["request"].get("model")
        known = [*self._secrets, *_environment_secrets(), *(secrets_in(options) if options else ())]
        actual = scrub_tree(_redact(request), known, mask=REDACTED)
        if not _matches(recorded["request"], actual):
            diff = scrub(_diff(recorded["request"], actual), known, mask=REDACTED)
            raise CassetteError(
                f"request {self.used + 1} differs from the one recorded in {self._cassette.path}:\n{diff}\n"
                f"The code (or the model's earlier answers) changed: record again with {RECORD_VARIABLE}=1"
            )
        self.used += 1
        return recorded

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        recorded = self._next(request_of(messages, options, stream=False, model=self.model), options)
        return ChatResponse.model_validate_json(json.dumps(recorded["response"]))

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        recorded = self._next(request_of(messages, options, stream=True, model=self.model), options)
        for chunk in recorded["chunks"]:
            yield ChatResponseUpdate.model_validate_json(json.dumps(chunk))

    @property
    def remaining(self) -> int:
        """Answers not replayed yet (a test can check that a notebook used them all)."""
        return len(self.interactions) - self.used

    def __repr__(self) -> str:
        return f"ReplayChatClient({str(self._cassette.path)!r}, {self.used}/{len(self.interactions)} replayed)"


def _matches(recorded: Any, actual: Any) -> bool:
    """Equal, where a redacted part of a recorded string stands for whatever secret was there."""
    if isinstance(recorded, dict):
        return (
            isinstance(actual, dict)
            and recorded.keys() == actual.keys()
            and all(_matches(v, actual[k]) for k, v in recorded.items())
        )
    if isinstance(recorded, list):
        return isinstance(actual, list) and len(recorded) == len(actual) and all(map(_matches, recorded, actual))
    if isinstance(recorded, str) and REDACTED in recorded and isinstance(actual, str):
        pattern = ".+?".join(re.escape(part) for part in recorded.split(REDACTED))
        return re.fullmatch(pattern, actual, re.S) is not None
    return bool(recorded == actual)


def _diff(recorded: Any, actual: Any, limit: int = 40) -> str:
    a = json.dumps(recorded, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    b = json.dumps(actual, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    lines = list(difflib.unified_diff(a, b, "recorded", "now", lineterm="", n=2))
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


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


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in the tests
    sys.exit(main())
