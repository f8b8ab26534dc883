"""Bounded displays: the timeline's work grows linearly with the chain, a run's ``text/plain`` stays small.

Nothing here is timed (``bench/display_bench.py`` times them): the work is counted (snapshots
visited, lines drawn) and the sizes are measured, so the checks are deterministic.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from agent_nb import (
    AgentExecutor,
    ArgumentError,
    ChatAgent,
    EchoChatClient,
    Message,
    MirrorChatClient,
    Workflow,
    WorkflowBuilder,
)
from agent_nb.demo import QUESTION, build_demo
from agent_nb.display import timeline_html
from agent_nb.display.html import container, escape
from agent_nb.display.timeline import SPAN
from agent_nb.trace import ContextSnapshot, Sent, Trace
from agent_nb.trace import text as trace_text_module
from agent_nb.trace.text import trace_text
from agent_nb.workflow.result import RunResult

BOUND = 100_000  # bytes of a RunResult's text/plain, whatever the run
FOLDED = {"max_messages": 40, "max_chars": 400, "max_bytes": 99_000}  # what RunResult.to_text uses


@functools.cache
def prior(messages: int) -> list[Message]:
    """``messages`` messages ending with the user's (made once: 100,000 of them take a second)."""
    return [Message("user" if (messages - i) % 2 else "assistant", f"message {i:06d} lorem") for i in range(messages)]


async def chain(n: int, messages: int = 0) -> Any:
    """A ``full`` chain of ``n`` agents, given a question or ``messages`` prior messages."""
    executors = [AgentExecutor(ChatAgent(EchoChatClient(), name=f"agent_{i:04d}")) for i in range(n)]
    return (
        await WorkflowBuilder(start_executor=executors[0])
        .add_chain(executors)
        .build()
        .run(list(prior(messages)) or QUESTION)
    )


def three_agents() -> Workflow:
    """The golden tests' run: ``full``, ``custom`` (users only), ``last_agent`` on the offline mirror."""
    mirror = MirrorChatClient()

    def users_only(messages: list[Message]) -> list[Message]:
        return [m for m in messages if m.role == "user" and m.author_name is None]

    planner = AgentExecutor(ChatAgent(mirror, name="planner", instructions="Split the request into steps."))
    researcher = AgentExecutor(ChatAgent(mirror, name="researcher"), context_mode="custom", context_filter=users_only)
    writer = AgentExecutor(ChatAgent(mirror, name="writer"), context_mode="last_agent")
    return WorkflowBuilder(start_executor=planner, name="golden").add_chain([planner, researcher, writer]).build()


def snapshot(executor: str, step: int, index: int, **fields: Any) -> ContextSnapshot:
    return ContextSnapshot(executor_id=executor, superstep=step, index=index, received="go", **fields)


def mixed_trace() -> Trace:
    """Two invocations in one cell, an executor that never ran, one the trace does not list, every status."""
    snaps = [
        snapshot("a", 1, 0, kind="agent", given=(Message("user", "hi"),), duration=0.002),
        snapshot("a", 1, 1, kind="agent", duration=0.0005),  # cached
        snapshot("b", 2, 2, duration=0.004),  # ran
        snapshot("b", 4, 3, error="boom", duration=0.001),  # failed
        snapshot("c", 3, 4, requested=("r1",)),  # waiting
        snapshot("unlisted", 2, 5, duration=0.003),
    ]
    return Trace(snaps, ("a", "b", "c", "never ran"))


