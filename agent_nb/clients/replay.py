"""Record a real model's answers once, replay them forever: cassettes for notebooks that run as tests.

```python
from agent_nb.clients.replay import cassette_client

client = cassette_client("cassettes/trip.json", lambda: OpenAIChatClient("gemma", base_url=URL))
```

It replays from the file, with no network; ``AGENT_NB_RECORD=1`` in the environment (or
``record=True``) calls the real client instead and writes what it answered: ``RecordingChatClient``
records, ``ReplayChatClient`` replays. A request that does not match the next recorded one fails
with a diff and the way to record again.

**Recording is safe.** Making a recorder changes nothing: the cassette is first written when the
first answer arrives, and every write goes to a temporary file beside the cassette that then
replaces it whole. If a real call fails (or is interrupted), the recording stops and the cassette
is put back as it was before the recording began; the next call through that recorder is refused.
A destination that cannot be written is refused when the recorder is made, before any call.

**Cassettes are sealed.** The file itself (its JSON format, the ``sha256`` seal of each
interaction, the checks that refuse a damaged or edited one with a ``CassetteError``) is
``agent_nb.clients.cassettes``; ``seal``, ``check`` and ``FORMAT`` are importable from here too,
and so is the command line that re-seals a cassette edited on purpose::

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
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import CassetteError
from ..messages import ChatResponse, ChatResponseUpdate, Message
from .base import Capabilities, ChatClient, HistoryMode, capabilities_of, history_mode_of
from .cassettes import (
    FORMAT,
    RECORD_VARIABLE,
    REDACTED,
    Sealer,
    _Cassette,
    _environment_secrets,
    check,
    main,
    request_of,
    seal,
    serialised,
)
from .cassettes import seal_of as seal_of
from .redaction import Scrubber, TextScrubber, client_secrets, redact_tree, scrub_tree, secrets_in

if TYPE_CHECKING:
    from ..sessions import AgentSession

__all__ = ["FORMAT", "RecordingChatClient", "ReplayChatClient", "cassette_client", "check", "seal"]


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
        secrets=[*secrets, *client_secrets(client)],
    )


class RecordingChatClient:
    """Calls ``inner`` and writes each request and its answer to the cassette at ``path``.

    Nothing is written until the first answer; then the cassette holds every answer so far (a
    notebook stopped between two calls keeps what it recorded). Each interaction is redacted and
    sealed once: the file is still written whole each time, from the sealed forms kept (one sealed
    earlier is redone only if a later request's secret appears in it). A call that fails puts the
    cassette back as it was before this recorder was made, and ends the recording. The answers
    handed back are those written, redacted of ``secrets`` and of every secret the inner client
    and the request's options hold.
    """

    def __init__(self, inner: ChatClient, path: str | os.PathLike[str], *, secrets: Iterable[str] = ()) -> None:
        self.inner = inner
        self.provider = getattr(inner, "provider", None)
        self._cassette = _Cassette(path)
        self._secrets = list(secrets)
        self.interactions: list[dict[str, Any]] = []
        self._sealed: list[tuple[dict[str, Any], str]] = []
        """Each interaction written, sealed, and as the cassette's text holds it."""
        self._sealed_of: set[str] = set()
        """The secrets every sealed interaction is redacted of."""
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

    def _known_secrets(self, options: Mapping[str, Any] | None = None) -> Scrubber:
        """The secrets of a request (those given, the environment's, the inner client's, its options'), compiled."""
        found = [*self._secrets, *_environment_secrets(), *client_secrets(self.inner)]
        if options:
            found += secrets_in(options)
        return Scrubber.of(found)

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

    def _keep(self, request: dict[str, Any], answer: dict[str, Any], secrets: Scrubber) -> None:
        """Add an interaction, redacted of its own request's secrets too, and write the cassette whole.

        The interactions written before keep their sealed form; one of them is redacted and sealed
        again only when a secret of this request, unknown when it was sealed, appears in it.
        """
        sealer = Sealer(secrets)
        clean = sealer.clean({"request": request, **answer})
        new = [s for s in sealer.scrubber if s not in self._sealed_of]
        if new and self._sealed:
            fresh = Scrubber(new)
            for i, (done, text) in enumerate(self._sealed):
                if fresh.finds(text):
                    again = sealer.clean(done)
                    self._sealed[i] = (again, serialised(again))
        self.interactions.append({k: v for k, v in clean.items() if k != "sha256"})
        self._sealed.append((clean, serialised(clean)))
        try:
            self._cassette.write_sealed([text for _, text in self._sealed])
        except CassetteError as exc:
            self.interactions.pop()
            self._sealed.pop()
            self._fail(exc)
            raise
        self._sealed_of.update(sealer.scrubber)
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
        secrets: Scrubber,
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


def _scrub_chunk(chunk: dict[str, Any], secrets: Scrubber, text: TextScrubber) -> dict[str, Any]:
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
        self.provider = "agent_nb.replay"
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
        known = Scrubber.of([*self._secrets, *_environment_secrets(), *(secrets_in(options) if options else ())])
        actual = redact_tree(request, known, mask=REDACTED)
        if not _matches(recorded["request"], actual):
            diff = known.scrub(_diff(recorded["request"], actual), mask=REDACTED)
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


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in the tests
    sys.exit(main())
