"""What the two OpenAI clients share: configuration, the SDK client, options, errors, content."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import (
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
    UsageError,
    did_you_mean,
)
from ...messages import FunctionCallContent, FunctionResultContent, Message, tool_work_as_text
from ...tools import FunctionTool
from ..base import Capabilities

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
        raise ImportError("the OpenAI clients need the openai package: pip install agent_nb") from exc
    return openai


def parse_arguments(raw: str | None) -> dict[str, Any] | str:
    """Parsed tool-call arguments, or the raw text when the model sent something that is not JSON."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    return value if isinstance(value, dict) else raw


def arguments_json(call: FunctionCallContent) -> str:
    if not isinstance(call.arguments, str):
        return json.dumps(call.arguments)
    # A model's broken arguments (cut off, not JSON) were answered with an error already; servers
    # that parse the history would refuse the whole request over them, so they travel as {}.
    return call.arguments if isinstance(parse_arguments(call.arguments), dict) else "{}"


def result_text(result: FunctionResultContent) -> str:
    if result.exception:
        return f"Error: {result.exception}"
    return result.result if isinstance(result.result, str) else json.dumps(result.result, default=str)


def image_url(content: Any) -> str | None:
    media = getattr(content, "media_type", None) or ""
    if not media.startswith("image/"):
        return None
    if content.type == "data":
        return f"data:{media};base64,{base64.b64encode(content.data).decode()}"
    return str(content.uri)


def user_parts(m: Message, *, text: str, image: str) -> list[dict[str, Any]]:
    """A user or system message's contents as API parts (``text``/``image`` name the part types)."""
    parts: list[dict[str, Any]] = []
    for c in m.contents:
        url = image_url(c)
        if url is not None:
            parts.append({"type": image, "image_url": url})
        else:
            body = c.text if c.type == "text" else getattr(tool_work_as_text(c), "text", f"[{c.type}]")
            parts.append({"type": text, "text": body})
    return parts


def tool_schemas(tools: Iterable[Any]) -> list[dict[str, Any]]:
    out = []
    for t in tools:
        if isinstance(t, FunctionTool):
            out.append(t.schema())
        elif isinstance(t, Mapping):
            out.append(dict(t.get("function", t)))
        else:
            out.append(FunctionTool(t).schema())
    return out


class OpenAIClientBase:
    """Configuration, the SDK client, option checks and error mapping."""

    _OTHER_OPTIONS: frozenset[str] = frozenset()
    """The other API's own options: accepted, and left out of this API's requests."""

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
        **defaults: Any,
    ) -> None:
        if client is not None and (timeout is not None or max_retries is not None or api_key or base_url):
            raise UsageError(
                f"{type(self).__name__}: give either client= (configured already) or api_key, base_url, "
                "timeout and max_retries, not both"
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
            if self.base_url:
                kwargs["base_url"] = self.base_url
            if self._timeout is not None:
                kwargs["timeout"] = self._timeout
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

    def _secrets(self) -> list[str]:
        found = [self._api_key, os.environ.get("OPENAI_API_KEY"), getattr(self._client, "api_key", None)]
        return [s for s in found if s and s != _LOCAL_KEY]

    def scrub(self, text: str) -> str:
        """Whatever a server echoes back, the key never reaches a message."""
        for secret in self._secrets():
            text = text.replace(secret, "***")
        return text

    async def call(self, request: Callable[[], Awaitable[T]]) -> T:
        """``await request()`` (a call to the service), with an SDK error raised as agent_nb's."""
        error = None
        try:
            return await request()
        except Exception as exc:
            error = self.error(exc)
        raise error  # outside the except: the SDK's exception (and its request headers) stays behind

    async def stream(self, request: Callable[[], Awaitable[AsyncIterable[Any]]]) -> AsyncGenerator[Any, None]:
        """The events of a streamed call to the service, with an SDK error raised as agent_nb's."""
        error = None
        try:
            async for event in await request():
                yield event
        except Exception as exc:
            error = self.error(exc)
        if error is not None:
            raise error

    def error(self, exc: Exception) -> Exception:
        """The agent_nb error for an SDK error; ``call`` and ``stream`` raise it outside the ``except``.

        Raised there, it has no ``__context__``: the SDK's exception holds the request, and
        the request holds the Authorization header.
        """
        openai = sdk_module()
        where = f"{self!r}"
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(f"{where}: the server did not answer in time; try again or raise timeout=")
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(
                self.scrub(f"{where}: cannot reach the server ({exc}); is it running at {self.base_url or 'the API'}?")
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            body = exc.body if isinstance(exc.body, dict) else {}
            detail = body.get("error", body)
            said = detail.get("message") if isinstance(detail, dict) else None
            said = self.scrub(str(said or exc.message))
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
            return ModelError(self.scrub(f"{where}: {type(exc).__name__}: {exc}"))
        return exc

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where})"
