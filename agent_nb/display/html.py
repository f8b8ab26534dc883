"""HTML building blocks: escaping, the themed stylesheet, message bubbles, a standalone page.

Every string that reaches HTML goes through ``escape``. The stylesheet
(``css/display.css``, package data) is scoped to ``.anb`` (a display never restyles the
notebook around it), loads nothing, and colours everything through CSS variables: in
``auto`` they follow the host's theme (JupyterLab, VS Code) with light fallbacks; ``light``
and ``dark`` force a palette.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Literal, TypeVar

from ..messages import Message

__all__ = ["CSS", "SAYS", "Theme", "badge_html", "bubble", "container", "escape", "fold_list", "page", "stylesheet"]

Theme = Literal["auto", "light", "dark"]
T = TypeVar("T")


def _minified(css: str) -> str:
    """A stylesheet without comments and the spaces it does not need (it is written into every display)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"\s+", " ", css)
    css = re.sub(r" ?([{};,]) ?", r"\1", css)
    return css.replace(": ", ":").replace(";}", "}").strip()


@functools.cache
def stylesheet(name: str) -> str:
    """The stylesheet ``agent_nb/display/css/<name>.css``, read once."""
    return _minified((resources.files(__package__) / "css" / f"{name}.css").read_text(encoding="utf-8"))


CSS = stylesheet("display")


def escape(value: object) -> str:
    """``str(value)`` made safe for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def container(body: str, theme: Theme = "auto", *, stylesheet: bool = True) -> str:
    """A display's outer element with its stylesheet; ``theme`` picks the palette.

    ``stylesheet=False`` leaves the stylesheet out, for a page that already holds it once (a widget
    redrawn every turn beside one that carries it).
    """
    if theme not in ("auto", "light", "dark"):
        raise ValueError(f"theme must be 'auto', 'light' or 'dark', not {theme!r}")
    extra = "" if theme == "auto" else f" theme-{theme}"
    return f'<div class="anb{extra}">{f"<style>{CSS}</style>" if stylesheet else ""}{body}</div>'


def _folded(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return escape(text)
    hidden = text[max_chars : max_chars * 10]
    beyond = len(text) - max_chars - len(hidden)
    tail = f" … and {beyond} more characters" if beyond > 0 else ""
    return (
        f"{escape(text[:max_chars])}<details><summary>{len(text) - max_chars} more characters</summary>"
        f"{escape(hidden)}{tail}</details>"
    )


def bubble(
    message: Message,
    *,
    dropped: bool = False,
    moved_from: str | None = None,
    max_chars: int = 400,
    badge: str | None = None,
    origin: str | None = None,
) -> str:
    """One message as a chat bubble: role, author, badges, text (folded when long), tool work, cards.

    Where the stylesheet is removed (an untrusted notebook), the bubble still reads as a line:
    separators the stylesheet hides show (``[input] user (dropped): text``), and a dropped
    message is struck through by ``<del>``, which needs no stylesheet.
    """
    who = f"{badge_html('origin', origin, '[', '] ')}" if origin else ""
    who += escape(message.role)
    if message.author_name and message.author_name != message.role:
        who += f" · {escape(message.author_name)}"
    if moved_from:
        who += badge_html("moved", f"{moved_from} handed over as user")
    if dropped:
        who += badge_html("", "dropped")
    if badge:
        who += badge_html("unseen", badge)
    parts = []
    if message.text:
        parts.append(_folded(message.text, max_chars))
    for c in message.contents:
        if c.type == "function_call":
            parts.append(f"→ call {escape(c.name)}({_folded(str(c.arguments), max_chars)}) [{escape(c.call_id)}]")
        elif c.type == "function_result":
            outcome = f"error: {c.exception}" if c.exception else c.result
            parts.append(f"← result [{escape(c.call_id)}]: {_folded(str(outcome), max_chars)}")
        elif c.type == "user_input_request":
            buttons = "".join(f'<span class="button">{escape(o)}</span>' for o in c.options)
            parts.append(f"{_folded(c.prompt, max_chars)}{'<br>' + buttons if buttons else ''}")
        elif c.type == "user_input_response":
            parts.append(f'<span class="click">▸ {escape(c.text)}</span>')
        elif c.type != "text":
            parts.append(f"[{escape(c.type)}]")
    classes = "msg dropped" if dropped else f"msg {escape(message.role)}"
    body = "<br>".join(parts)
    if dropped:
        body = f"<del>{body}</del>"
    return f'<div class="{classes}"><span class="who">{who}</span>{SAYS}{body}</div>'


SAYS = '<span class="sep">: </span>'
"""Between who says and what: shown only where the stylesheet is removed (``user: hello``)."""


def badge_html(kind: str, text: str, before: str = " (", after: str = ")") -> str:
    """A badge; ``before`` and ``after`` show only where the stylesheet is removed (around its text)."""
    classes = f"badge {kind}" if kind else "badge"
    badge = f'<span class="{classes}">{escape(text)}</span>'
    return f'<span class="sep">{before}</span>{badge}<span class="sep">{after}</span>'


def fold_list(items: Sequence[T], limit: int, render: Callable[[int, T], str], what: str = "messages") -> str:
    """At most ``limit`` items rendered (``render(index, item)``): the first few and the last, the rest counted.

    Only what is shown is rendered, so a long conversation costs what the page shows.
    """
    n = len(items)
    if n <= limit:
        return "".join(render(i, item) for i, item in enumerate(items))
    head = max(limit // 4, 1)
    tail = limit - head
    shown = [render(i, items[i]) for i in range(head)]
    shown.append(f'<div class="fold">… {n - head - tail} {what} not shown …</div>')
    shown.extend(render(i, items[i]) for i in range(n - tail, n))
    return "".join(shown)


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML document (no scripts, no network)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<style>body{margin:24px;font-family:system-ui,-apple-system,'Segoe UI',sans-serif}</style>"
        f"</head>\n<body>{body}</body></html>\n"
    )
