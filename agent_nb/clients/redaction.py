"""Secrets, found where a user puts them and kept out of everything a client shows or writes.

A secret is any of:

- an API key (a client's own, ``OPENAI_API_KEY``);
- the credentials of a URL (``http://user:password@host``): the password, and the ``Basic``
  credential the HTTP library makes of them, ``base64("user:password")`` (``url_secrets``);
- the value under a key that names a key, token, secret, password, cookie, credentials or
  authorisation (``api_key``, ``Authorization``, ``X-Auth-Token``, ``client_secret``, ...), at any
  depth of headers, options and ``extra_body``; for ``"Bearer abc…"`` (or ``"Basic …"``) both the
  whole value and the token;
- the token of a ``Bearer …`` string anywhere in a request, and that of a ``Basic …`` one when it
  is what ``Basic`` credentials are: the base64 of ``user:password``.

``secrets_in(value)`` finds the secrets of a mapping (headers, options); ``option_secrets`` those of
a request's options (its ``extra_headers``, ``extra_body``, ``extra_query`` and secret-named options,
never its messages); ``client_secrets`` those a chat client holds (and the clients it wraps). A
``Scrubber`` is a set of known secrets compiled once, into one regular expression (every secret
plain, JSON-escaped and percent-encoded, longest first): its ``scrub``
replaces every one and every ``Bearer`` or ``Basic`` credential; ``scrub(text, secrets)`` and
``scrub_tree`` take secrets or a ``Scrubber``; ``redact_tree`` also masks whole what sits under a
secret-naming key (how a request is written to a cassette). ``TextScrubber`` does the same across
the pieces of a stream, holding back the end of a piece while it could be the beginning of a
secret, so that a key cut in two by the stream is still caught. Values shorter than four
characters are not treated as secrets (they would blank out ordinary words).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, unquote_plus, urlencode, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "MIN_LENGTH",
    "REQUEST_EXTRAS",
    "Scrubber",
    "TextScrubber",
    "client_secrets",
    "is_secret_key",
    "option_secrets",
    "redact_tree",
    "safe_url",
    "scrub",
    "scrub_tree",
    "secrets_in",
    "shorten",
    "url_secrets",
    "without_credentials",
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
BASIC = re.compile(r"(?i)\b(basic)(\s+)([A-Za-z0-9+/]+=*)")
"""A ``Basic`` credential anywhere: taken for one only when it is the base64 of ``user:password``."""
_SCHEME = re.compile(rf"(?i)^\s*(bearer|basic|token|digest)\s+({_TOKEN})\s*$")
_ANSWER_BEARER = re.compile(rf"\b(Bearer)(\s+)(?=[A-Za-z._~+/=-]*[0-9])({_TOKEN})")
"""In a model's answer, only a token-like word after ``Bearer``: 8 characters or more, with a digit."""
_SCHEMES = re.compile(r"(?i)\b(?:bearer|basic)\s")
"""Whether a text may hold a ``Bearer`` or ``Basic`` credential at all (most hold none)."""
_SCHEME_TAIL = re.compile(r"(?i)\b(bearer|basic)(\s+[A-Za-z0-9._~+/=-]*)?$|\b(b|be|bea|bear|beare|ba|bas|basi)$")
"""The end of a text that may be a credential still arriving: its scheme, what may follow, or a start of it."""
REQUEST_EXTRAS = frozenset({"extra_headers", "extra_body", "extra_query"})
"""The options of a request that carry what goes on the wire besides the API's own fields."""


@functools.lru_cache(maxsize=1024)
def _secret_name(key: str) -> bool:
    return SECRET_KEY.search(key) is not None


def is_secret_key(key: object) -> bool:
    """Whether a mapping key names a secret (``api_key``, ``Authorization``, ``x-auth-token``, ...)."""
    return isinstance(key, str) and _secret_name(key)


def _basic_credentials(token: str) -> str | None:
    """``user:password`` when ``token`` is its base64 (what a ``Basic`` credential is), else ``None``."""
    if len(token) < MIN_LENGTH or len(token) % 4:
        return None
    try:
        text = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # not base64, or not text
        return None
    return text if ":" in text and text.isprintable() else None


def _credential(token: str) -> set[str]:
    """A credential's token, and the password inside it when it is a ``Basic`` one."""
    found = {token}
    basic = _basic_credentials(token)
    if basic is not None:
        found.add(basic.partition(":")[2])
    return found


