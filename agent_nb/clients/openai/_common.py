"""What the two OpenAI clients share: configuration, the SDK client, options, and the base class.

``OpenAIClientBase`` holds a client's configuration (model, base URL, key, headers), makes the
SDK client, checks options against the shared vocabulary (``SHARED_OPTIONS``, ``CHAT_ONLY``,
``RESPONSES_ONLY``), knows the client's secrets, wraps every call to the service (``call``,
``stream``) and maps the SDK's errors onto agent_nb's.

Answers are read as plain JSON data and checked field by field before anything is built from
them (``_answers``): a 200 that is not a completion (``{}``, an HTML page, broken JSON, a stream
of garbage or one that stops half-way) becomes a ``ModelError`` that names the client, its base
URL and model, the endpoint, what is wrong, and shows what came back, scrubbed of every secret
the client knows and cut to a few hundred characters (``bad_answer``). Streams are read by
``_streams``; the clients spell messages' contents and tools with ``_contents``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import (
    AgentNbError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
    UsageError,
    did_you_mean,
)
from ..base import Capabilities
from ..redaction import (
    Scrubber,
    option_secrets,
    safe_url,
    scrub_tree,
    secrets_in,
    url_secrets,
    without_credentials,
)
from ._answers import _MISSING, _SHOWN, _looks_like_html, as_json, kind_of, plain
from ._streams import _END, _close_stream, _Reader

if TYPE_CHECKING:
    from openai import AsyncOpenAI

T = TypeVar("T")

_LOCAL_KEY = "not-needed"  # OpenAI-compatible local servers ignore the key, the SDK insists on one

# One vocabulary of request options for both APIs: each client maps the shared ones onto its
# API, and leaves out the other API's own, so an agent's options survive a change of route.
SHARED_OPTIONS = frozenset(
    {
        "model", "temperature", "top_p", "max_tokens", "seed", "stop", "tools", "tool_choice",
        "parallel_tool_calls", "response_format", "user", "extra_body", "extra_headers",
    }
)  # fmt: skip
CHAT_ONLY = frozenset({"max_completion_tokens", "presence_penalty", "frequency_penalty", "logit_bias"})
RESPONSES_ONLY = frozenset({"max_output_tokens", "instructions", "text", "reasoning", "truncation", "metadata"})


def sdk_module() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - openai is a dependency
        raise ImportError("the OpenAI clients need the openai package: pip install 'openai>=1.40'") from exc
    return openai


class OpenAIClientBase:
    """Configuration, the SDK client, option checks, secrets, error mapping and answer checks."""

    provider = "openai"
    """Who serves its requests (an OpenAI-compatible API, whatever the server behind ``base_url``)."""
    _OTHER_OPTIONS: frozenset[str] = frozenset()
    """The other API's own options: accepted, and left out of this API's requests."""
    ENDPOINT = ""
    """The path of this API under the base URL (``/chat/completions``, ``/responses``)."""
    ANSWER = "an answer"
    """What a good answer of this API is called, in errors."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        capabilities: Capabilities | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_headers: Mapping[str, str] | None = None,
        **defaults: Any,
    ) -> None:
        if client is not None and (
            timeout is not None or max_retries is not None or api_key or base_url or default_headers
        ):
            raise UsageError(
                f"{type(self).__name__}: give either client= (configured already) or api_key, base_url, "
                "timeout and max_retries (and default_headers), not both"
            )
        self.model = model
        self.base_url = base_url
        self.capabilities = capabilities or Capabilities()
        self.defaults = self._check_options(defaults)
        self._timeout = timeout
        self._max_retries = 2 if max_retries is None else max_retries
        self._client = client
        self._owns_client = client is None
        self._api_key = api_key
        self._default_headers = dict(default_headers or {})
        self._own: tuple[tuple[Any, ...], Scrubber] | None = None
        """The client's own secrets, compiled, and what they were computed from (``_own_scrubber``)."""

    known_options = SHARED_OPTIONS | CHAT_ONLY | RESPONSES_ONLY

    def _key(self) -> str:
        key = self._api_key or os.environ.get("OPENAI_API_KEY")
        if key:
            return key
        if self.base_url:
            return _LOCAL_KEY
        raise UsageError(
            f"{self!r} has no API key: pass api_key=..., set OPENAI_API_KEY, or give base_url= for a local server"
        )

    @property
    def sdk(self) -> AsyncOpenAI:
        """The SDK's async client (made on first use); every call to the service goes through here."""
        from ..guard import check

        check(self)
        if self._client is None:
            openai = sdk_module()
            kwargs: dict[str, Any] = {"api_key": self._key(), "max_retries": self._max_retries}
            headers = dict(self._default_headers)
            if self.base_url:
                # The credentials of the URL go as the header the HTTP library would make of them
                # (it sends them instead of any other), never in the URL it logs and shows.
                kwargs["base_url"], basic = without_credentials(self.base_url)
                if basic is not None:
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                    headers["Authorization"] = f"Basic {basic}"
            if self._timeout is not None:
                kwargs["timeout"] = self._timeout
            if headers:
                kwargs["default_headers"] = headers
            self._client = openai.AsyncOpenAI(**kwargs)
        return self._client

    async def aclose(self) -> None:
        """Close the connections of the SDK client this client made (one passed in stays open)."""
        if self._client is not None and self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        known = self.known_options
        for key in options:
            if key not in known:
                raise UsageError(
                    f"{type(self).__name__} does not know the option {key!r}{did_you_mean(key, known)}; "
                    f"known: {', '.join(sorted(known))} (anything else goes in extra_body={{...}})"
                )
        return dict(options)

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        merged = {**self.defaults, **self._check_options(options or {})}
        merged.setdefault("model", self.model)
        return {k: v for k, v in merged.items() if k not in self._OTHER_OPTIONS}

    # -- secrets ----------------------------------------------------------------------

    def _own_scrubber(self) -> Scrubber:
        """The client's own secrets, compiled: computed once, again only when what they come from changes.

        Its key, the environment's, the credentials of its base URL, the secrets of its headers and
        default options, and those the SDK client holds (its key, headers, query and base URL).
        They are computed again when the SDK client is made or replaced, or the key, the
        environment's key or the base URL change; never from a request's messages.
        """
        client = self._client
        stamp = (
            client,
            getattr(client, "api_key", None) if client is not None else None,
            os.environ.get("OPENAI_API_KEY"),
            self._api_key,
            self.base_url,
        )
        own = self._own
        if own is not None and own[0] == stamp:
            return own[1]
        found: list[str | None] = [self._api_key, os.environ.get("OPENAI_API_KEY")]
        found += url_secrets(self.base_url) | secrets_in(self._default_headers) | option_secrets(self.defaults)
        if client is not None:
            found.append(getattr(client, "api_key", None))
            for name in ("default_headers", "default_query", "base_url"):
                try:
                    value = getattr(client, name, None)
                except Exception:  # a client that cannot say has nothing to add
                    value = None
                if isinstance(value, Mapping):
                    found += secrets_in({k: v for k, v in value.items() if isinstance(v, str)})
                elif name == "base_url" and value is not None:
                    found += url_secrets(value)
        scrubber = Scrubber(s for s in dict.fromkeys(found) if s and not s.endswith(_LOCAL_KEY))
        self._own = (stamp, scrubber)
        return scrubber

    def _scrubber(self, options: Mapping[str, Any] | None = None) -> Scrubber:
        """The secrets of a request, compiled once for all its pieces: the client's, and its options' own.

        ``options`` (a request's options or its payload) adds only the secrets of its
        ``extra_headers``, ``extra_body``, ``extra_query`` and secret-named options
        (``option_secrets``), never its messages nor its ``input``.
        """
        own = self._own_scrubber()
        if not options:
            return own
        return own.adding(s for s in option_secrets(options) if not s.endswith(_LOCAL_KEY))

    def _secrets(self, options: Mapping[str, Any] | None = None) -> list[str]:
        """Every secret this client holds: its key, the environment's, and those of its URL, headers and options.

        ``options`` adds a request's own (its ``extra_headers``, say; ``_scrubber``). Recording
        clients ask for them too (``RecordingChatClient``), so that a cassette holds none.
        """
        return list(self._scrubber(options).secrets)

    def scrub(self, text: str, options: Mapping[str, Any] | None = None) -> str:
        """Whatever a server echoes back, no secret of this client (or of ``options``) reaches a message."""
        return self._scrubber(options).scrub(text)

    def _base(self) -> str:
        """The base URL requests go to, fit to show."""
        url = self.base_url or (getattr(self._client, "base_url", None) if self._client is not None else None)
        return safe_url(str(url).rstrip("/")) if url else "https://api.openai.com/v1"

    def _where(self, options: Mapping[str, Any] | None = None) -> str:
        """The client as errors name it: its class, model and base URL (that of a client passed in too)."""
        where = repr(self)
        if not self.base_url and self._client is not None:
            where = f"{type(self).__name__}({self.model!r}, base_url={self._base()!r})"
        model = (options or {}).get("model")
        if isinstance(model, str) and model != self.model:
            where += f" (model {model!r})"
        return where

    # -- calls --------------------------------------------------------------------------

    async def call(self, request: Callable[[], Awaitable[T]], options: Mapping[str, Any] | None = None) -> T:
        """``await request()`` (a call to the service), with an SDK error raised as agent_nb's.

        ``options`` are the request's: their secrets are scrubbed from the error too.
        """
        error = None
        try:
            return await request()
        except Exception as exc:
            error = self.error(exc, options)
        raise _bare(error)  # outside the except: the SDK's exception (and its request headers) stays behind

    async def stream(
        self, request: Callable[[], Awaitable[AsyncIterable[Any]]], options: Mapping[str, Any] | None = None
    ) -> AsyncGenerator[Any, None]:
        """The events of a streamed call to the service, as plain data, with an SDK error raised as agent_nb's.

        A body that is not a stream of server-sent events (JSON, a web page) is refused with what it
        holds. The SDK's stream is read by a ``_Reader`` (a task of its own, one event ahead): however
        the stream ends (done, failed, or left early by the caller), its response is closed and the
        SDK's generators run to their end, never left for the event loop to close at shutdown.
        """
        error = None
        source: Any = None
        reader: _Reader | None = None
        seen = 0
        try:
            source = await request()
            await self._refuse_other_bodies(source, options)
            reader = _Reader(source)
            while True:
                event = await reader.next()
                if event is _END:
                    break
                seen += 1
                yield plain(event)
        except Exception as exc:
            error = self.error(exc, options, stream=True)
            if seen and isinstance(error, ModelUnavailable) and not isinstance(exc, AgentNbError):
                error = ModelUnavailable(
                    self.scrub(
                        f"{self._where(options)}: the stream from {self._base()}{self.ENDPOINT} broke off after "
                        f"{seen} event{'s' if seen != 1 else ''} ({type(exc).__name__}: {exc}); try again",
                        options,
                    )
                )
        finally:
            if reader is not None:
                await reader.close()
            elif source is not None:
                await _close_stream(source, None)
        if error is not None:
            raise _bare(error)

    async def _refuse_other_bodies(self, source: Any, options: Mapping[str, Any] | None) -> None:
        """Raise, with what came back, when a streamed call was answered with something else than events."""
        response = getattr(source, "response", None)
        headers = getattr(response, "headers", None)
        if response is None or headers is None or not hasattr(response, "aread"):
            return
        kind = str(headers.get("content-type", "") or "")
        if "event-stream" in kind.lower():
            return
        body = await response.aread()
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        if any(line.startswith("data:") for line in text.splitlines()):
            return  # events under another content type: the SDK reads them from what was read
        raise self.bad_answer(
            f"the body is {kind or 'of no declared type'}, not a stream of server-sent events",
            text,
            options,
            stream=True,
            content_type=kind,
        )

    def answer_data(self, answer: Any, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """A whole answer as a JSON object, scrubbed of the client's secrets; a ``ModelError`` if it is not one."""
        data = plain(answer)
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        if isinstance(data, str):
            text = data
            try:
                data = json.loads(text)
            except ValueError as exc:
                problem = f"the body is not JSON ({exc})"
                if text.lstrip().startswith(("data:", "event:")):
                    problem = "the body is a stream of server-sent events, though the request was not streamed"
                data = _MISSING
            if data is _MISSING:
                raise self.bad_answer(problem, text, options, stream=False)
        if not isinstance(data, dict):
            raise self.bad_answer(f"the body is {kind_of(data)}, not a JSON object", data, options, stream=False)
        return dict(scrub_tree(data, self._scrubber(options), answer=True))

    def bad_answer(
        self,
        problem: str,
        came_back: Any,
        options: Mapping[str, Any] | None,
        *,
        stream: bool,
        cut: bool = False,
        content_type: str | None = None,
    ) -> ModelError:
        """The error for a 200 that is not ``ANSWER``: what is wrong, what came back (scrubbed, short), what to check.

        ``came_back`` is the body's text or data (``None``: nothing); ``cut=True``: a stream that broke
        off, which may work on another try (``ModelUnavailable``).
        """
        if came_back is None:
            what = "Nothing came back"
        else:
            shown = self.scrub(as_json(came_back), options)
            snippet = repr(shown[:_SHOWN]) + ("…" if len(shown) > _SHOWN else "")
            what = f"What came back ({len(shown)} characters{f', {content_type}' if content_type else ''}): {snippet}"
        base = self._base()
        if cut:
            hint = "The server or the connection broke off in the middle of the answer; try again."
        elif isinstance(came_back, str) and _looks_like_html(came_back):
            hint = (
                f"That is a web page, not the API: check base_url ({base}; an OpenAI-compatible API usually "
                "ends in /v1) and any proxy or login page in between."
            )
        else:
            hint = (
                f"Is the server at {base} OpenAI-compatible for this API? (OpenAIChatClient speaks "
                "/chat/completions, OpenAIResponsesClient /responses.)"
            )
        message = (
            f"{self._where(options)}: POST {base}{self.ENDPOINT}{' (streamed)' if stream else ''} was answered, "
            f"but not with {self.ANSWER}: {problem}. {what}. {hint}"
        )
        return (ModelUnavailable if cut else ModelError)(self.scrub(message, options))

    def error(self, exc: Exception, options: Mapping[str, Any] | None = None, *, stream: bool = False) -> Exception:
        """The agent_nb error for an SDK error; ``call`` and ``stream`` raise it outside the ``except``.

        Raised there, it has no ``__context__``: the SDK's exception holds the request, and
        the request holds the Authorization header.
        """
        if isinstance(exc, AgentNbError):
            return exc
        if isinstance(exc, json.JSONDecodeError):  # a body (or a streamed event) that is not JSON
            problem = f"it is not JSON ({exc.msg}: line {exc.lineno} column {exc.colno})"
            return self.bad_answer(problem, exc.doc, options, stream=stream)
        openai = sdk_module()
        where = self._where(options)
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(f"{where}: the server did not answer in time; try again or raise timeout=")
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(
                self.scrub(f"{where}: cannot reach the server ({exc}); is it running at {self._base()}?", options)
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            body = exc.body if isinstance(exc.body, dict) else {}
            detail = body.get("error", body)
            said = detail.get("message") if isinstance(detail, dict) else None
            said = self.scrub(str(said or exc.message), options)
            if status == 429:
                return ModelRateLimited(f"{where}: rate limited (429): {said}; wait, or route elsewhere")
            if status >= 500:
                return ModelUnavailable(f"{where}: the server failed ({status}): {said}")
            if status in (401, 403):
                return ModelBadRequest(
                    f"{where}: the server refused the API key ({status}): {said}; check the key (not shown)",
                    status=status,
                )
            return ModelBadRequest(f"{where}: the server refused the request ({status}): {said}", status=status)
        if isinstance(exc, openai.OpenAIError):
            return ModelError(self.scrub(f"{where}: {type(exc).__name__}: {exc}", options))
        return exc

    def __repr__(self) -> str:
        where = f", base_url={safe_url(self.base_url)!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where})"


def _bare(error: BaseException) -> BaseException:
    """``error`` without what it was raised from: nothing of the SDK's exception (or its request) goes with it."""
    error.__cause__ = None
    error.__context__ = None
    error.__suppress_context__ = True
    return error
