"""Finding duplicate and missed answers in a harness conversation, with the remedy for each.

``find_gaps(trace)`` reads only the trace — the user's chat, every part's active context,
what each wrote and returned — so it reports what happened, in any harness. Each rule's
docstring names the section of docs/context-distribution.md it applies; all six are listed in
docs/context-distribution.md#what-goes-wrong-the-six-findings.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from ..contents import shorten
from ..errors import ArgumentError
from ..messages import Message
from ..rendering import Displayable
from ..trace import ContextSnapshot, Trace
from ..trace.who_has import strings_of
from .calls import ComponentCall, ComponentResult, click_of
from .matching import SIMILAR, content_words, mentions
from .planners import NO_ANSWER, Answer, Call

__all__ = ["KINDS", "Finding", "Findings", "find_gaps"]

ORCHESTRATORS = frozenset({"orchestrator", "child agent", "connected agent"})
SUB_AGENTS = frozenset({"child agent", "connected agent"})
KINDS = (
    "duplicate answer",
    "missed answer",
    "answer shown but not returned",
    "card action lost",
    "unanswered request passed in parent context",
    "component returned nothing",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One gap: what kind, which part, when, the evidence (message and call ids), and what to do."""

    kind: str
    component: str
    turn: int
    evidence: tuple[str, ...]
    detail: str
    remedy: str
    rule: str
    """The rule the finding comes from, in one sentence (explained in docs/context-distribution.md)."""

    def __str__(self) -> str:
        return f"turn {self.turn} · {self.kind} · {self.component}: {self.detail}"


class Findings(Displayable, Sequence[Finding]):
    """The findings of one conversation, in turn order; a table in a notebook."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self._items = tuple(sorted(findings, key=lambda f: (f.turn, KINDS.index(f.kind))))

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> Finding: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Finding]: ...
    def __getitem__(self, i: int | slice) -> Finding | Sequence[Finding]:
        return self._items[i]

    def of_kind(self, kind: str) -> list[Finding]:
        if kind not in KINDS:
            raise ArgumentError(f"unknown kind {kind!r}; the kinds are: {', '.join(KINDS)}", argument="kind")
        return [f for f in self._items if f.kind == kind]

    def kinds(self) -> list[str]:
        return [f.kind for f in self._items]

    def to_text(self, *, width: int = 110) -> str:
        if not self._items:
            return "no gaps found: no duplicate or missed answers"
        import textwrap

        lines = []
        for f in self._items:  # wrapped, never cut: the remedy is the point of the report
            lines += textwrap.wrap(str(f), width, subsequent_indent="    ")
            lines += textwrap.wrap(f"    evidence: {', '.join(f.evidence)}", width, subsequent_indent="              ")
            lines += textwrap.wrap(f"    remedy: {f.remedy}", width, subsequent_indent="            ")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Findings({len(self)}: {', '.join(self.kinds()) or 'none'})"


def _turn_of(message_id: str | None) -> int:
    if message_id and message_id.startswith("t"):
        head = message_id[1:].split(".", 1)[0]
        if head.isdigit():
            return int(head)
    return 0


def _prompt(m: Message) -> Any:
    return next((c for c in m.contents if c.type == "user_input_request"), None)


class _Conversation:
    """The trace, indexed the ways the rules read it."""

    def __init__(self, trace: Trace) -> None:
        self.snapshots = list(trace)
        self.chat = trace.chat
        self.kinds = {s.executor_id: s.kind for s in self.snapshots}
        self.answers = [m for m in self.chat if m.role == "assistant" and m.text]
        self.results = [
            (s, sent.message) for s in self.snapshots for sent in s.sent if isinstance(sent.message, ComponentResult)
        ]
        self._words: dict[int, tuple[str, frozenset[str]]] = {}
        self.callers = {  # who called each generative-answers node or component, by id
            s.executor_id: s.received.caller for s in self.snapshots if isinstance(s.received, ComponentCall)
        }

    def similar(self, a: Message, b: Message) -> bool:
        """``words.similar``, with each message's words found once."""
        (ta, wa), (tb, wb) = self._normal(a), self._normal(b)
        if ta in tb or tb in ta:
            return True
        return bool(wa and wb) and len(wa & wb) / min(len(wa), len(wb)) >= SIMILAR

    def _normal(self, m: Message) -> tuple[str, frozenset[str]]:
        hit = self._words.get(id(m))
        if hit is None:
            hit = self._words[id(m)] = (" ".join(m.text.casefold().split()), content_words(m.text))
        return hit

    def name(self, executor_id: str | None) -> str:
        """A part as a sentence names it: ``topic 'baggage'``, ``orchestrator``."""
        kind = self.kind(executor_id)
        return executor_id or "?" if kind in ("", executor_id) else f"{kind} {executor_id!r}"

    def kind(self, executor_id: str | None) -> str:
        return self.kinds.get(executor_id or "", "")

    def later(self, s: ContextSnapshot, executor_id: str) -> Iterator[ContextSnapshot]:
        return (x for x in self.snapshots if x.executor_id == executor_id and (x.turn, x.index) > (s.turn, s.index))