def secrets_in(value: Any, *, secret: bool = False) -> set[str]:
    """The secrets a value holds: strings under secret keys, at any depth, and every ``Bearer``/``Basic`` token.

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
                found |= _credential(scheme.group(2))
        if _SCHEMES.search(text) is not None:
            found.update(m.group(3) for m in BEARER.finditer(text))
            for m in BASIC.finditer(text):
                if _basic_credentials(m.group(3)) is not None:
                    found |= _credential(m.group(3))
    return {s for s in found if len(s) >= MIN_LENGTH}


def option_secrets(options: Mapping[str, Any] | None) -> set[str]:
    """The secrets of a request's own options, and only those: never its messages, ``input`` or tools.

    Those of ``extra_headers``, ``extra_body`` and ``extra_query`` (``secrets_in``), and the values of
    options whose names say key, token, secret, password or authorisation.
    """
    found: set[str] = set()
    for key, value in (options or {}).items():
        if key in REQUEST_EXTRAS:
            found |= secrets_in(value)
        elif is_secret_key(key):
            found |= secrets_in(value, secret=True)
    return found


def client_secrets(client: object) -> list[str]:
    """The secrets a chat client holds, and those of the clients it wraps (a router's routes, a recorder's inner).

    A client names its own: agent_nb's OpenAI clients with ``_secrets()`` (their key, the
    environment's, those of their URL, headers and default options), a recorder with the
    ``secrets=`` it was given. A client that cannot say has nothing to add.
    """
    found: list[str] = []
    seen: set[int] = set()
    todo: list[tuple[object, int]] = [(client, 0)]
    while todo:
        one, depth = todo.pop()
        if one is None or id(one) in seen or depth > 8:  # wrappers do not go deeper (a mock's would, forever)
            continue
        seen.add(id(one))
        own = getattr(one, "_secrets", None)
        try:
            named = own() if callable(own) else own
        except Exception:  # a client that cannot say has nothing to add
            named = None
        if isinstance(named, (list, tuple, set, frozenset)):
            found += [s for s in named if isinstance(s, str)]
        routes = getattr(one, "routes", None)
        if isinstance(routes, Mapping):
            todo += ((route, depth + 1) for route in routes.values())
        todo.append((getattr(one, "inner", None), depth + 1))
    return list(dict.fromkeys(found))


def _known(secrets: Iterable[str | None]) -> list[str]:
    """Distinct secrets worth replacing, longest first (a key that contains another goes whole)."""
    return sorted({s for s in secrets if s and len(s) >= MIN_LENGTH}, key=lambda s: (-len(s), s))


def _forms(secret: str) -> list[str]:
    """A secret as it may read: plain, escaped inside JSON, percent-encoded in a URL."""
    forms = [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], quote(secret, safe="")]
    return list(dict.fromkeys(forms))


def _mask_token(mask: str, answer: bool) -> Any:
    def bearer(m: re.Match[str]) -> str:
        if answer and len(m.group(3)) < 8:
            return m.group(0)
        return m.group(1) + m.group(2) + mask

    return bearer


class Scrubber:
    """Known secrets compiled once: ``scrub`` replaces them all (and every credential) in one pass.

    Every secret is looked for plain, JSON-escaped and percent-encoded, in one regular expression
    (an alternation, longest first). Where two secrets overlap, every character of both is masked.
    Build one per client (or per request) and reuse it for every piece of every answer; it holds
    the secrets, so it never shows them (its ``repr`` says how many it knows).
    """

    __slots__ = ("_any", "_by_first", "_each", "_longest", "secrets")

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self.secrets: tuple[str, ...] = tuple(_known(secrets))
        forms = sorted({f for s in self.secrets for f in _forms(s)}, key=lambda f: (-len(f), f))
        alternation = "|".join(re.escape(f) for f in forms)
        self._any = re.compile(alternation) if forms else None
        self._each = re.compile(f"(?=({alternation}))") if forms else None
        """Every occurrence, overlapping ones too: the longest form that starts at each position."""
        by_first: dict[str, list[str]] = {}
        for secret in self.secrets:
            by_first.setdefault(secret[0], []).append(secret)
        self._by_first = {c: tuple(group) for c, group in by_first.items()}
        """The secrets by their first character: where the beginning of one may stand (``hold``)."""
        self._longest = max((len(s) for s in self.secrets), default=0)

    @classmethod
    def of(cls, secrets: Iterable[str | None] | Scrubber) -> Scrubber:
        """``secrets`` as a ``Scrubber`` (the same one again for the same secrets)."""
        if isinstance(secrets, Scrubber):
            return secrets
        return _compiled(tuple(s for s in secrets if s))

    def adding(self, more: Iterable[str | None]) -> Scrubber:
        """Itself, or a scrubber that also knows ``more`` when it holds a secret this one does not."""
        extra = [s for s in more if s and len(s) >= MIN_LENGTH and s not in self.secrets]
        return Scrubber.of((*self.secrets, *extra)) if extra else self

    def __iter__(self) -> Iterator[str]:
        return iter(self.secrets)

    def __len__(self) -> int:
        return len(self.secrets)

    def __repr__(self) -> str:
        return f"Scrubber({len(self.secrets)} secrets)"

    def finds(self, text: str) -> bool:
        """Whether ``text`` holds one of the known secrets (in any of its forms)."""
        return self._any is not None and self._any.search(text) is not None

    def scrub(self, text: str, *, mask: str = MASK, answer: bool = False) -> str:
        """``text`` with every known secret and every ``Bearer`` (and ``Basic``) credential replaced by ``mask``.

        ``answer=True`` is for a model's own words: there only a token-like word after ``Bearer``
        (8 characters or more, with a digit) is taken for a token, so prose about bearers survives.
        """
        return self.credentials_masked(self.secrets_masked(text, mask=mask), mask=mask, answer=answer)

    def secrets_masked(self, text: str, *, mask: str = MASK) -> str:
        """``text`` with every known secret replaced by ``mask`` (``scrub`` without the credentials)."""
        if self._any is not None:
            first = self._any.search(text)
            if first is not None:
                return self._mask_all(text, first.start(), mask)
        return text

    @staticmethod
    def credentials_masked(text: str, *, mask: str = MASK, answer: bool = False) -> str:
        """``text`` with the token of every ``Bearer`` and ``Basic`` credential replaced by ``mask``."""
        if _SCHEMES.search(text) is None:
            return text
        text = (_ANSWER_BEARER if answer else BEARER).sub(_mask_token(mask, answer), text)
        return BASIC.sub(
            lambda m: m.group(1) + m.group(2) + mask if _basic_credentials(m.group(3)) is not None else m.group(0),
            text,
        )

    def _mask_all(self, text: str, start: int, mask: str) -> str:
        assert self._each is not None
        spans: list[list[int]] = []
        for m in self._each.finditer(text, start):
            begin, end = m.start(), m.start() + len(m.group(1))
            if spans and begin < spans[-1][1]:  # overlaps the one before: one mask over both
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([begin, end])
        out, at = [], 0
        for begin, end in spans:
            out += [text[at:begin], mask]
            at = end
        out.append(text[at:])
        return "".join(out)

    def hold(self, text: str) -> int:
        """How many characters at the end of ``text`` may be the beginning of a known secret."""
        end = len(text)
        best = end  # where the longest such beginning starts
        start = end - min(self._longest - 1, end)
        for first, group in self._by_first.items():
            at = text.find(first, start, best)
            while at != -1:
                tail = text[at:]
                if any(len(secret) > len(tail) and secret.startswith(tail) for secret in group):
                    best = at
                    break
                at = text.find(first, at + 1, best)
        return end - best


@functools.lru_cache(maxsize=64)
def _compiled(secrets: tuple[str, ...]) -> Scrubber:
    return Scrubber(secrets)


def scrub(text: str, secrets: Iterable[str | None] | Scrubber, *, mask: str = MASK, answer: bool = False) -> str:
    """``text`` with every known secret and every ``Bearer`` (or ``Basic``) credential replaced by ``mask``.

    ``answer=True`` is for a model's own words: there only a token-like word after ``Bearer``
    (8 characters or more, with a digit) is taken for a token, so prose about bearers survives.
    """
    return Scrubber.of(secrets).scrub(text, mask=mask, answer=answer)


def scrub_tree(value: Any, secrets: Iterable[str | None] | Scrubber, *, mask: str = MASK, answer: bool = False) -> Any:
    """``value`` (JSON-like) with ``scrub`` applied to every string in it, keys included."""
    scrubber = Scrubber.of(secrets)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrubber.scrub(value, mask=mask, answer=answer)
        if isinstance(value, Mapping):
            return {
                scrubber.scrub(k, mask=mask, answer=answer) if isinstance(k, str) else k: walk(v)
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        return value

    return walk(value)


def redact_tree(value: Any, secrets: Iterable[str | None] | Scrubber = (), *, mask: str = MASK) -> Any:
    """``value`` (JSON-like) with what sits under a secret-naming key masked, and every string scrubbed.

    The rules of ``secrets_in``: under a secret key a string (or a number) is masked whole, a list
    item by item, and a mapping keeps its keys and is read by them. What ``secrets_in`` finds in
    ``value`` is a secret wherever else it appears in it, as are ``secrets``: every other string has
    them, and its ``Bearer`` and ``Basic`` credentials, masked (``scrub``). This is how a request is
    written to a cassette, and how a replayed request is compared with it.
    """
    scrubber = Scrubber.of(secrets).adding(secrets_in(value))

    def walk(value: Any, secret: bool) -> Any:
        if isinstance(value, Mapping):
            return {
                scrubber.scrub(k, mask=mask) if isinstance(k, str) else k: walk(v, is_secret_key(k))
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [walk(v, secret) for v in value]
        if secret and isinstance(value, (str, bytes, int, float)) and not isinstance(value, bool):
            return mask
        if isinstance(value, str):
            return scrubber.scrub(value, mask=mask)
        return value

    return walk(value, False)


class TextScrubber:
    """``scrub`` for text that arrives in pieces: ``feed`` each piece, ``flush`` at the end.

    What ``feed`` returns never holds a known secret, even one split across pieces: the end of
    a piece that could be the start of a secret (or of a ``Bearer``/``Basic`` credential) waits
    for the next. ``secrets`` may be a ``Scrubber`` already compiled (a client's, a request's).
    """

    def __init__(self, secrets: Iterable[str | None] | Scrubber, *, mask: str = MASK, answer: bool = True) -> None:
        self.scrubber = Scrubber.of(secrets)
        self.secrets = list(self.scrubber.secrets)
        self.mask = mask
        self.answer = answer
        self._pending = ""

    def _hold(self, text: str) -> int:
        """How many characters at the end of ``text`` may be the beginning of a secret."""
        hold = self.scrubber.hold(text)
        tail = _SCHEME_TAIL.search(text)
        if tail is not None:
            hold = max(hold, len(text) - tail.start())
        return hold

    def feed(self, text: str) -> str:
        text = self.scrubber.secrets_masked(self._pending + text, mask=self.mask)
        hold = self._hold(text)
        self._pending = text[len(text) - hold :] if hold else ""
        # a credential is masked once it is whole: one still arriving is held back, whole or not
        return self.scrubber.credentials_masked(text[: len(text) - hold], mask=self.mask, answer=self.answer)

    def flush(self) -> str:
        text = self.scrubber.scrub(self._pending, mask=self.mask, answer=self.answer)
        self._pending = ""
        return text


def shorten(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters in all)"


_USERINFO = re.compile(r"^(?P<head>(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)?(?P<userinfo>[^/?#]*)@")
"""The credentials at the start of a URL (``scheme://user:password@``), found even where it cannot be parsed."""
_QUERY_PAIR = re.compile(r"(?<=[?&;])([^=&;#]*)=([^&;#]*)")


def _userinfo(text: str) -> tuple[str, str | None] | None:
    """The user and password of a URL (``None``: no password), or ``None`` when it has no credentials."""
    found = _USERINFO.match(text)
    if found is None:
        return None
    user, colon, password = found.group("userinfo").partition(":")
    return user, (password if colon else None)


def _query(text: str) -> str:
    try:
        return urlsplit(text).query
    except ValueError:
        start = text.find("?")
        return "" if start < 0 else text[start + 1 :].partition("#")[0]


def without_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its credentials, and the ``Basic`` token they make (``None``: it had none).

    The token is the one the HTTP library would send for them (``base64("user:password")``, each
    percent-decoded), so a client can send it as a header and keep the password out of the URL
    the library logs and shows.
    """
    found = _USERINFO.match(url)
    if found is None:
        return url, None
    user, _, password = found.group("userinfo").partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return f"{found.group('head') or ''}{url[found.end() :]}", token


def url_secrets(url: object) -> set[str]:
    """The secrets a URL holds (one that cannot be parsed too).

    Its password (or a user given alone: a token), the ``Basic`` credential the HTTP library makes
    of them (``base64("user:password")``, as given and percent-decoded), and the values of
    secret-named query parameters (``?api-key=...``).
    """
    if not url:
        return set()
    text = str(url)
    found: set[str] = set()
    credentials = _userinfo(text)
    if credentials is not None:
        user, password = credentials
        for u, p in {(user, password or ""), (unquote(user), unquote(password or ""))}:
            found.add(p if p else u)  # without a password, the user is the credential
            found.add(base64.b64encode(f"{u}:{p}".encode()).decode("ascii"))
    for key, value in parse_qsl(_query(text), keep_blank_values=True):
        if is_secret_key(key):
            found.add(value)
    return {s for s in found if len(s) >= MIN_LENGTH}


def safe_url(url: object) -> str:
    """A URL fit to show: no password in it, no secret in its query (``?api-key=`` ...).

    A URL that cannot be parsed is masked the same way, by its text: never shown raw.
    """
    text = str(url)
    credentials = _USERINFO.match(text)
    if credentials is not None:
        user, colon, _ = credentials.group("userinfo").partition(":")
        shown = f"{user}:{MASK}" if colon else MASK
        text = f"{credentials.group('head') or ''}{shown}@{text[credentials.end() :]}"
    try:
        parts = urlsplit(text)
    except ValueError:  # shown as text, masked all the same
        return _QUERY_PAIR.sub(
            lambda m: f"{m.group(1)}={MASK}" if is_secret_key(unquote_plus(m.group(1))) else m.group(0), text
        )
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_key(k) for k, _ in pairs):
            query = urlencode([(k, MASK if is_secret_key(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
