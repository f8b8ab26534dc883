"""HTML building blocks: escaping, the themed stylesheet, message bubbles, a standalone page.

Every string that reaches HTML goes through ``escape``. The stylesheet is scoped to
``.anb`` (a display never restyles the notebook around it), loads nothing, and colours
everything through CSS variables: in ``auto`` they follow the host's theme (JupyterLab,
VS Code) with light fallbacks; ``light`` and ``dark`` force a palette.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from ..messages import Message

__all__ = ["CSS", "Theme", "bubble", "container", "escape", "fold_list", "page"]

Theme = Literal["auto", "light", "dark"]
T = TypeVar("T")

_LIGHT = (
    "--anb-fg:#1f2328;--anb-muted:#57606a;--anb-bg:#ffffff;--anb-panel:#f6f8fa;--anb-border:#d0d7de;"
    "--anb-accent:#0969da;--anb-ok:#1a7f37;--anb-ok-bg:#dafbe1;--anb-fail:#cf222e;--anb-fail-bg:#ffebe9;"
    "--anb-wait:#9a6700;--anb-wait-bg:#fff8c5"
)
_DARK = (
    "--anb-fg:#e6edf3;--anb-muted:#9198a1;--anb-bg:#0d1117;--anb-panel:#161b22;--anb-border:#3d444d;"
    "--anb-accent:#4493f8;--anb-ok:#3fb950;--anb-ok-bg:#12261e;--anb-fail:#f85149;--anb-fail-bg:#2d1214;"
    "--anb-wait:#d29922;--anb-wait-bg:#272115"
)
_HOST = (  # follow JupyterLab / VS Code when their variables exist
    "--anb-fg:var(--jp-content-font-color1,var(--vscode-editor-foreground,#1f2328));"
    "--anb-muted:var(--jp-content-font-color2,var(--vscode-descriptionForeground,#57606a));"
    "--anb-bg:var(--jp-layout-color0,var(--vscode-editor-background,#ffffff));"
    "--anb-panel:var(--jp-layout-color1,var(--vscode-sideBar-background,#f6f8fa));"
    "--anb-border:var(--jp-border-color1,var(--vscode-panel-border,#d0d7de));"
    "--anb-accent:var(--jp-brand-color1,var(--vscode-textLink-foreground,#0969da));"
    "--anb-ok:var(--jp-success-color1,var(--vscode-testing-iconPassed,#1a7f37));"
    "--anb-fail:var(--jp-error-color1,var(--vscode-errorForeground,#cf222e));"
    "--anb-wait:var(--jp-warn-color1,var(--vscode-editorWarning-foreground,#9a6700));"
    # tints, not colours: they read on a light and on a dark host alike
    "--anb-ok-bg:rgba(46,160,67,.16);--anb-fail-bg:rgba(248,81,73,.16);--anb-wait-bg:rgba(210,153,34,.18)"
)

CSS = (
    f".anb{{{_LIGHT};{_HOST}}}.anb.theme-light{{{_LIGHT}}}.anb.theme-dark{{{_DARK}}}"
    ".anb{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.4;"
    "color:var(--anb-fg);background:var(--anb-bg);padding:6px;border-radius:8px}"
    ".anb h2{font-size:15px;margin:4px 0 8px}.anb h3{margin:0;font-size:14px}"
    # the columns sit beside the graph while they fit at their narrowest, and below it otherwise
    ".anb .run{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}"
    ".anb .graph{flex:0 0 auto;overflow:auto;max-height:80vh;max-width:100%}"
    ".anb .run>.side{flex:1 1 auto;min-width:0}"
    ".anb .cols{display:flex;gap:12px;overflow-x:auto;align-items:flex-start;padding-bottom:6px}"
    ".anb .col{flex:1 1 230px;min-width:190px;max-width:380px;border:1px solid var(--anb-border);border-radius:8px;"
    "background:var(--anb-panel)}"
    ".anb .col>header{padding:8px 10px;border-bottom:1px solid var(--anb-border);background:var(--anb-bg);"
    "border-radius:8px 8px 0 0}"
    ".anb .meta{color:var(--anb-muted);font-size:12px;font-weight:normal}"
    ".anb .card{margin:8px;padding:8px;border-radius:6px;background:var(--anb-bg);border:1px solid var(--anb-border)}"
    ".anb .card.failed{border-color:var(--anb-fail)}"
    ".anb .label{font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:var(--anb-muted);margin:6px 0 2px}"
    ".anb .msg{margin:3px 0;padding:5px 8px;border-radius:10px;white-space:pre-wrap;word-break:break-word}"
    ".anb .msg .who{display:block;font-size:11px;color:var(--anb-muted)}"
    ".anb .msg.system{background:rgba(212,167,44,.18)}.anb .msg.user{background:rgba(84,174,255,.16)}"
    ".anb .msg.assistant{background:rgba(74,194,107,.16)}.anb .msg.tool{background:rgba(163,113,247,.16)}"
    ".anb .msg.dropped{background:rgba(140,149,159,.12);color:var(--anb-muted);text-decoration:line-through}"
    ".anb .badge{display:inline-block;font-size:10px;padding:0 5px;border-radius:8px;margin-left:4px;"
    "background:rgba(140,149,159,.2);color:var(--anb-fg);text-decoration:none}"
    ".anb .badge.moved{background:rgba(219,109,40,.18);color:var(--anb-fg)}"
    ".anb .badge.unseen{background:rgba(248,81,73,.16);color:var(--anb-fg)}"
    ".anb .button{display:inline-block;margin:3px 4px 0 0;padding:1px 8px;border:1px solid var(--anb-accent);"
    "border-radius:10px;color:var(--anb-fg);font-size:12px}"
    ".anb .click{font-weight:600}"
    ".anb .col.chat{flex-basis:260px;border-color:var(--anb-accent)}"
    ".anb .kv{margin:0;font-size:12px}.anb .kv dt{color:var(--anb-muted);float:left;clear:left;margin-right:6px}"
    ".anb .kv dd{margin:0 0 2px 0;word-break:break-word}"
    ".anb .badge.route{background:rgba(84,174,255,.2);color:var(--anb-fg)}"
    ".anb .turn{margin:6px 0 10px}.anb .turn.running{opacity:.85}"
    ".anb td.yes{background:var(--anb-ok-bg)}.anb td.gap{background:var(--anb-fail-bg)}"
    ".anb .status{font-size:11px;padding:0 6px;border-radius:8px;border:1px solid var(--anb-border);"
    "color:var(--anb-fg)}"
    # the border carries the colour, the text stays at full contrast
    ".anb .status.ran{border-color:var(--anb-ok);background:var(--anb-ok-bg)}"
    ".anb .status.failed{border-color:var(--anb-fail);background:var(--anb-fail-bg)}"
    ".anb .status.waiting{border-color:var(--anb-wait);background:var(--anb-wait-bg)}"
    ".anb .fold{color:var(--anb-muted);font-style:italic;font-size:12px;margin:4px 0}"
    ".anb .error{color:var(--anb-fail);white-space:pre-wrap}"
    ".anb details>summary{cursor:pointer;color:var(--anb-accent)}"
    ".anb table{border-collapse:collapse;margin:8px 0}"
    # doubled class: JupyterLab right-aligns table cells with a more specific rule of its own
    ".anb.anb table th,.anb.anb table td{border:1px solid var(--anb-border);padding:3px 8px;text-align:left;"
    "vertical-align:top}"
    ".anb th{background:var(--anb-panel)}"
    ".anb .bar{display:inline-block;height:8px;background:var(--anb-accent);border-radius:2px;margin-right:4px}"
)


def escape(value: object) -> str:
    """``str(value)`` made safe for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def container(body: str, theme: Theme = "auto") -> str:
    """A display's outer element with its stylesheet; ``theme`` picks the palette."""
    if theme not in ("auto", "light", "dark"):
        raise ValueError(f"theme must be 'auto', 'light' or 'dark', not {theme!r}")
    extra = "" if theme == "auto" else f" theme-{theme}"
    return f'<div class="anb{extra}"><style>{CSS}</style>{body}</div>'


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
) -> str:
    """One message as a chat bubble: role, author, badges, text (folded when long), tool work, cards."""
    who = escape(message.role)
    if message.author_name and message.author_name != message.role:
        who += f" · {escape(message.author_name)}"
    if moved_from:
        who += f'<span class="badge moved">{escape(moved_from)} handed over as user</span>'
    if dropped:
        who += '<span class="badge">dropped</span>'
    if badge:
        who += f'<span class="badge unseen">{escape(badge)}</span>'
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
    return f'<div class="{classes}"><span class="who">{who}</span>{"<br>".join(parts)}</div>'


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