def duplicate_answers(c: _Conversation) -> Iterator[Finding]:
    """Two parts told the user the same thing.

    Rule: docs/context-distribution.md#the-standard-harness — components write to the chat
    behind the orchestrator, which cannot see it, and nothing reconciles at the top.
    """
    for j, later in enumerate(c.answers):
        for earlier in c.answers[:j]:
            if earlier.author_name == later.author_name or not c.similar(earlier, later):
                continue
            first, second = earlier.author_name or "?", later.author_name or "?"
            yield Finding(
                "duplicate answer",
                second,
                _turn_of(later.message_id),
                (earlier.message_id or "", later.message_id or ""),
                f"{c.name(second)} told the user again what {c.name(first)} had shown in turn "
                f"{_turn_of(earlier.message_id)}: {shorten(repr(later.text), 80)}",
                _duplicate_remedy(c, first, second),
                "While a component runs, the orchestrator cannot see what that component sends to the user; "
                "the orchestrator does not reconcile context at the top level.",
            )
            break


def _duplicate_remedy(c: _Conversation, first: str, second: str) -> str:
    if c.kind(second) == "connected agent":
        return (
            f"Set include_parent_context=False on {second}: the parent conversation it received still held "
            "the request with no answer it could see, so it answered it again."
        )
    if c.kind(second) == "child agent":
        return (
            f"{second} is a child agent: it always receives the parent's conversation and has no setting to leave "
            "it out. Make it a ConnectedAgent with include_parent_context=False, or let the parent answer the "
            "request itself so that it no longer looks unanswered."
        )
    owner = c.callers.get(first, first) if c.kind(first) == "generative answers" else first
    if c.kind(first) in ("topic", "generative answers") or c.kind(first) in SUB_AGENTS:
        return (
            f"Return the answer as an output of {owner} and set a 'responded' status output, so that "
            f"{second} knows the user already has it."
        )
    return "Let one part own this answer, and give it to the others as an output."


def missed_answers(c: _Conversation) -> Iterator[Finding]:
    """The user asked and got no answer, or was asked again for what they had already given.

    Rule: docs/context-distribution.md#how-context-flows-in-and-back — what a component only
    shows the user or keeps in its variables never reaches the orchestrator.
    """
    rule = "What a component only shows the user, or only keeps in its own variables, never reaches the orchestrator."
    for i, m in enumerate(c.chat):
        prompt = _prompt(m)
        if prompt is not None and prompt.options and c.kind(m.author_name) in ORCHESTRATORS:
            for earlier in c.chat[:i]:
                if earlier.role != "user":
                    continue
                given = click_of(earlier) or earlier.text
                value = next((o for o in prompt.options if mentions(given, o)), None)
                if value is not None:
                    yield Finding(
                        "missed answer",
                        m.author_name or "?",
                        _turn_of(m.message_id),
                        (earlier.message_id or "", m.message_id or ""),
                        f"{m.author_name} asked {prompt.prompt!r} although the user had answered {value!r} in "
                        f"turn {_turn_of(earlier.message_id)}; it never reached its context",
                        "Return what the user gave as an output of the component that received it.",
                        rule,
                    )
                    break
        if m.role != "user" or not m.text or (i > 0 and _prompt(c.chat[i - 1]) is not None):
            continue  # only requests: not clicks, not typed replies to a question
        after = []
        for n in c.chat[i + 1 :]:
            if n.role == "user":
                break
            after.append(n)
        if any(_prompt(n) is not None for n in after):
            continue
        texts = [n.text for n in after if n.text]
        if not texts or all(t == NO_ANSWER for t in texts):
            yield Finding(
                "missed answer",
                "orchestrator" if not after else after[-1].author_name or "?",
                _turn_of(m.message_id),
                (m.message_id or "", *(n.message_id or "" for n in after)),
                f"the request {shorten(repr(m.text), 50)} got "
                + ("no answer at all" if not texts else "only 'could not find an answer'"),
                "Give the component that can answer it a description the orchestrator matches, and make it "
                "return its answer as an output.",
                rule,
            )


def shown_not_returned(c: _Conversation) -> Iterator[Finding]:
    """A component showed the user an answer but returned nothing that says so.

    Rule: docs/context-distribution.md#warning-1-topics-return-plain-text — implicit text does
    not say whether the user saw it; the remedy is a 'responded' status output.
    """
    for s, result in c.results:
        if c.kind(result.caller) not in ORCHESTRATORS or not result.wrote or result.responded:
            continue
        if result.waiting is not None:
            continue  # not done yet: it returns its outputs when it ends
        outputs = ", ".join(result.outputs) or "no outputs"
        yield Finding(
            "answer shown but not returned",
            result.component,
            s.turn,
            result.wrote,
            f"{result.component} wrote {len(result.wrote)} message(s) to the chat and returned {outputs} to "
            f"{result.caller}, which cannot tell that the user saw them",
            "Return what it showed as an output and set a 'responded' status output.",
            "Implicit context returned by topics is plain text only, and does not say whether the user saw it.",
        )


