"""Hypothesis strategies shared by the property tests: texts, JSON values, contents, messages,
histories with tool exchanges (well-formed and not), route capabilities, and junk arguments.

Imported as ``from strategies import ...`` (pytest's default import mode puts this folder on
``sys.path``; see ``conftest.py``).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from agent_nb import (
    AgentSession,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    MirrorChatClient,
    TextContent,
    UriContent,
    UserInputRequestContent,
    UserInputResponseContent,
)
from agent_nb.clients.base import Capabilities

SCALE = float(os.environ.get("AGENT_NB_PROPERTY_SCALE", "1"))


def examples(n: int) -> settings:
    """``@examples(30)``: at most ``n`` examples (times ``AGENT_NB_PROPERTY_SCALE``), on the folder's profile."""
    return settings(max_examples=max(1, int(n * SCALE)))


# -- texts ------------------------------------------------------------------------------

ROLES = ("system", "user", "assistant", "tool")
CONTENT_TYPES = (
    "text",
    "function_call",
    "function_result",
    "user_input_request",
    "user_input_response",
    "data",
    "uri",
)

#: Any Unicode text but lone surrogates (category Cs), which cannot be encoded as UTF-8.
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
short_text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8)
names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def huge_text(draw: st.DrawFn) -> str:
    """A text of tens to hundreds of thousands of characters (a pasted document, a long tool result)."""
    piece = draw(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=6))
    return piece * draw(st.integers(20_000, 120_000) if len(piece) > 2 else st.integers(60_000, 300_000))


any_text = st.one_of(text, text, text, huge_text())
lone_surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


@st.composite
def surrogate_text(draw: st.DrawFn) -> str:
    """A text with at least one lone surrogate somewhere in it."""
    before, after = draw(text), draw(text)
    return before + draw(lone_surrogate) + after


# -- JSON-like values (tool arguments and results) -------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)),
    max_leaves=25,
)
json_objects = st.dictionaries(text, json_values, max_size=5)


# -- contents and messages --------------------------------------------------------------

call_ids = st.one_of(
    st.sampled_from(["c1", "c2", "call_1", "call_abc123", "toolu_01A09q90qw90lq917835lq9", "x"]),
    st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=10),
)
media_types = st.one_of(
    st.sampled_from(["image/png", "image/jpeg", "application/pdf", "text/plain", "audio/wav"]), text
)

extras = st.none() | st.dictionaries(text.filter(lambda key: key != "agent_nb"), json_values, max_size=3)
"""``additional_properties``: what another framework keeps on a message or a content (its bridge's key aside)."""

text_contents = st.builds(TextContent, any_text, additional_properties=extras)
function_calls = st.builds(
    FunctionCallContent,
    call_id=call_ids,
    name=names,
    arguments=st.one_of(json_objects, text),
    additional_properties=extras,
)
function_results = st.one_of(
    st.builds(FunctionResultContent, call_id=call_ids, result=json_values, additional_properties=extras),
    st.builds(FunctionResultContent, call_id=call_ids, exception=text, additional_properties=extras),
)
input_requests = st.builds(
    UserInputRequestContent,
    request_id=names,
    prompt=text,
    options=st.lists(text, max_size=3).map(tuple),
    function_call=st.none() | function_calls,
    additional_properties=extras,
)
input_responses = st.builds(
    UserInputResponseContent,
    request_id=names,
    text=text,
    approved=st.none() | st.booleans(),
    additional_properties=extras,
)
data_contents = st.builds(
    DataContent, data=st.binary(max_size=64), media_type=media_types, additional_properties=extras
)
uri_contents = st.builds(UriContent, uri=text, media_type=st.none() | media_types, additional_properties=extras)

contents = st.one_of(
    text_contents, function_calls, function_results, input_requests, input_responses, data_contents, uri_contents
)

messages = st.builds(
    Message,
    st.sampled_from(ROLES),
    st.lists(contents, max_size=5),
    author_name=st.none() | names,
    message_id=st.none() | names,
    additional_properties=extras,
)
message_lists = st.lists(messages, max_size=8)

small_json = st.recursive(
    json_scalars, lambda c: st.lists(c, max_size=2) | st.dictionaries(short_text, c, max_size=2), max_leaves=4
)
#: Messages of every role and content type, with short texts and small values (histories are many of them).
light_messages = st.builds(
    Message,
    st.sampled_from(ROLES),
    st.lists(
        st.one_of(
            st.builds(TextContent, text),
            st.builds(
                FunctionCallContent,
                call_id=call_ids,
                name=names,
                arguments=st.dictionaries(short_text, small_json, max_size=2),
            ),
            st.builds(FunctionResultContent, call_id=call_ids, result=small_json),
            input_requests,
            input_responses,
            data_contents,
            uri_contents,
        ),
        max_size=4,
    ),
    author_name=st.none() | names,
)


# -- histories: user / assistant / tool-call / tool-result sequences --------------------------------


def image() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(
            DataContent, data=st.binary(min_size=1, max_size=8), media_type=st.sampled_from(["image/png", "image/gif"])
        ),
        st.builds(UriContent, uri=st.just("https://example.org/cat.png"), media_type=st.just("image/png")),
    )


