"""Message contents and tools as the two OpenAI APIs spell them, and tool-call arguments read back.

Both clients build their requests' parts with these (``user_parts``, ``image_url``,
``result_text``, ``arguments_json``, ``tool_schemas``) and read a tool call's arguments from an
answer with ``parse_arguments``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...messages import FunctionCallContent, FunctionResultContent, Message, tool_work_as_text
from ...tools import FunctionTool


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
