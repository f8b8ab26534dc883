"""Record a real model's answers once, replay them forever: cassettes for notebooks that run as tests.

```python
from agent_nb.clients.replay import cassette_client

client = cassette_client("cassettes/trip.json", lambda: OpenAIChatClient("gemma", base_url=URL))
```

It replays from the file, with no network; ``AGENT_NB_RECORD=1`` in the environment (or
``record=True``) calls the real client instead and writes what it answered. A cassette is JSON:
each request (the model, messages, options, tools, streamed or not) and its answer (the response,
or every streamed chunk). A request that does not match the next recorded one fails with a diff and the
way to record again. Nothing secret is written: option keys that name a key, token, secret,
password or authorisation are redacted, and so is every known secret wherever it appears (the
client's own API key, ``OPENAI_API_KEY``, and any ``secrets=`` given).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from ..errors import CassetteError
from ..messages import ChatResponse, ChatResponseUpdate, Message
from .base import Capabilities, ChatClient, HistoryMode, capabilities_of, history_mode_of

if TYPE_CHECKING:
    from ..sessions import AgentSession

__all__ = ["FORMAT", "RecordingChatClient", "ReplayChatClient", "cassette_client"]

FORMAT = 1
REDACTED = "<redacted>"
_SECRET_KEY = re.compile(
    r"^(.*[_-])?(api[_-]?key|authori[sz]ation|(access|auth|bearer|refresh|session)?[_-]?token|secret|"
    r"password|passwd|cookie|credentials?)$",
    re.I,
)
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+")
RECORD_VARIABLE = "AGENT_NB_RECORD"


def cassette_client(path: str | os.PathLike[str], real: Callable[[], ChatClient], *, record: bool | None = None) -> Any:
    """A client that replays ``path``, or, when recording, calls ``real()`` and writes ``path``.

    ``record=None`` follows the environment: ``AGENT_NB_RECORD=1`` records. ``real()`` is called in
    both cases (making a client sends nothing): the replay then checks that the recording was made
    with the same model, and declares the real client's capabilities and history mode.
    """
    if record is None:
        record = os.environ.get(RECORD_VARIABLE, "") in ("1", "true", "yes")
    client = real()
    if record:
        return RecordingChatClient(client, path)
    return ReplayChatClient(
        path,
        model=getattr(client, "model", None),
        capabilities=capabilities_of(client),
        history_mode=history_mode_of(client),
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
    if isinstance(value, dict):
        return {k: REDACTED if _SECRET_KEY.search(str(k)) else _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    if isinstance(value, str):
        return _BEARER.sub(f"Bearer {REDACTED}", value)
    return value


class _Cassette:
    """The file: read once, appended to and rewritten whole (through a temporary file) when recording."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def read(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CassetteError(
                f"there is no cassette at {self.path}: record it first, with {RECORD_VARIABLE}=1 in the "
                "environment (or record=True), against the real model"
            ) from None
        except ValueError as exc:
            raise CassetteError(f"the cassette {self.path} is not JSON ({exc}); record it again") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("interactions"), list):
            raise CassetteError(
                f"the cassette {self.path} is not one this agent_nb reads (format {FORMAT}); record it again"
            )
        return list(data["interactions"])

    def write(self, interactions: list[dict[str, Any]], secrets: Iterable[str]) -> None:
        text = json.dumps({"format": FORMAT, "interactions": interactions}, indent=1, ensure_ascii=False)
        for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
            text = text.replace(json.dumps(secret)[1:-1], REDACTED)  # as it reads escaped inside JSON
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, self.path)


class RecordingChatClient:
    """Calls ``inner`` and writes each request and its answer to the cassette at ``path``.

    The file is rewritten after every answer, so a notebook stopped half-way keeps what it
    recorded. It starts empty: recording replaces an older cassette.
    """

    def __init__(self, inner: ChatClient, path: str | os.PathLike[str], *, secrets: Iterable[str] = ()) -> None:
        self.inner = inner
        self._cassette = _Cassette(path)
        self._secrets = list(secrets)
        self.interactions: list[dict[str, Any]] = []
        self._cassette.write(self.interactions, ())

    @property
    def history_mode(self) -> HistoryMode:
        return history_mode_of(self.inner)

    @property
    def capabilities(self) -> Capabilities:
        return capabilities_of(self.inner)

    def _known_secrets(self) -> list[str]:
        found = [*self._secrets, os.environ.get("OPENAI_API_KEY", "")]
        own = getattr(self.inner, "_secrets", None)  # agent_nb's OpenAI clients name the keys they hold
        if callable(own):
            found += list(own())
        return found

    def _keep(self, request: dict[str, Any], answer: dict[str, Any]) -> None:
        self.interactions.append({"request": _redact(request), **answer})
        self._cassette.write(self.interactions, self._known_secrets())

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        request = request_of(messages, options, stream=False, model=getattr(self.inner, "model", None))
        response = await self.inner.get_response(messages, options, session=session)
        self._keep(request, {"response": response.model_dump(mode="json", exclude_none=True)})
        return response

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        request = request_of(messages, options, stream=True, model=getattr(self.inner, "model", None))
        chunks = []
        async for update in self.inner.get_streaming_response(messages, options, session=session):
            chunks.append(update.model_dump(mode="json", exclude_none=True))
            yield update
        self._keep(request, {"chunks": chunks})

    def __repr__(self) -> str:
        return f"RecordingChatClient({self.inner!r}, {str(self._cassette.path)!r})"


class ReplayChatClient:
    """Answers from a cassette, in the order recorded; no network, the same answers every time."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        model: str | None = None,
        capabilities: Capabilities | None = None,
        history_mode: HistoryMode = "caller",
    ) -> None:
        self._cassette = _Cassette(path)
        self.interactions = self._cassette.read()
        self.model = model
        """The model the recording must have been made with; ``None`` accepts the recorded one."""
        self.used = 0
        self.capabilities = capabilities or Capabilities()
        self.history_mode = history_mode

    def _next(self, request: dict[str, Any]) -> dict[str, Any]:
        n = len(self.interactions)
        if self.used >= n:
            raise CassetteError(
                f"the cassette {self._cassette.path} holds {n} answers and all were replayed; request {n + 1} "
                f"has none. Record again with {RECORD_VARIABLE}=1, or check why the code asks the model once more"
            )
        recorded = self.interactions[self.used]
        if self.model is None:
            request["model"] = recorded["request"].get("model")
        if not _matches(recorded["request"], _redact(request)):
            diff = _diff(recorded["request"], _redact(request))
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
        recorded = self._next(request_of(messages, options, stream=False, model=self.model))
        return ChatResponse.model_validate(recorded["response"])

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        recorded = self._next(request_of(messages, options, stream=True, model=self.model))
        for chunk in recorded["chunks"]:
            yield ChatResponseUpdate.model_validate(chunk)

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