def random_trace(rng: random.Random, *, supersteps: int, messages: Sequence[Message] = ()) -> Trace:
    """Up to 60 invocations of up to 8 executors at random supersteps, with random lists."""
    snaps = []
    for i in range(rng.randint(0, 60)):
        snaps.append(
            snapshot(
                f"e{rng.randrange(8)}",
                rng.randint(1, supersteps),
                i,
                kind=rng.choice(["agent", "executor"]),
                given=tuple(rng.sample(messages, rng.randint(0, len(messages)))) if rng.random() < 0.8 else None,
                dropped=tuple(rng.sample(messages, rng.randint(0, len(messages) // 3))),
                state={f"k{j}": "v" * rng.randint(0, 500) for j in range(rng.randint(0, 50))},
                sent=tuple(Sent(message="m", targets=("t",)) for _ in range(rng.randint(0, 50))),
                error=rng.choice([None, None, "boom"]),
                duration=rng.random() / 100,
            )
        )
    return Trace(snaps, tuple(f"e{k}" for k in range(8)))


# -- the timeline -------------------------------------------------------------------------------


def timeline_before(trace: Trace, *, durations: bool = True, theme: Any = "auto") -> str:
    """The timeline as it was drawn before it was made linear: one cell per executor and superstep."""
    marks = {"answered": "●", "ran": "●", "cached": "○", "failed": "✗"}
    steps = sorted({s.superstep for s in trace})
    longest = max((s.duration for s in trace), default=0.0) or 1.0
    head = "".join(f"<th>{n}</th>" for n in steps)
    rows = []
    for eid in trace.executor_ids:
        cells = []
        for step in steps:
            parts = []
            for s in [s for s in trace if s.executor_id == eid and s.superstep == step]:
                status = escape(s.status)
                mark = f'<span class="status {status}" title="{status}">{marks.get(s.status, "·")}</span>'
                if durations:
                    width = max(int(60 * s.duration / longest), 1)
                    mark += f' <span class="bar" style="width:{width}px"></span>{s.duration * 1000:.1f} ms'
                parts.append(mark)
            cells.append(f"<td>{'<br>'.join(parts)}</td>")
        rows.append(f"<tr><th>{escape(eid)}</th>{''.join(cells)}</tr>")
    legend = '<div class="meta">● answered or ran · ○ cached for a later turn · ✗ failed</div>'
    return container(
        f'<table class="timeline"><tr><th>executor · superstep</th>{head}</tr>{"".join(rows)}</table>{legend}', theme
    )


class CountingTrace(Trace):
    """A trace that counts the snapshots read from it (by iterating or by index)."""

    __slots__ = ("visits",)

    def __init__(self, trace: Trace) -> None:
        super().__init__(list(trace), trace.executor_ids)
        self.visits = 0

    def __iter__(self) -> Iterator[ContextSnapshot]:
        for s in super().__iter__():
            self.visits += 1
            yield s

    def __getitem__(self, index: Any) -> Any:
        found = super().__getitem__(index)
        self.visits += len(found) if isinstance(found, Sequence) else 1
        return found


async def test_the_timeline_reads_each_snapshot_a_fixed_number_of_times_however_long_the_chain():
    per_snapshot = []
    for n in (10, 100, 1000):  # the old table read the whole trace for each cell: n³ reads
        trace = CountingTrace((await chain(n)).trace)
        drawn = timeline_html(trace, durations=False)
        per_snapshot.append(trace.visits / n)
        assert per_snapshot[-1] == per_snapshot[0] <= 3, (n, trace.visits)
        cells = drawn.count("<td")  # the drawing grows linearly too: a row has at most 2 * SPAN - 1 cells
        assert cells <= (2 * SPAN - 1) * n, (n, cells)
        assert drawn.count('class="status answered"') == n


@pytest.mark.parametrize("durations", [True, False])
async def test_a_timeline_of_fewer_supersteps_than_a_span_is_exactly_as_before(durations: bool):
    traces = [
        (await build_demo().run(QUESTION)).trace,
        (await three_agents().run(QUESTION)).trace,
        (await chain(SPAN - 1)).trace,
        mixed_trace(),
        Trace([]),
        Trace([], ("nobody ran",)),
        Trace([snapshot("a", 1, 0), snapshot("b", 2, 1)], ("a", "a", "b")),  # a listed twice: two rows
    ]
    for trace in traces:
        assert len({s.superstep for s in trace}) < SPAN
        for theme in ("auto", "dark"):
            now = timeline_html(trace, durations=durations, theme=theme)  # type: ignore[arg-type]
            assert now == timeline_before(trace, durations=durations, theme=theme)


def spread(drawn: str) -> str:
    """A timeline with every spanning empty cell written out as the empty cells it spans."""
    return re.sub(r'<td colspan="(\d+)"></td>', lambda m: "<td></td>" * int(m.group(1)), drawn)


async def test_a_long_empty_run_is_one_spanning_cell_and_shows_the_same_table():
    for trace in [(await chain(n)).trace for n in (SPAN + 1, 40)] + [
        Trace(
            [snapshot("a", step, step) for step in range(1, 2 * SPAN + 1)] + [snapshot("b", SPAN + 1, 99)],
            ("a", "b", "idle"),
        )
    ]:
        drawn = timeline_html(trace)
        assert 'colspan="' in drawn
        assert spread(drawn) == timeline_before(trace)
        spans = [int(n) for n in re.findall(r'colspan="(\d+)"', drawn)]
        assert min(spans) >= SPAN
    for seed in range(30):  # random traces: written out, the same table as before
        trace = random_trace(random.Random(seed), supersteps=3 * SPAN)
        assert spread(timeline_html(trace)) == timeline_before(trace)
    # a run one short of a span stays cells
    short = Trace([snapshot("a", 1, 0), snapshot("a", SPAN + 1, 1)])
    assert "colspan" not in timeline_html(short) and timeline_html(short) == timeline_before(short)


# -- the text/plain of a run --------------------------------------------------------------------


def counting_message_body(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the messages the text report draws."""
    drawn = [0]
    original = trace_text_module.message_body

    def counted(m: Message) -> str:
        drawn[0] += 1
        return original(m)

    monkeypatch.setattr(trace_text_module, "message_body", counted)
    return drawn


async def test_the_text_plain_of_a_100000_message_result_is_bounded_and_says_what_it_folded(monkeypatch):
    result = await chain(2, 100_000)
    drawn = counting_message_body(monkeypatch)
    plain = result.to_text()
    assert drawn[0] <= 2 * 40, drawn[0]  # only what is shown is drawn: the work does not grow with the run
    size = len(plain.encode())
    assert size < BOUND, size
    assert plain == result._repr_mimebundle_(include=["text/plain"])["text/plain"]
    assert plain.startswith("RunResult(status='completed', outputs=2, snapshots=2)\n[1] agent_0000")
    first, second = result.trace
    assert (len(first.given), len(second.given)) == (100_000, 100_001)
    # the first 10 and the last 30 of each list, the rest counted
    assert plain.count("messages not shown") == 2
    assert "              … 99960 messages not shown …\n              99971. " in plain
    assert "              … 99961 messages not shown …\n              99972. " in plain
    assert "              1. [input] assistant: message 000000 lorem" in plain
    assert "              100001. [handed over] user, from agent_0000 (was assistant): message 099999 lorem" in plain


async def test_the_text_plain_stays_bounded_whatever_the_conversation_size(monkeypatch):
    sizes = []
    for m in (1_000, 10_000, 100_000):
        plain = (await chain(2, m)).to_text()
        sizes.append(len(plain.encode()))
    assert max(sizes) < BOUND and sizes[2] - sizes[0] < 1_000, sizes  # only the counts' digits grow


async def test_the_trace_report_stays_whole_by_default():
    result = await chain(2, 1_000)
    whole = str(result.trace)
    assert whole == result.trace.to_text() == trace_text(result.trace)
    assert "not shown" not in whole
    numbered = re.findall(r"^ {14}(\d+)\. ", whole, flags=re.M)
    assert numbered == [str(i) for i in range(1, 1001)] + [str(i) for i in range(1, 1002)]
    folded = result.to_text()
    assert len(folded) < len(whole) and "messages not shown" in folded


async def small_runs() -> list[RunResult]:
    from agent_nb.harness import StandardHarness
    from agent_nb.harness.scenarios import opening_hours

    harness = await opening_hours().aplay(StandardHarness)
    runs = [
        await build_demo().run(QUESTION),
        await three_agents().run(QUESTION),
        await chain(10),
        await chain(1, 40),  # a list of exactly max_messages
        RunResult(events=(), trace=harness.trace, status="completed"),
        RunResult(events=(), trace=mixed_trace(), status="failed"),
    ]
    return runs


async def test_small_runs_print_exactly_their_whole_report():
    for result in await small_runs():
        whole = f"{result!r}\n{result.trace.to_text()}"
        assert result.to_text() == whole, result
        assert trace_text(result.trace, **FOLDED) == trace_text(result.trace)
        assert trace_text(result.trace, timings=True, **FOLDED) == trace_text(result.trace, timings=True)


async def test_a_list_one_longer_than_the_limit_folds_one_message():
    result = await chain(1, 41)
    text = result.to_text()
    assert "              … 1 message not shown …\n              12. " in text
    assert text.count("\n              ") == 40 + 1  # 40 messages and the fold line


def test_a_long_text_says_how_many_characters_it_left_out():
    words = " ".join(f"w{i:05d}" for i in range(20_000))  # 139,999 characters
    message = Message("assistant", words, author_name="writer")
    s = snapshot("writer", 1, 0, kind="agent", given=(message,), cached=(message,))
    lines = trace_text(Trace([s]), **FOLDED).splitlines()
    line = lines[3]
    assert line.startswith("              1. assistant, from writer: w00000 w00001")
    shown = line.split(": ", 1)[1].split("…")[0]
    left = int(re.search(r"… \((\d+) more characters\)$", line).group(1))  # type: ignore[union-attr]
    assert len(shown) + left == len(words)
    assert len(line) <= 100
    assert trace_text(Trace([s])).splitlines()[3].endswith("…")  # the whole report cuts it as it always did
    short = Message("assistant", "x" * 400)
    assert "more characters" not in trace_text(Trace([snapshot("a", 1, 0, given=(short,))]), **FOLDED)


async def test_many_executors_fold_their_invocations_keeping_every_executors_last_one():
    for n in (100, 1000):
        result = await chain(n)
        text = result.to_text()
        assert len(text.encode()) < BOUND
        lines = text.splitlines()
        assert lines[1].startswith(f"(folded to at most 99000 bytes: {n} invocations, ")
        heads = [line for line in lines if line.startswith("[")]
        counted = sum(int(k) for k in re.findall(r"^… (\d+) invocations? not shown", text, flags=re.M))
        assert len(heads) + counted == n  # each invocation is drawn, in one line, or counted
        assert heads[0].startswith("[1] agent_0000") and heads[-1].startswith(f"[{n}] agent_{n - 1:04d}")
        assert any("in brief: model got" in line for line in heads)


def cycle(executors: int, rounds: int, messages: int) -> Trace:
    """A loop over a few executors: every round each is given ``messages`` messages."""
    given = tuple(Message("user", f"message {i}") for i in range(messages))
    snaps = []
    for r in range(rounds):
        for e in range(executors):
            i = r * executors + e
            sent = (Sent(message="next", targets=(f"e{(e + 1) % executors}",)),)
            snaps.append(snapshot(f"e{e}", i + 1, i, kind="agent", given=given, cached=given, sent=sent))
    return Trace(snaps)


def test_a_long_cycle_folds_its_middle_and_keeps_each_executors_last_invocation():
    trace = cycle(3, 2_000, 60)
    text = RunResult(events=(), trace=trace, status="completed").to_text()
    assert len(text.encode()) < BOUND
    for e in range(3):  # each executor's last invocation is shown whole (the last ones come first)
        last = trace.last(f"e{e}")
        assert f"\n[{last.superstep}] e{e} · agent · answered\n" in text
    assert re.search(r"^… \d+ invocations not shown …$", text, flags=re.M)


def test_the_bound_holds_for_wide_characters_long_names_and_many_state_entries():
    wide = tuple(Message("user", "🙂" * 120 + f" {i}") for i in range(500))
    name = "executor-" + "x" * 5_000
    snaps = [
        snapshot(
            f"{name}{i}",
            i + 1,
            i,
            kind="agent",
            context_filter="f" * 2_000,
            given=wide,
            state={f"key{k}": "v" * 1_000 for k in range(300)},
            sent=tuple(Sent(message="m", targets=("t",)) for _ in range(300)),
        )
        for i in range(300)
    ]
    text = RunResult(events=(), trace=Trace(snaps), status="completed").to_text()
    assert len(text.encode()) < BOUND
    assert max(len(line) for line in text.splitlines()) <= 400
    assert "… 260 state entries not shown …" in text and "… 260 sent messages not shown …" in text


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_messages", 0), ("max_messages", True), ("max_chars", 0), ("max_bytes", 999), ("max_bytes", 5.0)],
)
def test_folding_options_are_checked(option: str, value: Any):
    with pytest.raises(ArgumentError, match=f"trace_text: {option}="):
        trace_text(Trace([]), **{option: value})


def test_the_bound_is_kept_for_any_limits_and_a_report_that_fits_is_whole():
    rng = random.Random(7)
    texts = ["hi", "é" * 300, "🙂" * 50, "x " * 500, "word" * 120]
    messages = [Message(rng.choice(["user", "assistant"]), rng.choice(texts)) for _ in range(150)]
    for _ in range(150):
        trace = random_trace(rng, supersteps=30, messages=messages)
        if rng.random() < 0.3:  # resumed from a checkpoint: its first line says so, within the bound too
            restored = tuple(f"restored_executor_{k:03d}_🙂" for k in range(rng.choice([1, 5, 80])))
            trace = Trace(list(trace), trace.executor_ids, restored_from="ckpt-" + "9" * 40, restored=restored)
        limits = {"max_messages": rng.choice([1, 5, 40]), "max_chars": rng.choice([1, 50, 400])}
        max_bytes = rng.choice([1_000, 5_000, 20_000, 99_000])
        folded = trace_text(trace, **limits, max_bytes=max_bytes)
        assert len(folded.encode()) <= max_bytes
        unbounded = trace_text(trace, **limits)
        assert (folded == unbounded) == (len(unbounded.encode()) <= max_bytes)
