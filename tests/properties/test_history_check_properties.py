"""Portability checks and repairs (``agent_nb.routing.history_check``) on generated histories and routes.

What repair is documented to fix (the module's and ``repair_history``'s docstrings): tool exchanges for a
route without tools (rendered as text), orphaned results and unanswered calls (dropped), misplaced tool
contents (dropped), call ids in another format (renumbered into the route's), system messages (turned into
user messages), images (a placeholder). What it only reports: a conversation too long for the context
window ("an over-long conversation is left as it is"). Call ids are renumbered with one of a few id
formats; for a pattern none of them fits (Anthropic's ``^toolu_[A-Za-z0-9]{24}$``) repair cannot make an
id, and says nothing about it: "some problems cannot be repaired".
"""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st
from strategies import (
    FIXABLE_CALL_ID_PATTERNS,
    UNFIXABLE_CALL_ID_PATTERNS,
    capabilities,
    damaged_history,
    examples,
    histories,
    well_formed_history,
)

from agent_nb.clients.base import Capabilities
from agent_nb.messages import FunctionCallContent, FunctionResultContent, Message, estimate_tokens
from agent_nb.routing.history_check import HistoryScan, Problem, check_history, repair_history

REPAIRED = {"orphan_result", "unanswered_call", "misplaced", "tools", "images", "system", "call_id"}
REPORTED_ONLY = {"context"}


def unrepairable(problem: Problem, caps: Capabilities) -> bool:
    """A problem repair is not documented to fix: too long, or ids no format of repair's can match."""
    if problem.kind in REPORTED_ONLY:
        return True
    return problem.kind == "call_id" and caps.call_id_pattern in UNFIXABLE_CALL_ID_PATTERNS


@examples(120)
@given(histories, capabilities)
def test_a_repaired_history_has_nothing_left_that_repair_fixes(history: list[Message], caps: Capabilities) -> None:
    repaired, notes = repair_history(history, caps)
    left = check_history(repaired, caps)
    fixable = [p for p in left if not unrepairable(p, caps)]
    assert fixable == [], f"after repair ({notes}): {[str(p) for p in fixable]}"
    for p in left:
        event(f"left, as documented: {p.kind}")
        if p.kind == "context":
            assert caps.context_window is not None and estimate_tokens(repaired) > caps.context_window
    before = {p.kind for p in check_history(history, caps)}
    for kind in sorted(before):
        event(f"repaired: {kind}" if kind not in {p.kind for p in left} else f"kept: {kind}")


@examples(80)
@given(histories, capabilities)
def test_repair_changes_only_what_it_says_and_never_adds_a_message(history: list[Message], caps: Capabilities) -> None:
    repaired, notes = repair_history(history, caps)
    assert (repaired == list(history)) == (notes == []), notes
    assert len(repaired) <= len(history)
    if all(unrepairable(p, caps) for p in check_history(history, caps)):  # nothing to repair: left as it is
        assert repaired == list(history) and notes == []


@examples(80)
@given(histories, capabilities)
def test_repairing_twice_is_repairing_once(history: list[Message], caps: Capabilities) -> None:
    once, _ = repair_history(history, caps)
    twice, notes = repair_history(once, caps)
    assert twice == once and notes == []


@examples(60)
@given(well_formed_history())
def test_a_well_formed_history_passes_a_route_that_takes_everything(history: list[Message]) -> None:
    assert check_history(history, Capabilities()) == []
    assert repair_history(history, Capabilities()) == (history, [])


@examples(80)
@given(histories, capabilities, st.data())
def test_the_scan_resumed_where_it_stopped_finds_what_one_scan_finds(
    history: list[Message], caps: Capabilities, data: st.DataObject
) -> None:
    """``HistoryScan`` is what a router keeps between turns: fed in pieces (a copy taken on the way), it agrees."""
    cut = data.draw(st.integers(0, len(history)), label="cut")
    scan = HistoryScan(caps).feed(history[:cut])
    kept = scan.copy()
    assert scan.feed(history[cut:]).finish() == check_history(history, caps)
    assert kept.finish() == check_history(history[:cut], caps)  # the copy did not see the rest
    for p in check_history(history, caps):
        assert 0 <= p.index < max(len(history), 1)
        if p.position is not None:
            assert 0 <= p.position < len(history[p.index].contents)


@examples(80)
@given(
    st.one_of(well_formed_history(), damaged_history()),
    st.sampled_from(FIXABLE_CALL_ID_PATTERNS + UNFIXABLE_CALL_ID_PATTERNS),
    st.booleans(),
)
def test_call_ids_are_renumbered_when_repair_can_write_an_id_of_the_pattern(
    history: list[Message], pattern: str, trailing: bool
) -> None:
    caps = Capabilities(call_id_pattern=pattern, trailing_tool_call=trailing)
    repaired, notes = repair_history(history, caps)
    left = [p for p in check_history(repaired, caps)]
    if pattern in FIXABLE_CALL_ID_PATTERNS:
        assert left == []
        return
    # a pattern repair cannot write: the pairing is repaired, the ids are left as they were, and nothing says so
    assert {p.kind for p in left} <= {"call_id"}
    assert not any("renumbered" in n for n in notes)
    if left:
        event("KNOWN limitation: call ids left unrepaired, without a note")


@examples(80)
@given(histories, capabilities)
def test_repair_introduces_no_problem_but_a_longer_context(history: list[Message], caps: Capabilities) -> None:
    """Repair may only make a conversation longer (tool work written out as text, ``[system]``, placeholders)."""
    repaired, _ = repair_history(history, caps)
    before = {p.kind for p in check_history(history, caps)}
    after = {p.kind for p in check_history(repaired, caps)}
    assert after <= before | {"context"}
    if "context" in after - before:
        event("KNOWN: repair pushed the conversation over the context window")


def test_the_context_estimate_counts_tool_arguments_and_results() -> None:
    """Found by the property above, and fixed: the estimate once counted text contents only, so a
    100,000-character tool result passed a 100-token route until repair wrote it out as text."""
    big = "x" * 100_000
    history = [
        Message("user", "look it up"),
        Message("assistant", [FunctionCallContent(call_id="c1", name="search", arguments={"q": big})]),
        Message("tool", [FunctionResultContent(call_id="c1", result=big)]),
    ]
    assert estimate_tokens(history[1:2]) >= 25_000 and estimate_tokens(history[2:]) >= 25_000
    as_text = [Message("user", "look it up"), Message("assistant", big), Message("user", big)]
    assert abs(estimate_tokens(history) - estimate_tokens(as_text)) < 20
    assert "context" in {p.kind for p in check_history(history, Capabilities(context_window=100))}
