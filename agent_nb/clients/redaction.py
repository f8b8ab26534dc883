"""Secrets, found where a user puts them and kept out of everything a client shows or writes.

A secret is any of:

- an API key (a client's own, ``OPENAI_API_KEY``);
- the value under a key that names a key, token, secret, password, cookie, credentials or
  authorisation (``api_key``, ``Authorization``, ``X-Auth-Token``, ``client_secret``, ...), at any
  depth of headers, options and ``extra_body``; for ``"Bearer abc…"`` both the whole value and
  the token ``abc…``;
- the token of a ``Bearer …`` string anywhere in a request.

``secrets_in(value)`` finds the secrets of a mapping (headers, options); ``scrub(text, secrets)``
replaces every known one (and its JSON-escaped form) and every ``Bearer`` token; ``TextScrubber``
does the same across the pieces of a stream, holding back the end of a piece while it could be
the beginning of a secret, so that a key cut in two by the stream is still caught. Values shorter
than four characters are not treated as secrets (they would blank out ordinary words).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "MIN_LENGTH",
    "TextScrubber",
    "is_secret_key",
    "safe_url",
    "scrub",
    "scrub_tree",
    "secrets_in",
    "shorten",
]

MASK = "***"
MIN_LENGTH = 4

SECRET_KEY = re.compile(
    r"^(.*[_-])?(api[_-]?key|key|authori[sz]ation|(access|auth|bearer|refresh|session|id)?[_-]?token|secret|"
    r"password|passwd|pass|cookie|credentials?)$",
    re.I,
)
_TOKEN = r"[A-Za-z0-9._~+/=-]+"
BEARER = re.compile(rf"(?i)\b(bearer)(\s+)({_TOKEN})")
"""A ``Bearer`` token anywhere (requests, errors): the token is whatever follows."""
_SCHEME = re.compile(rf"(?i)^\s*(bearer|basic|token|digest)\s+({_TOKEN})\s*$")
_ANSWER_BEARER = re.compile(rf"\b(Bearer)(\s+)(?=[A-Za-z._~+/=-]*[0-9])({_TOKEN})")
"""In a model's answer, only a token-like word after ``Bearer``: 8 characters or more, with a digit."""
_BEARER_TAIL = re.compile(rf"(?i)\bbearer(\s+{_TOKEN}?)?$|\b(b|be|bea|bear|beare)$")


def is_secret_key(key: object) -> bool:
    """Whether a mapping key names a secret (``api_key``, ``Authorization``, ``x-auth-token``, ...)."""
    return isinstance(key, str) and SECRET_KEY.search(key) is not None


def secrets_in(value: Any, *, secret: bool = False) -> set[str]:
    """The secrets a value holds: strings under secret keys, at any depth, and every ``Bearer`` token.

    ``secret=True`` says the value itself sits under a secret key: a string there (or in a list
    there) is a secret; a mapping there is searched by its own keys (a JSON schema with a
    ``password`` property does not make ``"string"`` a secret).
    """
    found: set[str] = set()
    if isinstance(value, Mapping):  # under a secret key too: a mapping's own keys say what it holds
        for k, v in value.items():
            found |= secrets_in(v, secret=is_secret_key(k))
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            found |= secrets_in(v, secret=secret)
    elif isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if secret:
            found.add(text.strip())
            scheme = _SCHEME.match(text)
            if scheme:
                found.add(scheme.group(2))
        found.update(m.group(3) for m in BEARER.finditer(text))
    return {s for s in found if len(s) >= MIN_LENGTH}


def _known(secrets: Iterable[str | None]) -> list[str]:
    """Distinct secrets worth replacing, longest first (a key that contains another goes whole)."""
    return sorted({s for s in secrets if s and len(s) >= MIN_LENGTH}, key=lambda s: (-len(s), s))


def _forms(secret: str) -> list[str]:
    """A secret as it may read: plain, escaped inside JSON, percent-encoded in a URL."""
    forms = [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], quote(secret, safe="")]
    return list(dict.fromkeys(forms))


def scrub(text: str, secrets: Iterable[str | None], *, mask: str = MASK, answer: bool = False) -> str:
    """``text`` with every known secret and every ``Bearer`` token replaced by ``mask``.

    ``answer=True`` is for a model's own words: there only a token-like word after ``Bearer``
    (8 characters or more, with a digit) is taken for a token, so prose about bearers survives.
    """
    for secret in _known(secrets):
        for form in _forms(secret):
            if form in text:
                text = text.replace(form, mask)
    if answer:
        return _ANSWER_BEARER.sub(lambda m: m.group(0) if len(m.group(3)) < 8 else m.group(1) + m.group(2) + mask, text)
    return BEARER.sub(lambda m: m.group(1) + m.group(2) + mask, text)


def scrub_tree(value: Any, secrets: Iterable[str | None], *, mask: str = MASK, answer: bool = False) -> Any:
    """``value`` (JSON-like) with ``scrub`` applied to every string in it, keys included."""
    known = _known(secrets)
    if isinstance(value, str):
        return scrub(value, known, mask=mask, answer=answer)
    if isinstance(value, Mapping):
        return {
            scrub(str(k), known, mask=mask, answer=answer) if isinstance(k, str) else k: scrub_tree(
                v, known, mask=mask, answer=answer
            )
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [scrub_tree(v, known, mask=mask, answer=answer) for v in value]
    return value


class TextScrubber:
    """``scrub`` for text that arrives in pieces: ``feed`` each piece, ``flush`` at the end.

    What ``feed`` returns never holds a known secret, even one split across pieces: the end of
    a piece that could be the start of a secret (or of a ``Bearer`` token) waits for the next.
    """

    def __init__(self, secrets: Iterable[str | None], *, mask: str = MASK, answer: bool = True) -> None:
        self.secrets = _known(secrets)
        self.mask = mask
        self.answer = answer
        self._pending = ""

    def _hold(self, text: str) -> int:
        """How many characters at the end of ``text`` may be the beginning of a secret."""
        hold = 0
        for secret in self.secrets:
            for n in range(min(len(secret) - 1, len(text)), hold, -1):
                if text.endswith(secret[:n]):
                    hold = n
                    break
        tail = _BEARER_TAIL.search(text)
        if tail is not None:
            hold = max(hold, len(text) - tail.start())
        return hold

    def feed(self, text: str) -> str:
        text = scrub(self._pending + text, self.secrets, mask=self.mask, answer=self.answer)
        hold = self._hold(text)
        self._pending = text[len(text) - hold :] if hold else ""
        return text[: len(text) - hold]

    def flush(self) -> str:
        text = scrub(self._pending, self.secrets, mask=self.mask, answer=self.answer)
        self._pending = ""
        return text


def shorten(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters in all)"


def safe_url(url: object) -> str:
    """A URL fit to show: no password in it, no secret in its query (``?api-key=`` ...)."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:{MASK}@{host}" if ":" in user else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_key(k) for k, _ in pairs):
            query = urlencode([(k, MASK if is_secret_key(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
