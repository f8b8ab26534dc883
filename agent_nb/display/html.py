"""HTML building blocks: escaping, the scoped stylesheet, message bubbles, a standalone page.

Every string that reaches HTML goes through ``escape``; the stylesheet is scoped to
``.anb`` so a display never restyles the notebook around it, and nothing is loaded
from the network.
"""

from __future__ import annotations

import html

from ..messages import Message

__all__ = ["CSS", "bubble", "escape", "page"]

CSS = """
.anb{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:13px;color:#1f2328;line-height:1.4}
.anb .cols{display:flex;gap:12px;overflow-x:auto;align-items:flex-start;padding-bottom:6px}
.anb .col{flex:0 0 300px;border:1px solid #d0d7de;border-radius:8px;background:#f6f8fa}
.anb .col>h3{margin:0;padding:8px 10px;font-size:14px;border-bottom:1px solid #d0d7de;background:#fff;
  border-radius:8px 8px 0 0}
.anb .meta{color:#57606a;font-size:12px;font-weight:normal}
.anb .card{margin:8px;padding:8px;border-radius:6px;background:#fff;border:1px solid #e1e4e8}
.anb .card.failed{border-color:#cf222e}
.anb .label{font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:#57606a;margin:6px 0 2px}
.anb .msg{margin:3px 0;padding:5px 8px;border-radius:10px;white-space:pre-wrap;word-break:break-word}
.anb .msg .who{display:block;font-size:11px;color:#57606a}
.anb .msg.system{background:#fff8c5}
.anb .msg.user{background:#ddf4ff}
.anb .msg.assistant{background:#dafbe1}
.anb .msg.tool{background:#f0e7ff}
.anb .msg.dropped{background:#eaeef2;color:#8c959f;text-decoration:line-through}
.anb .badge{display:inline-block;font-size:10px;padding:0 5px;border-radius:8px;background:#eaeef2;color:#57606a;
  margin-left:4px}
.anb .badge.moved{background:#fff1e5;color:#953800}
.anb .error{color:#cf222e;white-space:pre-wrap}
.anb details>summary{cursor:pointer;color:#0969da}
.anb table{border-collapse:collapse;margin:8px 0}
.anb th,.anb td{border:1px solid #d0d7de;padding:4px 10px;text-align:left}
.anb th{background:#f6f8fa}
"""


def escape(value: object) -> str:
    """``str(value)`` made safe for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def _folded(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return escape(text)
    rest = len(text) - max_chars
    return (
        f"{escape(text[:max_chars])}<details><summary>{rest} more characters</summary>"
        f"{escape(text[max_chars:])}</details>"
    )


def bubble(message: Message, *, dropped: bool = False, reassigned: bool = False, max_chars: int = 400) -> str:
    """One message as a chat bubble: role, author, badges, text (folded when long)."""
    who = escape(message.role)
    if message.author_name:
        who += f" · {escape(message.author_name)}"
    if reassigned:
        who += '<span class="badge moved">handed over as user</span>'
    if dropped:
        who += '<span class="badge">dropped</span>'
    parts = []
    if message.text:
        parts.append(_folded(message.text, max_chars))
    for c in message.contents:
        if c.type == "function_call":
            parts.append(f"→ call {escape(c.name)}({escape(c.arguments)}) [{escape(c.call_id)}]")
        elif c.type == "function_result":
            parts.append(f"← result [{escape(c.call_id)}]: {_folded(str(c.result), max_chars)}")
        elif c.type != "text":
            parts.append(f"[{escape(c.type)}]")
    classes = "msg dropped" if dropped else f"msg {escape(message.role)}"
    return f'<div class="{classes}"><span class="who">{who}</span>{"<br>".join(parts)}</div>'


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML document (no scripts, no network)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>body{{margin:24px}}{CSS}</style></head>\n<body>{body}</body></html>\n"
    )
