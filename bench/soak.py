"""Soak: 1,000 routed sessions at once, then kill -9 during history writes and during file checkpoints.

    python bench/soak.py [--quick] [--seed N] [--rounds N] [--sessions N]      (make soak)

1. history: a child process (bench/soak_child.py) writes turns (a user and an assistant message)
   to one ``SQLiteHistoryProvider`` file with ``save``, ``save_many`` (two or three sessions in one
   transaction) and real ``ChatAgent`` turns on an offline client, printing an acknowledgement after
   each write returned; the parent kills it with SIGKILL at a random moment (seeded per round) and
   reads the file with a fresh provider: every acknowledged turn there exactly once and in order, no
   turn and no ``save_many`` group half stored, no message in another session, ``PRAGMA
   integrity_check`` ``ok``. Rounds come in series of three on one file (a restarted writer goes on
   where the file says it was); the first round of each series, on a new file, also has a size
   limit (``RLIMIT_FSIZE``) that makes the kernel end the child inside the write that crosses it,
   so a write is cut short at an arbitrary byte before the SIGKILL would come.
2. checkpoints: the same with a three-agent chain (``full`` context, offline clients) run again and
   again, streamed, on a ``FileCheckpointStorage``, the child acknowledging each ``CheckpointSaved``
   event. After each kill a fresh storage's ``latest()`` and ``list()`` must raise ``CheckpointError``
   exactly when the log ends cut short, ``repair()`` cuts it off, and then every acknowledged
   checkpoint must load, ``latest()`` must be the newest intact one (never an older one in silence),
   and every checkpoint acknowledged in the round must resume in a freshly built workflow (on a copy
   of the directory) to the outputs the uninterrupted run gives. Series of four rounds per
   directory; every third round has a size limit as above.
3. load (run first, so the process's peak memory is its own): 1,000 concurrent sessions (asyncio
   tasks) through one ``RoutingChatClient`` (two routes that answer with their name and the session
   and turn they were asked about) and one ``SQLiteHistoryProvider``; half the sessions switch route
   between turns. Checked from the file: no message in another session, none lost, no answer by
   the wrong route, every request carrying the session's whole history and nothing else.

One JSON line per part (and one per round with a problem, with its seed and the command that
replays the same kill moments), then the targets; the exit status is 1 when a target fails. The
soak is bounded: each kill part stops early on a slow machine (``part_budget_s``), and the whole
soak must take at most 2 minutes (``--quick``: a few seconds, target 30 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from soak_child import build_chain, expected_outputs

from agent_nb import (
    AgentSession,
    ChatAgent,
    CheckpointError,
    FunctionChatClient,
    Message,
    RoutingChatClient,
    SQLiteHistoryProvider,
)

CHILD = Path(__file__).with_name("soak_child.py")
RECORDS: list[dict[str, Any]] = []
WALL_TARGET_S = 120.0


@dataclass
class Plan:
    history_rounds: int = 45
    history_sessions: int = 6
    history_series: int = 3  # rounds in one history file: the first is cut inside a write, the others killed
    ckpt_rounds: int = 39
    ckpt_series: int = 4  # rounds in one checkpoint directory before a fresh one
    kill_after: tuple[float, float] = (0.005, 0.2)  # seconds after the child said ready
    ckpt_cut_every: int = 3  # every third checkpoint round the child may die inside a write (a size limit)
    cut_bytes: tuple[int, int] = (16 << 10, 1 << 20)  # how far past its files' size the limit is
    load_sessions: int = 1000
    load_turns: int = 4
    part_budget_s: float = 45.0  # a slow machine runs fewer rounds rather than more than 2 minutes in all

    @classmethod
    def quick(cls) -> Plan:
        return cls(
            history_rounds=4,
            ckpt_rounds=3,
            ckpt_series=3,
            kill_after=(0.005, 0.1),
            load_sessions=300,
            load_turns=2,
            part_budget_s=8.0,
        )


def emit(bench: str, **fields: Any) -> dict[str, Any]:
    rec = {"bench": bench, **{k: round(v, 3) if isinstance(v, float) else v for k, v in fields.items()}}
    RECORDS.append(rec)
    print(json.dumps(rec), flush=True)
    return rec


# -- the child, and its kill ----------------------------------------------------------


@dataclass
class Killed:
    """What a killed child acknowledged, and how it ended."""

    acks: list[list[str]]
    ready: bool
    """Whether it said ``ready`` (within 30 s) before it was killed."""
    returncode: int | None
    stderr: str
    delay: float
    cut: int
    """The size limit it was given (0: none)."""

    @property
    def died_in_write(self) -> bool:
        """The kernel ended it inside the write that crossed its size limit (before the SIGKILL came)."""
        return self.returncode == -signal.SIGXFSZ


def run_and_kill(args: list[str], out_dir: Path, rng: random.Random, plan: Plan, cut: int) -> Killed:
    """Start the child, wait for its ``ready``, let it write for a random while, SIGKILL it; its acknowledgements.

    Its stdout goes to a file (so it never waits on a pipe); a line is acknowledged only when complete.
    """
    out, err = out_dir / "child.out", out_dir / "child.err"
    delay = plan.kill_after[1] if cut else rng.uniform(*plan.kill_after)  # the SIGKILL comes if the limit did not
    ready = False
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, str(CHILD), *args, str(cut)], stdout=stdout, stderr=stderr)
        try:
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline:
                if out.read_bytes().startswith(b"ready\n"):
                    ready = True
                    break
                time.sleep(0.002)
            if ready:
                time.sleep(delay)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    data = out.read_bytes()
    complete = data[: data.rfind(b"\n") + 1].decode()
    acks = [line.split() for line in complete.splitlines() if line.startswith("ack ")]
    return Killed(acks, ready, proc.returncode, err.read_text(errors="replace")[-2000:], delay, cut)


def child_problem(k: Killed) -> str | None:
    """What went wrong with the child itself: it died before the kill, or never got ready."""
    if k.ready and (k.returncode == -signal.SIGKILL or (k.cut and k.died_in_write)):
        return None
    how = "never said ready" if not k.ready else f"ended by itself (status {k.returncode})"
    return f"the child {how}: {k.stderr[-600:]}"


# -- 1. kill -9 during SQLite history writes ------------------------------------------


@dataclass
class HistoryTally:
    rounds: int = 0
    died_in_write: int = 0
    """Rounds whose child the kernel ended inside a write (its size limit), the others were SIGKILLed."""
    acknowledged: int = 0
    recovered: int = 0
    """Acknowledged turns found, whole, exactly once, in order."""
    stored_unacknowledged: int = 0
    """Turns written whose acknowledgement the kill cut off (allowed: the write had not returned)."""
    lost: int = 0
    duplicated: int = 0
    torn: int = 0
    torn_groups: int = 0
    out_of_order: int = 0
    foreign: int = 0
    corrupt: int = 0
    integrity_failures: int = 0
    child_failures: int = 0
    acknowledged_twice: int = 0
    """A turn a restarted writer acknowledged again: it went on from the wrong place."""
    check_errors: int = 0
    """Rounds whose check raised (a file that cannot be read back)."""
    stored_messages: int = 0
    problems: list[str] = field(default_factory=list)

    STATE = ("lost", "duplicated", "torn", "torn_groups", "out_of_order", "foreign", "corrupt")
    """What a check of the whole file counts: the worst over the rounds is kept (the file only grows)."""


def parse_turn_message(m: Message) -> tuple[str, int, str, str, str] | None:
    """``(session, turn, role, group, padding)`` of a message the history child wrote; ``None`` if unreadable."""
    parts = m.text.split(" ", 4)
    if len(parts) < 4 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[2], parts[3], parts[4] if len(parts) == 5 else ""


async def check_history_file(path: Path, acked: Mapping[str, set[int]], tally: HistoryTally) -> list[str]:
    """Read the file with a fresh provider and count, per session, what the acknowledgements promise."""
    problems: list[str] = []
    groups: Counter[str] = Counter()
    fresh = SQLiteHistoryProvider(path)
    try:
        sids = sorted(set(fresh.sessions()) | set(acked))
        for sid in sids:
            messages = await fresh.load(AgentSession(sid))
            tally.stored_messages += len(messages)
            per_turn: dict[int, Counter[str]] = defaultdict(Counter)
            bodies: dict[int, set[str]] = defaultdict(set)
            sequence = []
            for m in messages:
                parsed = parse_turn_message(m)
                if parsed is None or parsed[2] != m.role or m.role not in ("user", "assistant"):
                    tally.corrupt += 1
                    problems.append(f"{sid}: unreadable message {m.text[:60]!r} (role {m.role})")
                    continue
                owner, turn, role, group, pad = parsed
                if owner != sid:
                    tally.foreign += 1
                    problems.append(f"{sid}: holds a message of session {owner} (turn {turn})")
                    continue
                per_turn[turn][role] += 1
                bodies[turn].add(f"{group} {pad}")
                groups[group] += 1
                sequence.append((turn, role))
            whole = {t for t, c in per_turn.items() if c["user"] >= 1 and c["assistant"] >= 1}
            for t, c in sorted(per_turn.items()):
                extra = max(c["user"], c["assistant"]) - 1
                if extra > 0:
                    tally.duplicated += extra
                    problems.append(f"{sid}: turn {t} stored {extra + 1} times")
                if c["user"] != c["assistant"]:
                    tally.torn += 1
                    problems.append(f"{sid}: turn {t} is half stored ({dict(c)})")
                if len(bodies[t]) > 1:
                    tally.corrupt += 1
                    problems.append(f"{sid}: turn {t}'s two messages differ ({sorted(bodies[t])})")
            expected_sequence = [(t, r) for t in range(len(per_turn)) for r in ("user", "assistant")]
            if sequence != expected_sequence:
                tally.out_of_order += 1
                problems.append(f"{sid}: turns not stored in order 0..{len(per_turn) - 1} (first turns {sequence[:6]})")
            mine = acked.get(sid, set())
            lost = sorted(mine - whole)
            tally.lost += len(lost)
            if lost:
                problems.append(f"{sid}: acknowledged turns lost: {lost[:10]}")
            tally.recovered += len(mine & whole)
            tally.stored_unacknowledged += len(whole - mine)
        for group, count in groups.items():
            size = int(group.split("/")[1])
            if count != 2 * size:
                tally.torn_groups += 1
                problems.append(f"save_many group {group}: {count} of its {2 * size} messages stored")
    finally:
        fresh.close()
    db = sqlite3.connect(path)
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchall()
    finally:
        db.close()
    if integrity != [("ok",)]:
        tally.integrity_failures += 1
        problems.append(f"PRAGMA integrity_check: {integrity[:5]}")
    return problems


def add_series(total: HistoryTally, series: HistoryTally) -> None:
    """Count a finished series of rounds (one file) into the totals."""
    for name in (*HistoryTally.STATE, "acknowledged", "recovered", "stored_unacknowledged", "stored_messages"):
        setattr(total, name, getattr(total, name) + getattr(series, name))


async def soak_history(plan: Plan, seed: int, root: Path) -> HistoryTally:
    """Rounds in series: each series a new file, its first round cut inside a write, the next ones going on in it."""
    tally = HistoryTally()
    work = root / "history"
    work.mkdir()
    series = HistoryTally()  # the current file: the worst of its checks, and its last check's counts
    acked: dict[str, set[int]] = defaultdict(set)
    path = work / "history-0.sqlite"
    started = time.monotonic()
    for r in range(plan.history_rounds):
        if r and time.monotonic() - started > plan.part_budget_s:
            print(
                f"# note: history stopped after {r} of {plan.history_rounds} rounds (its {plan.part_budget_s} s budget)"
            )
            break
        if r % plan.history_series == 0 and r:
            add_series(tally, series)
            series, acked = HistoryTally(), defaultdict(set)
            path = work / f"history-{r // plan.history_series}.sqlite"
        round_seed = seed * 1000 + r
        rng = random.Random(f"history-{round_seed}")
        cut = rng.randint(*plan.cut_bytes) if r % plan.history_series == 0 else 0  # the WAL grows from nothing
        killed = run_and_kill(["history", str(path), str(round_seed), str(plan.history_sessions)], work, rng, plan, cut)
        tally.rounds += 1
        tally.died_in_write += killed.died_in_write
        for _, sid, turn, _group in killed.acks:
            if int(turn) in acked[sid]:
                tally.acknowledged_twice += 1
            acked[sid].add(int(turn))
        check = HistoryTally()  # the whole file, every round of the series so far
        try:
            problems = await check_history_file(path, acked, check)
        except Exception as exc:  # reading the file back failed: that is a finding, not the end of the soak
            tally.check_errors += 1
            problems = [f"checking the file raised {type(exc).__name__}: {exc}"]
        if (trouble := child_problem(killed)) is not None:
            tally.child_failures += 1
            problems.append(trouble)
        tally.integrity_failures += check.integrity_failures
        for name in HistoryTally.STATE:  # the file only grows: what one check found, later checks find again
            setattr(series, name, max(getattr(series, name), getattr(check, name)))
        series.acknowledged = sum(len(turns) for turns in acked.values())
        series.recovered, series.stored_unacknowledged = check.recovered, check.stored_unacknowledged
        series.stored_messages = check.stored_messages
        if problems:
            tally.problems.extend(problems)
            emit(
                "soak_history_round",
                round=r,
                seed=round_seed,
                cut_bytes=cut,
                kill_after_s=killed.delay,
                returncode=killed.returncode,
                acks=len(killed.acks),
                problems=problems[:20],
                reproduce=f"python bench/soak.py --seed {seed} --rounds {r + 1} (history round {r})",
            )
    add_series(tally, series)
    return tally


# -- 2. kill -9 during file checkpoints -----------------------------------------------


@dataclass
class CheckpointTally:
    rounds: int = 0
    died_in_write: int = 0
    """Rounds whose child the kernel ended inside a write (its size limit), the others were SIGKILLed."""
    acknowledged: int = 0
    loadable: int = 0
    """Acknowledged checkpoints that loaded at every check of their series (one check per later round)."""
    load_checks: int = 0
    lost_ids: set[str] = field(default_factory=set)
    resumed: int = 0
    resume_failed: int = 0
    cut_short: int = 0
    """Rounds whose child died inside a write: the log ended with an incomplete record."""
    damaged_lines: int = 0
    """Rounds after which repair() set complete but damaged lines aside (no kill should make those)."""
    damaged_unreported: int = 0
    latest_older: int = 0
    false_alarms: int = 0
    """latest() raised though repair() found nothing to cut off."""
    child_failures: int = 0
    check_errors: int = 0
    """Rounds whose check raised (a log that cannot be read back, even after repair())."""
    unacknowledged: dict[str, int] = field(default_factory=dict)
    """Per series (its directory): the checkpoints stored whose acknowledgement a kill cut off."""
    log_bytes_max: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def stored_unacknowledged(self) -> int:
        return sum(self.unacknowledged.values())


def ends_cut_short(log: Path) -> bool:
    """Whether the log's last record is incomplete: every record ends with a line break."""
    if not log.exists() or log.stat().st_size == 0:
        return False
    with open(log, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def read_log_state(directory: Path) -> tuple[Any, CheckpointError | None, bool]:
    """A fresh storage's first answers, before any repair: latest() (or its error), and whether list() raised."""
    from agent_nb.workflow import FileCheckpointStorage

    storage = FileCheckpointStorage(directory)
    latest, error = None, None
    try:
        latest = storage.latest()
    except CheckpointError as exc:
        error = exc
    try:
        storage.list()
        list_raised = False
    except CheckpointError:
        list_raised = True
    storage.close()
    return latest, error, list_raised


async def check_checkpoints(
    directory: Path, acked: Mapping[str, tuple[str, int]], this_round: list[str], tally: CheckpointTally
) -> list[str]:
    from agent_nb.workflow import FileCheckpointStorage

    problems: list[str] = []
    cut_short = ends_cut_short(directory / FileCheckpointStorage.LOG)
    latest, error, list_raised = read_log_state(directory)
    storage = FileCheckpointStorage(directory)
    removed = storage.repair()
    storage.close()
    if cut_short:  # the newest record is incomplete: latest() and list() must both say so
        tally.cut_short += 1
        if error is None or not list_raised or not removed:
            tally.damaged_unreported += 1
            problems.append(
                f"the log ends with an incomplete record, yet latest() {'raised' if error else 'answered'}, list() "
                f"{'raised' if list_raised else 'answered'} and repair() removed {removed} bytes"
            )
    elif removed:  # complete lines that are damaged: no kill makes those
        tally.damaged_lines += 1
        problems.append(f"repair() set {removed} bytes of damaged lines aside (latest() raised: {error is not None})")
        if not list_raised:
            tally.damaged_unreported += 1
            problems.append("list() answered over the damaged lines")
    elif error is not None:
        tally.false_alarms += 1
        problems.append(f"latest() raised with nothing to repair: {error}")
    if ends_cut_short(directory / FileCheckpointStorage.LOG):
        tally.damaged_unreported += 1
        problems.append("after repair() the log still ends with an incomplete record")
    fresh = FileCheckpointStorage(directory)
    try:
        again = fresh.repair()
        if again:
            tally.damaged_unreported += 1
            problems.append(f"a second repair() removed {again} more bytes")
        infos = fresh.list()
        newest = max((i.id for i in infos), default=None)
        after = fresh.latest()
        if (after.id if after else None) != newest:
            tally.latest_older += 1
            problems.append(f"after repair latest() is {after.id if after else None}, the newest intact is {newest}")
        if latest is not None and latest.id != newest:
            tally.latest_older += 1
            tally.damaged_unreported += 1
            problems.append(f"before repair latest() gave {latest.id} in silence; the newest intact is {newest}")
        listed = {i.id for i in infos}
        series = directory.name  # the log only grows within a series: its count at the latest check counts
        tally.unacknowledged[series] = max(tally.unacknowledged.get(series, 0), len(listed - set(acked)))
        for cid in acked:
            tally.load_checks += 1
            try:
                fresh.load(cid)
                if cid not in listed:
                    raise CheckpointError(f"{cid} loads but list() leaves it out")
            except CheckpointError as exc:
                tally.lost_ids.add(cid)
                problems.append(f"acknowledged checkpoint {cid} lost: {exc}")
    finally:
        fresh.close()
    log = directory / FileCheckpointStorage.LOG  # none yet when the kill came before the first checkpoint
    tally.log_bytes_max = max(tally.log_bytes_max, log.stat().st_size if log.exists() else 0)
    copy = directory.with_name(directory.name + "-resume")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(directory, copy)
    resumes = FileCheckpointStorage(copy)
    try:
        for cid in this_round:
            run, superstep = acked[cid]
            try:
                result = await build_chain().run(checkpoint_id=cid, checkpoint_storage=resumes)
                outputs = [o.text for o in result.get_outputs()]
                ok = result.status == "completed" and outputs == expected_outputs(run, superstep)
                detail = f"status {result.status}, outputs {outputs}, expected {expected_outputs(run, superstep)}"
            except Exception as exc:
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            if ok:
                tally.resumed += 1
            else:
                tally.resume_failed += 1
                problems.append(f"checkpoint {cid} (run {run}, after superstep {superstep}) does not resume: {detail}")
    finally:
        resumes.close()
        shutil.rmtree(copy, ignore_errors=True)
    return problems


async def soak_checkpoints(plan: Plan, seed: int, root: Path) -> CheckpointTally:
    tally = CheckpointTally()
    work = root / "checkpoints"
    work.mkdir()
    acked: dict[str, tuple[str, int]] = {}
    directory = work / "series-0"
    started = time.monotonic()
    for r in range(plan.ckpt_rounds):
        if r and time.monotonic() - started > plan.part_budget_s:
            print(
                f"# note: checkpoints stopped after {r} of {plan.ckpt_rounds} rounds "
                f"(its {plan.part_budget_s} s budget)"
            )
            break
        if r % plan.ckpt_series == 0 and r:  # a new series: a fresh directory (the log stays a few MB)
            shutil.rmtree(directory)
            directory = work / f"series-{r // plan.ckpt_series}"
            acked = {}
        round_seed = seed * 1000 + r
        rng = random.Random(f"checkpoints-{round_seed}")
        cut = rng.randint(*plan.cut_bytes) if r % plan.ckpt_cut_every == plan.ckpt_cut_every - 1 else 0
        killed = run_and_kill(["checkpoints", str(directory), str(round_seed), f"k{r:02d}"], work, rng, plan, cut)
        tally.rounds += 1
        tally.died_in_write += killed.died_in_write
        this_round = []
        for _, cid, run, superstep, _status in killed.acks:
            acked[cid] = (run, int(superstep))
            this_round.append(cid)
        tally.acknowledged += len(this_round)
        try:
            problems = await check_checkpoints(directory, acked, this_round, tally)
        except Exception as exc:  # a storage that cannot be read back, even after repair(): a finding
            tally.check_errors += 1
            problems = [f"checking the directory raised {type(exc).__name__}: {exc}"]
        if (trouble := child_problem(killed)) is not None:
            tally.child_failures += 1
            problems.append(trouble)
        if problems:
            tally.problems.extend(problems)
            emit(
                "soak_checkpoints_round",
                round=r,
                seed=round_seed,
                cut_bytes=cut,
                kill_after_s=killed.delay,
                returncode=killed.returncode,
                acks=len(this_round),
                problems=problems[:20],
                reproduce=f"python bench/soak.py --seed {seed} --rounds {r + 1} (checkpoint round {r})",
            )
    tally.loadable = tally.acknowledged - len(tally.lost_ids)
    return tally


# -- 3. load: 1,000 sessions through one router and one history file ----------------------


ROUTES = ("alpha", "beta")


def route_model(route: str, seen: list[tuple[str, str, int, int, int]], rng: random.Random) -> Any:
    """A route that answers ``"ROUTE SESSION TURN"`` for the last user message ``"SESSION TURN ..."``.

    It notes what it was given: its route, the session and turn asked about, how many messages of
    the request belong to that session, and how many belong to another.
    """

    async def answer(messages: list[Message], options: Mapping[str, Any]) -> str:
        sid, turn = messages[-1].text.split(" ", 2)[:2]
        await asyncio.sleep(rng.choice((0, 0, 0.0005, 0.002)))  # the model's latency: sessions interleave
        mine = sum(m.text.split(" ", 2)[m.role == "assistant"] == sid for m in messages if m.role != "system")
        others = sum(1 for m in messages if m.role != "system") - mine
        seen.append((route, sid, int(turn), mine, others))
        return f"{route} {sid} {turn}"

    answer.__name__ = f"route_{route}"
    return answer


def routes_of(i: int, turns: int, rng: random.Random) -> tuple[list[str], bool]:
    """The route of each turn of session ``i``; odd sessions switch, even ones keep one route (some the default)."""
    if i % 2:
        first = rng.randrange(2)
        return [ROUTES[(first + t) % 2] for t in range(turns)], True
    return [ROUTES[(i // 2) % 2]] * turns, False


async def one_session(
    i: int, agent: ChatAgent, router: RoutingChatClient, turns: int, rng: random.Random, flight: list[int]
) -> list[tuple[str, int, str, str | None, str]]:
    """Run one session's turns; per turn ``(session, turn, route set, route answered, answer text)``.

    ``flight`` is ``[turns running now, the most that ran at once]``.
    """
    session = AgentSession(f"load{i:04d}")
    plan, switching = routes_of(i, turns, rng)
    out = []
    for t, route in enumerate(plan):
        if switching or (t == 0 and route != "alpha"):  # sessions on "alpha" never set it: the default route
            router.set_active_route(session, route)
        flight[0] += 1
        flight[1] = max(flight)
        response = await agent.run(f"{session.session_id} {t} question", session=session)
        flight[0] -= 1
        out.append((session.session_id, t, route, response.route, response.text))
        await asyncio.sleep(rng.choice((0, 0.001)))
    return out


@dataclass
class LoadTally:
    sessions: int = 0
    turns: int = 0
    wall_s: float = 0.0
    foreign: int = 0
    lost: int = 0
    duplicated: int = 0
    wrong_route: int = 0
    wrong_answer: int = 0
    incomplete_history_sent: int = 0
    foreign_in_request: int = 0
    most_turns_at_once: int = 0
    peak_tracemalloc_bytes: int = 0
    maxrss_kb: int = 0
    problems: list[str] = field(default_factory=list)


async def soak_load(plan: Plan, seed: int, root: Path) -> LoadTally:
    tally = LoadTally(sessions=plan.load_sessions)
    path = root / "load.sqlite"
    rng = random.Random(f"load-{seed}")
    seen: list[tuple[str, str, int, int, int]] = []
    router = RoutingChatClient({r: FunctionChatClient(route_model(r, seen, rng)) for r in ROUTES})
    history = SQLiteHistoryProvider(path)
    agents = [ChatAgent(router, name=f"agent{k}", instructions="Answer briefly.", history=history) for k in range(4)]
    flight = [0, 0]
    tracemalloc.start()
    t0 = time.perf_counter()
    done = await asyncio.gather(
        *(one_session(i, agents[i % 4], router, plan.load_turns, rng, flight) for i in range(plan.load_sessions))
    )
    tally.most_turns_at_once = flight[1]
    tally.wall_s = time.perf_counter() - t0
    tally.peak_tracemalloc_bytes = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tally.maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    history.close()
    expected: dict[str, list[str]] = {}
    for turns in done:
        for sid, t, route, answered, text in turns:
            tally.turns += 1
            expected.setdefault(sid, []).append(route)
            if answered != route:
                tally.wrong_route += 1
                tally.problems.append(f"{sid} turn {t}: set to {route}, answered by {answered}")
            if text != f"{route} {sid} {t}":
                tally.wrong_answer += 1
                tally.problems.append(f"{sid} turn {t}: answer {text!r}, expected {route} {sid} {t}")
    for route, sid, turn, mine, others in seen:
        if mine != 2 * turn + 1:  # the whole history (both halves of each earlier turn) and the new question
            tally.incomplete_history_sent += 1
            tally.problems.append(
                f"{sid} turn {turn}: route {route} was given {mine} of its messages, not {2 * turn + 1}"
            )
        tally.foreign_in_request += others
    fresh = SQLiteHistoryProvider(path)
    try:
        stored = set(fresh.sessions())
        for sid, routes in expected.items():
            if sid not in stored:
                tally.lost += 2 * len(routes)
                tally.problems.append(f"{sid}: nothing stored")
                continue
            messages = await fresh.load(AgentSession(sid))
            found: Counter[tuple[int, str]] = Counter()
            for m in messages:
                words = m.text.split(" ")
                owner = words[1] if m.role == "assistant" else words[0]
                if owner != sid:
                    tally.foreign += 1
                    tally.problems.append(f"{sid}: holds {m.text[:40]!r}")
                    continue
                turn = int(words[2] if m.role == "assistant" else words[1])
                found[(turn, m.role)] += 1
                if m.role == "assistant" and turn < len(routes) and words[0] != routes[turn]:
                    tally.wrong_route += 1
                    tally.problems.append(f"{sid} turn {turn}: stored answer by {words[0]}, set to {routes[turn]}")
            for t in range(len(routes)):
                for role in ("user", "assistant"):
                    n = found.pop((t, role), 0)
                    tally.lost += n == 0
                    tally.duplicated += max(0, n - 1)
            tally.duplicated += sum(found.values())  # turns that were never asked
        tally.foreign += len(stored - set(expected))
    finally:
        fresh.close()
    return tally


# -- the whole soak -----------------------------------------------------------------------


def target(label: str, value: float, limit: float, unit: str = "") -> bool:
    ok = value <= limit
    print(f"# {'PASS' if ok else 'FAIL'}  {label} = {value:,}{unit}  (target <= {limit:,}{unit})")
    return ok


async def soak(plan: Plan, seed: int, root: Path) -> tuple[HistoryTally, CheckpointTally, LoadTally]:
    """The load first (so the process's max RSS is its own), then the two kill -9 parts."""
    load = await soak_load(plan, seed, root)
    emit(
        "soak_load",
        sessions=load.sessions,
        turns=load.turns,
        switching_sessions=load.sessions // 2,
        most_turns_at_once=load.most_turns_at_once,
        wall_s=load.wall_s,
        turns_per_s=load.turns / load.wall_s,
        foreign=load.foreign,
        lost=load.lost,
        duplicated=load.duplicated,
        wrong_route=load.wrong_route,
        wrong_answer=load.wrong_answer,
        incomplete_history_sent=load.incomplete_history_sent,
        foreign_in_request=load.foreign_in_request,
        peak_tracemalloc_mb=load.peak_tracemalloc_bytes / 1e6,
        maxrss_mb=load.maxrss_kb / 1024,
        note="timed under tracemalloc; max RSS of the process after the load (imports included)",
    )
    for problem in load.problems[:20]:
        print(f"# load problem: {problem}")
    t0 = time.perf_counter()
    h = await soak_history(plan, seed, root)
    emit(
        "soak_history",
        rounds=h.rounds,
        died_in_write=h.died_in_write,
        sessions=plan.history_sessions,
        acknowledged=h.acknowledged,
        recovered=h.recovered,
        stored_unacknowledged=h.stored_unacknowledged,
        lost=h.lost,
        duplicated=h.duplicated,
        acknowledged_twice=h.acknowledged_twice,
        torn=h.torn,
        torn_save_many_groups=h.torn_groups,
        out_of_order=h.out_of_order,
        foreign=h.foreign,
        corrupt=h.corrupt,
        integrity_failures=h.integrity_failures,
        child_failures=h.child_failures,
        check_errors=h.check_errors,
        stored_messages=h.stored_messages,
        seconds=time.perf_counter() - t0,
    )
    t1 = time.perf_counter()
    c = await soak_checkpoints(plan, seed, root)
    emit(
        "soak_checkpoints",
        rounds=c.rounds,
        died_in_write=c.died_in_write,
        acknowledged=c.acknowledged,
        loadable=c.loadable,
        lost=len(c.lost_ids),
        load_checks=c.load_checks,
        resumed=c.resumed,
        resume_failed=c.resume_failed,
        ended_cut_short=c.cut_short,
        damaged_lines=c.damaged_lines,
        damaged_unreported=c.damaged_unreported,
        latest_older=c.latest_older,
        false_alarms=c.false_alarms,
        stored_unacknowledged=c.stored_unacknowledged,
        child_failures=c.child_failures,
        check_errors=c.check_errors,
        log_bytes_max=c.log_bytes_max,
        seconds=time.perf_counter() - t1,
    )
    return h, c, load


def summary(h: HistoryTally, c: CheckpointTally, load: LoadTally, wall: float, quick: bool) -> bool:
    print("# targets (soak)")
    print(
        f"#       history: {h.acknowledged:,} turns acknowledged over {h.rounds} kills, {h.recovered:,} recovered, "
        f"{h.stored_unacknowledged} more stored whose acknowledgement the kill cut off"
    )
    checks = [
        ("history: acknowledged turns lost", h.lost),
        ("history: turns duplicated", h.duplicated),
        ("history: turns acknowledged twice", h.acknowledged_twice),
        ("history: turns torn (half stored)", h.torn),
        ("history: save_many groups torn", h.torn_groups),
        ("history: sessions out of order", h.out_of_order),
        ("history: messages in another session", h.foreign),
        ("history: corrupt messages", h.corrupt),
        ("history: integrity_check not ok", h.integrity_failures),
        ("history: children that died before the kill", h.child_failures),
        ("history: checks that raised", h.check_errors),
    ]
    print(
        f"#       checkpoints: {c.acknowledged:,} acknowledged over {c.rounds} kills, {c.resumed:,} resumed, "
        f"{c.cut_short} left the log cut short (each reported by latest() and list(), then repaired)"
    )
    checks += [
        ("checkpoints: acknowledged lost", len(c.lost_ids)),
        ("checkpoints: damaged but unreported", c.damaged_unreported),
        ("checkpoints: latest() older than the newest intact", c.latest_older),
        ("checkpoints: latest() raised with nothing damaged", c.false_alarms),
        ("checkpoints: rounds with damaged complete lines", c.damaged_lines),
        ("checkpoints: acknowledged that do not resume", c.resume_failed),
        ("checkpoints: children that died before the kill", c.child_failures),
        ("checkpoints: checks that raised", c.check_errors),
    ]
    print(
        f"#       load: {load.sessions:,} sessions, {load.turns:,} turns in {load.wall_s:.2f} s "
        f"({load.turns / load.wall_s:,.0f} turns/s under tracemalloc), peak {load.peak_tracemalloc_bytes / 1e6:.1f} MB "
        f"traced, max RSS {load.maxrss_kb / 1024:.0f} MB"
    )
    checks += [
        ("load: messages in another session's history", load.foreign),
        ("load: messages lost", load.lost),
        ("load: messages duplicated", load.duplicated),
        ("load: answers by the wrong route", load.wrong_route),
        ("load: answers to the wrong session or turn", load.wrong_answer),
        ("load: requests without the session's whole history", load.incomplete_history_sent),
        ("load: other sessions' messages in a request", load.foreign_in_request),
    ]
    ok = all([target(label, value, 0) for label, value in checks])
    limit = 30.0 if quick else WALL_TARGET_S
    return target(f"soak wall time ({'quick' if quick else 'full'})", round(wall, 1), limit, " s") and ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few rounds and short turns: a few seconds")
    parser.add_argument("--seed", type=int, default=7, help="the seed of every round's randomness")
    parser.add_argument("--rounds", type=int, help="kills per part (history and checkpoints)")
    parser.add_argument("--sessions", type=int, help="concurrent sessions of the load part")
    args = parser.parse_args(argv)
    plan = Plan.quick() if args.quick else Plan()
    if args.rounds is not None:
        plan.history_rounds = plan.ckpt_rounds = args.rounds
    if args.sessions is not None:
        plan.load_sessions = args.sessions
    t0 = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="agent-nb-soak-"))
    try:
        h, c, load = asyncio.run(soak(plan, args.seed, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    wall = time.perf_counter() - t0
    ok = summary(h, c, load, wall, args.quick)
    print(f"# total {wall:.1f} s ({'quick' if args.quick else 'full'}, seed {args.seed}); {len(RECORDS)} records")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