@st.composite
def tool_round(draw: st.DrawFn, pool: list[str]) -> list[Message]:
    """An assistant message with 1-3 calls, then their results in one tool message or one each (any order)."""
    n = draw(st.integers(1, 3))
    ids = draw(st.lists(st.sampled_from(pool) | call_ids, min_size=n, max_size=n, unique=True))
    lead = [TextContent(draw(short_text))] if draw(st.booleans()) else []
    calls = [
        FunctionCallContent(
            call_id=i,
            name=draw(st.sampled_from(["search", "add", "book"])),
            arguments=draw(st.dictionaries(short_text, small_json, max_size=2)),
        )
        for i in ids
    ]
    asking = Message("assistant", [*lead, *calls], author_name=draw(st.none() | st.sampled_from(["planner", "writer"])))
    results = [FunctionResultContent(call_id=i, result=draw(small_json)) for i in ids]
    results = draw(st.permutations(results))
    if draw(st.booleans()):
        return [asking, Message("tool", results)]
    return [asking, *(Message("tool", [r]) for r in results)]


@st.composite
def well_formed_history(draw: st.DrawFn) -> list[Message]:
    """What a healthy conversation looks like: texts, images, system messages and complete tool rounds."""
    pool = draw(st.lists(call_ids, min_size=1, max_size=4, unique=True))
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message("system", draw(short_text)))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "image", "system"]))
        if kind == "tools":
            out.extend(draw(tool_round(pool)))
        elif kind == "image":
            out.append(
                Message(draw(st.sampled_from(["user", "assistant"])), [TextContent(draw(short_text)), draw(image())])
            )
        else:
            out.append(
                Message(kind, draw(short_text), author_name=draw(st.none() | st.sampled_from(["planner", "writer"])))
            )
    return out


def _stray(draw: st.DrawFn) -> Any:
    return draw(
        st.one_of(
            st.builds(FunctionCallContent, call_id=call_ids, name=st.just("search")),
            st.builds(FunctionResultContent, call_id=call_ids, result=json_scalars),
            st.builds(TextContent, short_text),
            image(),
        )
    )


@st.composite
def damaged_history(draw: st.DrawFn) -> list[Message]:
    """A well-formed history, then a few of the damages a moved or trimmed conversation suffers."""
    out = list(draw(well_formed_history()))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["drop", "swap", "duplicate", "rename", "stray", "empty", "trim"]))
        if op == "stray" or not out:  # a call, result, text or image somewhere it should not be
            at = draw(st.integers(0, len(out)))
            role = draw(st.sampled_from(ROLES))
            out.insert(at, Message(role, [_stray(draw) for _ in range(draw(st.integers(1, 2)))]))
        elif op == "drop":
            del out[draw(st.integers(0, len(out) - 1))]
        elif op == "swap" and len(out) > 1:
            i = draw(st.integers(0, len(out) - 2))
            out[i], out[i + 1] = out[i + 1], out[i]
        elif op == "duplicate":
            i = draw(st.integers(0, len(out) - 1))
            out.insert(i + 1, out[i])
        elif op == "rename":
            i = draw(st.integers(0, len(out) - 1))
            m = out[i]
            new = draw(call_ids)
            changed = [c.model_copy(update={"call_id": new}) if hasattr(c, "call_id") else c for c in m.contents]
            out[i] = Message(m.role, changed, author_name=m.author_name)
        elif op == "empty":
            out.insert(draw(st.integers(0, len(out))), Message(draw(st.sampled_from(ROLES)), []))
        elif op == "trim":  # a conversation cut in the middle of a tool round
            out = out[: draw(st.integers(0, len(out)))]
    return out


histories = st.one_of(well_formed_history(), damaged_history(), st.lists(light_messages, max_size=6))

#: Patterns ``repair_history`` can renumber into (one of its id formats matches them) ...
FIXABLE_CALL_ID_PATTERNS = (r"^call_[A-Za-z0-9]+$", r"[A-Za-z0-9_-]{1,64}", r"^c[0-9]{8}$", r"[0-9]+", r"call[0-9]{6}")
#: ... and real ones it cannot (Anthropic's ids; a fixed-width hex id).
UNFIXABLE_CALL_ID_PATTERNS = (r"^toolu_[A-Za-z0-9]{24}$", r"[a-f]{8}")

capabilities = st.builds(
    Capabilities,
    tool_calls=st.booleans(),
    images=st.booleans(),
    system_messages=st.booleans(),
    context_window=st.none() | st.integers(1, 400),
    call_id_pattern=st.none() | st.sampled_from(FIXABLE_CALL_ID_PATTERNS + UNFIXABLE_CALL_ID_PATTERNS),
    trailing_tool_call=st.booleans(),
)


# -- junk arguments -------------------------------------------------------------------------


class Opaque:
    """An object no API expects."""

    def __repr__(self) -> str:
        return "Opaque()"


def _junk_objects() -> st.SearchStrategy[Any]:
    return st.sampled_from(
        [
            Opaque(),
            object(),
            int,
            str,
            print,
            lambda *a, **k: None,
            Message("user", "hi"),
            TextContent("hi"),
            AgentSession("s"),
            MirrorChatClient(),
            Ellipsis,
            NotImplemented,
        ]
    )


content_dicts = st.fixed_dictionaries(
    {"type": st.sampled_from([*CONTENT_TYPES, "bogus", "", "TEXT"]) | st.integers()},
    optional={"text": json_scalars, "call_id": json_scalars, "name": json_scalars, "result": json_scalars},
)

junk_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    text,
    surrogate_text(),
    st.binary(max_size=8),
    st.sampled_from(["", " ", "user", "assistant", "tool", "system", "full", "last_agent", "custom", "a", "b"]),
    _junk_objects(),
    st.complex_numbers(max_magnitude=1e6, allow_nan=False),
)
junk = st.recursive(
    junk_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.frozensets(st.integers() | text, max_size=3),
        st.dictionaries(text, children, max_size=3),
        content_dicts,
    ),
    max_leaves=8,
)