def card_actions_lost(c: _Conversation) -> Iterator[Finding]:
    """A card click reached the topic's variables and nowhere else.

    Rule: docs/context-distribution.md#warning-1-topics-return-plain-text — a card's buttons and
    the user's click on one never reach the context; the remedy is a topic output.
    """
    for s in c.snapshots:
        call = s.received
        if not isinstance(call, ComponentCall) or call.reply is None:
            continue
        value = click_of(call.reply)
        if value is None:
            continue
        returned = any(
            isinstance(x.message, ComponentResult) and any(mentions(str(v), value) for v in x.message.outputs.values())
            for x in s.sent
        )
        if returned:
            continue  # the topic handed the click back as an output: it reached its caller
        recovered = next(
            (
                x
                for x in c.later(s, call.caller)
                if any(mentions(t, value) for m in (x.given or ()) for t in strings_of(m, offered=False))
            ),
            None,
        )
        if recovered is not None and recovered.turn <= s.turn:
            continue  # the caller had it in that very turn (it relayed the card itself): nothing was lost
        variables = s.state.get("variables", {})
        name = next((k for k, v in variables.items() if v == value), None)
        asked = [
            m.message_id or ""
            for m in c.chat
            if (p := _prompt(m)) is not None
            and value in p.options
            and _turn_of(m.message_id) > s.turn
            and c.kind(m.author_name) in ORCHESTRATORS
        ]
        yield Finding(
            "card action lost",
            s.executor_id,
            s.turn,
            (call.reply.message_id or "", *asked),
            f"the user clicked {value!r} on a card of {s.executor_id}; it went into "
            + (f"the variable {name!r}" if name else "the topic")
            + (
                f" and never reached {call.caller}'s context"
                if recovered is None
                else f"; {call.caller} had it only at turn {recovered.turn}, by another path (the user gave it again)"
            ),
            f"Return {name or 'the clicked value'!r} as an output of {s.executor_id}; do not rely on the card's "
            "content or buttons to carry it.",
            "Adaptive-card action buttons and the user's clicks on them never reach the context.",
        )


def parent_context_requests(c: _Conversation) -> Iterator[Finding]:
    """A sub-agent took up a request of its parent's conversation that was not given to it.

    Rule: docs/context-distribution.md#warning-2-sub-agents-answer-old-requests — a request that
    looks unanswered in the parent's conversation is answered again; only a connected agent
    can be kept out of that conversation.
    """
    for s in c.snapshots:
        call = s.received
        if s.kind not in SUB_AGENTS or not isinstance(call, ComponentCall) or call.reply is not None:
            continue
        others = {
            m.message_id: m
            for m in call.conversation
            if m.role == "user" and m.text and m.message_id != call.request.message_id
        }
        if not others:
            continue
        acted: dict[str, list[str]] = {}
        for x in (s, *c.later(s, s.executor_id)):
            for step in x.state.get("steps", ()):
                if isinstance(step, (Call, Answer)) and step.request is not None and step.request in others:
                    acted.setdefault(step.request, []).append(str(step))
            if any(
                isinstance(sent.message, ComponentResult) and sent.message.call_id == call.call_id for sent in x.sent
            ):
                break
        for request_id, steps in acted.items():
            remedy = (
                f"Set include_parent_context=False on {s.executor_id}."
                if s.kind == "connected agent"
                else f"{s.executor_id} is a child agent and cannot leave the parent's conversation out: make it a "
                "ConnectedAgent with include_parent_context=False."
            )
            yield Finding(
                "unanswered request passed in parent context",
                s.executor_id,
                s.turn,
                (request_id or "", call.call_id),
                f"{s.executor_id} was called for {shorten(repr(call.request.text), 40)} but also acted on "
                f"{shorten(repr(others[request_id].text), 40)} from the parent's conversation: {steps[0]}",
                remedy,
                "If that context still contains a request that looks unanswered, the connected agent may try to "
                "answer it again.",
            )


def returned_nothing(c: _Conversation) -> Iterator[Finding]:
    """A component ran and returned nothing at all.

    Rule: docs/context-distribution.md#how-context-flows-in-and-back — a component that
    returns neither outputs nor text leaves the orchestrator knowing nothing of what happened.
    """
    for s, result in c.results:
        if result.waiting is not None or result.implicit or any(v for v in result.outputs.values()):
            continue
        yield Finding(
            "component returned nothing",
            result.component,
            s.turn,
            (result.call_id,),
            f"{result.component} ran for {result.caller} and returned no outputs and no text",
            f"Return what {result.component} did as outputs (and a 'responded' status if it answered the user).",
            "A component that works but returns nothing leaves the orchestrator unaware of what happened.",
        )


RULES = (
    duplicate_answers,
    missed_answers,
    shown_not_returned,
    card_actions_lost,
    parent_context_requests,
    returned_nothing,
)


def find_gaps(trace: Trace) -> Findings:
    """Duplicate answers, missed answers and their causes in a harness conversation's trace."""
    if not trace.chat:
        raise ValueError(
            "find_gaps needs the trace of a harness conversation (it reads the user's chat): use harness.trace"
        )
    c = _Conversation(trace)
    return Findings([f for rule in RULES for f in rule(c)])
