"""The child processes of bench/soak.py: they write until they are killed with SIGKILL.

    python bench/soak_child.py history PATH SEED SESSIONS [CUT]
    python bench/soak_child.py checkpoints DIRECTORY SEED LABEL [CUT]

Each prints ``ready`` once it is set up, then one ``ack ...`` line on stdout (flushed) after each
write has *returned*: what it acknowledged is what the parent checks for after the kill.

``CUT`` (bytes, 0 for none) makes the process die inside a write, the way a crash mid-write does:
no file may grow more than ``CUT`` bytes past the largest of the files it writes
(``RLIMIT_FSIZE``), and ``SIGXFSZ`` is given back its default action (Python ignores it, to raise
``EFBIG`` instead). The write that crosses the limit is cut short at that byte, and the kernel
ends the process when it tries to write the rest.

- ``history``: turns (a user and an assistant message) to one ``SQLiteHistoryProvider`` file, with
  ``save``, ``save_many`` (two or three sessions in one transaction) and real ``ChatAgent`` turns on an
  offline client, mixed at random; ``ack SESSION TURN GROUP`` per turn. Messages are
  ``"SESSION TURN ROLE GROUP/SIZE padding"``, so the parent can check every stored message.
- ``checkpoints``: one three-agent chain (``full`` context) run again and again, streamed, with a
  ``FileCheckpointStorage``; ``ack CHECKPOINT_ID RUN SUPERSTEP STATUS`` per ``CheckpointSaved`` event.

Only agent_nb's public API is used. bench/soak.py holds the checks.
"""

from __future__ import annotations

import asyncio
import os
import random
import resource
import signal
import sys
from collections.abc import Mapping
from typing import Any

from agent_nb import AgentExecutor, AgentSession, ChatAgent, FunctionChatClient, Message, Workflow, WorkflowBuilder

CHAIN = 3  # agents in the checkpointed chain


def ack(*fields: object) -> None:
    sys.stdout.write(" ".join(str(f) for f in fields) + "\n")
    sys.stdout.flush()  # one write(2) per line: the line reaches the file before the next write starts


def die_inside_a_write(cut: int, files: list[str]) -> None:
    """From now on, the write that takes a file ``cut`` bytes past the largest of ``files`` ends the process."""
    if not cut:
        return
    limit = max((os.path.getsize(f) for f in files if os.path.exists(f)), default=0) + cut
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


# -- history ------------------------------------------------------------------------


def turn_texts(sid: str, turn: int, group: str, pad: int) -> tuple[str, str]:
    tail = f" {'x' * pad}" if pad else ""
    return f"{sid} {turn} user {group}{tail}", f"{sid} {turn} assistant {group}{tail}"


def answer(messages: list[Message], options: Mapping[str, Any]) -> str:
    """The assistant half of the turn the last user message starts (same session, turn, group, padding)."""
    sid, turn, _, rest = messages[-1].text.split(" ", 3)
    return f"{sid} {turn} assistant {rest}"


async def next_turns(provider: Any, sessions: list[AgentSession]) -> dict[str, int]:
    """Where each session goes on: one after the last turn stored (a restarted writer reads its history)."""
    turns = {}
    for s in sessions:
        history = await provider.load(s)
        turns[s.session_id] = int(history[-1].text.split(" ", 2)[1]) + 1 if history else 0
    return turns


async def history(path: str, seed: int, count: int, cut: int) -> None:
    from agent_nb import SQLiteHistoryProvider

    rng = random.Random(seed)
    provider = SQLiteHistoryProvider(path)
    sessions = [AgentSession(f"s{i:02d}") for i in range(count)]
    agent = ChatAgent(FunctionChatClient(answer), name="writer", history=provider)
    turns = await next_turns(provider, sessions)
    die_inside_a_write(cut, [path, f"{path}-wal"])
    ack("ready")
    for n in range(1_000_000):
        kind = rng.choice(("save", "save_many", "agent"))
        chosen = rng.sample(sessions, rng.randint(2, 3)) if kind == "save_many" else [rng.choice(sessions)]
        group = f"{seed}.{n}/{len(chosen)}"
        pad = rng.choice((0, 0, 40, 3000, 20_000))  # some turns span several pages of the file
        texts = {s.session_id: turn_texts(s.session_id, turns[s.session_id], group, pad) for s in chosen}
        if kind == "agent":
            (s,) = chosen
            await agent.run(texts[s.session_id][0], session=s)
        elif kind == "save":
            (s,) = chosen
            user, assistant = texts[s.session_id]
            await provider.save(s, [Message("user", user), Message("assistant", assistant, author_name="writer")])
        else:
            await provider.save_many(
                [
                    (s, [Message("user", u), Message("assistant", a, author_name="writer")])
                    for s in chosen
                    for u, a in [texts[s.session_id]]
                ]
            )
        for s in chosen:  # the write returned: acknowledge its turns
            ack("ack", s.session_id, turns[s.session_id], group)
            turns[s.session_id] += 1


# -- checkpoints --------------------------------------------------------------------


def link(i: int) -> Any:
    """Agent ``i``: the first word of what it was given, ``|a{i}:{how many messages it was given}``."""

    def reply(messages: list[Message], options: Mapping[str, Any]) -> str:
        return f"{messages[-1].text.split(' ', 1)[0]}|a{i}:{len(messages)}"

    reply.__name__ = f"link{i}"
    return reply


def build_chain() -> Workflow:
    """The same graph every time (the parent builds it afresh to resume)."""
    executors = [AgentExecutor(ChatAgent(FunctionChatClient(link(i)), name=f"a{i}")) for i in range(CHAIN)]
    return WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build()


def expected_outputs(run: str, superstep: int) -> list[str]:
    """The outputs a run resumed from the checkpoint after ``superstep`` still yields (agent k runs in k + 1)."""
    texts, text = [], run
    for i in range(CHAIN):
        text = f"{text}|a{i}:{i + 1}"
        texts.append(text)
    return texts[superstep:]


def run_input(label: str, k: int, rng: random.Random) -> tuple[str, str]:
    run = f"{label}r{k:04d}"
    size = rng.choice((0, 0, 100, 5_000, 60_000, 400_000))  # some checkpoints span many pages of the log
    return run, f"{run} {'y' * size}" if size else run


async def checkpoints(directory: str, seed: int, label: str, cut: int) -> None:
    from agent_nb.workflow import CheckpointSaved, FileCheckpointStorage

    rng = random.Random(seed)
    storage = FileCheckpointStorage(directory)
    workflow = build_chain()
    die_inside_a_write(cut, [str(storage.path)])
    ack("ready")
    for k in range(1_000_000):
        if k % 7 == 6:  # now and then a new workflow (its first checkpoint stores everything again)
            workflow = build_chain()
        run, text = run_input(label, k, rng)
        async for event in workflow.run(text, stream=True, checkpoint_storage=storage):
            if isinstance(event, CheckpointSaved):  # yielded once the storage's save returned
                ack("ack", event.checkpoint_id, run, event.superstep, event.status)


def main(argv: list[str]) -> None:
    mode, where, seed, extra, *rest = argv
    cut = int(rest[0]) if rest else 0
    if mode == "history":
        asyncio.run(history(where, int(seed), int(extra), cut))
    elif mode == "checkpoints":
        asyncio.run(checkpoints(where, int(seed), extra, cut))
    else:
        raise SystemExit(f"unknown mode {mode!r}: history or checkpoints")


if __name__ == "__main__":
    main(sys.argv[1:])
