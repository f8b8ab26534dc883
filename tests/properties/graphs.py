"""Generated workflows: random DAGs of agent executors, built again and again from one description.

A ``GraphSpec`` is plain data (what Hypothesis draws and shrinks); ``build(spec)`` makes a fresh
workflow from it every time, so a run can be compared with a run of an identical copy. The agents
answer deterministically (a mirror of what they were given, or an echo), every edge condition and
fan-out selection is a function of the upstream reply's text, and every context filter keeps a
generated subset, so two copies given the same input do exactly the same thing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from agent_nb import (
    AgentExecutor,
    AgentExecutorResponse,
    AgentSession,
    ChatAgent,
    Executor,
    FunctionChatClient,
    InMemoryHistoryProvider,
    Message,
    SQLiteHistoryProvider,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from agent_nb.clients.offline import describe
from agent_nb.workflow import AgentExecutorOptions, RunResult, Workflow

# -- the description ------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    mode: str
    """``full``, ``last_agent`` or ``custom``."""
    keep: tuple[int, int] = (1, 0)
    """For ``custom``: the filter keeps messages ``i`` with ``i % keep[0] == keep[1]``, and always the last."""
    reply: str = "mirror"
    """``mirror`` (describes what the agent was given) or ``echo`` (the last user message)."""
    session: int = 0
    """Nodes with the same number share one session."""
    history: str | None = None
    """``None``, ``"memory"`` or ``"sqlite"``."""
    tally: bool = False
    """Counts the messages it takes in the shared state (``ctx.set_state``)."""
    instructions: bool = False
    reassign: bool = True


@dataclass(frozen=True)
class Group:
    kind: str
    sources: tuple[int, ...]
    targets: tuple[int, ...]
    condition: str | None = None
    selection: tuple[str, int] | None = None


@dataclass(frozen=True)
class GraphSpec:
    nodes: tuple[Node, ...]
    groups: tuple[Group, ...]
    chain: bool = False
    """Built with ``add_chain`` (the groups are then the chain's direct edges)."""
    asker: int | None = None
    """A node whose replies also go to an executor that asks for input (a pending request)."""


# -- deterministic conditions, selections and filters ----------------------------------------


def _text(message: Any) -> str:
    response = getattr(message, "agent_response", None)
    return response.text if response is not None else str(message)


CONDITIONS: dict[str, Callable[[str], bool]] = {
    "always": lambda t: True,
    "never": lambda t: False,
    "even": lambda t: len(t) % 2 == 0,
    "odd": lambda t: len(t) % 2 == 1,
    "no_digit_3": lambda t: "3" not in t,
}


def condition(kind: str) -> Callable[[Any], bool]:
    test = CONDITIONS[kind]

    def holds(message: Any) -> bool:
        return test(_text(message))

    holds.__name__ = f"if_{kind}"
    return holds


def selection(kind: str, bits: int) -> Callable[[Any, list[str]], list[str]]:
    def select(message: Any, targets: list[str]) -> list[str]:
        if kind == "all":
            return list(targets)
        if kind == "none":
            return []
        if kind == "mask":
            return [t for i, t in enumerate(targets) if bits >> i & 1]
        return [targets[len(_text(message)) % len(targets)]]  # "by_length": one of them

    select.__name__ = f"select_{kind}"
    return select


def keep_filter(mod: int, residue: int) -> Callable[[list[Message]], list[Message]]:
    """A context filter keeping a generated subset (and always the last message, so a turn has input)."""

    def keep(messages: list[Message]) -> list[Message]:
        last = len(messages) - 1
        return [m for i, m in enumerate(messages) if i % mod == residue or i == last]

    keep.__name__ = f"keep_every_{mod}_from_{residue}"
    return keep


# -- strategies --------------------------------------------------------------------------------


@st.composite
def nodes(draw: st.DrawFn, histories: Sequence[str | None], n_sessions: int) -> Node:
    mode = draw(st.sampled_from(["full", "full", "last_agent", "custom"]))
    mod = draw(st.integers(1, 3))
    return Node(
        mode=mode,
        keep=(mod, draw(st.integers(0, mod - 1))),
        reply=draw(st.sampled_from(["mirror", "mirror", "echo"])),
        session=draw(st.integers(0, n_sessions - 1)),
        history=draw(st.sampled_from(list(histories))),
        tally=draw(st.booleans()),
        instructions=draw(st.booleans()),
        reassign=draw(st.sampled_from([True, True, False])),
    )


@st.composite
def graph_specs(
    draw: st.DrawFn,
    *,
    max_nodes: int = 5,
    histories: Sequence[str | None] = (None,),
    asker: bool = False,
    conditions: bool = True,
) -> GraphSpec:
    """A DAG of 2..max_nodes agent executors; node 0 starts, every other node has an edge from a lower one."""
    n = draw(st.integers(2, max_nodes))
    n_sessions = draw(st.integers(1, n))
    specs = tuple(draw(nodes(histories, n_sessions)) for _ in range(n))
    ask = draw(st.none() | st.integers(0, n - 1)) if asker else None
    if draw(st.integers(0, 4)) == 0:  # a plain chain, built with add_chain
        groups = tuple(Group("direct", (i - 1,), (i,)) for i in range(1, n))
        return GraphSpec(specs, groups, chain=True, asker=ask)
    edges = {(draw(st.integers(0, t - 1)), t) for t in range(1, n)}
    pairs = [(s, t) for s in range(n) for t in range(s + 1, n)]
    edges |= set(draw(st.lists(st.sampled_from(pairs), max_size=n)))
    remaining = set(edges)
    groups: list[Group] = []
    for t in range(n):
        incoming = sorted(s for s, u in remaining if u == t)
        if len(incoming) >= 2 and draw(st.booleans()):
            chosen = sorted(draw(st.lists(st.sampled_from(incoming), min_size=2, unique=True)))
            groups.append(Group("fan_in", tuple(chosen), (t,)))
            remaining -= {(s, t) for s in chosen}
    for s in range(n):
        outgoing = sorted(t for r, t in remaining if r == s)
        if len(outgoing) >= 2 and draw(st.booleans()):
            chosen = sorted(draw(st.lists(st.sampled_from(outgoing), min_size=2, unique=True)))
            picked = draw(st.sampled_from(["all", "none", "mask", "by_length"])) if conditions else "all"
            choice = (picked, draw(st.integers(0, 2 ** len(chosen) - 1)))
            groups.append(Group("fan_out", (s,), tuple(chosen), selection=choice if draw(st.booleans()) else None))
            remaining -= {(s, t) for t in chosen}
    for s, t in sorted(remaining):
        kind = draw(st.none() | st.sampled_from(sorted(CONDITIONS))) if conditions else None
        groups.append(Group("direct", (s,), (t,), condition=kind))
    return GraphSpec(specs, tuple(draw(st.permutations(groups))), asker=ask)


# -- the agents and executors ---------------------------------------------------------------------


class Model:
    """A deterministic model that can be broken (it raises ``broken``) or hung (it never answers)."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.broken: BaseException | None = None
        self.fail_at: int | None = None
        """With ``broken``: fail only on this call (counted from 1), not on every one."""
        self.hung = False
        self.calls = 0

    def __call__(self, messages: list[Message], options: Any) -> Any:
        self.calls += 1
        if self.broken is not None and self.fail_at in (None, self.calls):
            raise self.broken
        if self.hung:
            return _never()
        if self.reply == "mirror":
            return describe(messages)
        last = next((m.text for m in reversed(messages) if m.role == "user"), "")
        return last.strip() or "(blank)"


async def _never() -> str:
    import asyncio

    await asyncio.Event().wait()  # nobody sets it: the run is stopped from outside
    raise AssertionError("unreachable")


class Tally(AgentExecutor):
    """An agent executor that also counts, in the run's shared state, the messages it took."""

    def _count(self, ctx: WorkflowContext) -> None:
        key = f"visits/{self.id}"
        seen = ctx.get_state(key, 0)
        ctx.set_state(key, (seen if type(seen) is int else 0) + 1)

    @handler
    async def on_text(self, text: str, ctx: WorkflowContext) -> None:
        self._count(ctx)
        await super().on_text(text, ctx)

    @handler
    async def on_response(self, response: AgentExecutorResponse, ctx: WorkflowContext) -> None:
        self._count(ctx)
        await super().on_response(response, ctx)

    @handler
    async def on_responses(self, responses: list[AgentExecutorResponse], ctx: WorkflowContext) -> None:
        self._count(ctx)
        await super().on_responses(responses, ctx)


class Asker(Executor):
    """Asks for input about every reply it gets: the run ends ``waiting`` with a pending request."""

    @handler
    async def ask(self, response: AgentExecutorResponse, ctx: WorkflowContext) -> None:
        ctx.request_info(f"is this right? {response.agent_response.text[:30]}", str)


@dataclass
class Built:
    workflow: Workflow
    executors: list[AgentExecutor]
    models: list[Model]
    sessions: list[AgentSession]
    memory: InMemoryHistoryProvider
    sqlite: SQLiteHistoryProvider | None = None
    sqlite_path: Path | None = None
    filters: dict[str, Callable[[list[Message]], list[Message]]] = field(default_factory=dict)

    def close(self) -> None:
        if self.sqlite is not None:
            self.sqlite.close()


def build(spec: GraphSpec, *, sqlite_path: Path | None = None, storage: Any = None) -> Built:
    """A fresh workflow made from ``spec`` (fresh agents, sessions, histories)."""
    memory = InMemoryHistoryProvider()
    needs_sqlite = any(n.history == "sqlite" for n in spec.nodes)
    sqlite = SQLiteHistoryProvider(sqlite_path) if needs_sqlite and sqlite_path is not None else None
    sessions = {j: AgentSession(f"s{j}") for j in sorted({n.session for n in spec.nodes})}
    models, executors, filters = [], [], {}
    for i, node in enumerate(spec.nodes):
        model = Model(node.reply)
        history = {"memory": memory, "sqlite": sqlite}.get(node.history or "")
        agent = ChatAgent(
            FunctionChatClient(model),
            name=f"a{i}",
            instructions=f"You are agent {i}." if node.instructions else None,
            history=history,
        )
        kind = Tally if node.tally else AgentExecutor
        mode: dict[str, Any] = {"context_mode": node.mode}
        if node.mode == "custom":
            filters[f"a{i}"] = mode["context_filter"] = keep_filter(*node.keep)
        options = AgentExecutorOptions(reassign_other_agents_as_users=node.reassign)
        executors.append(kind(agent, session=sessions[node.session], options=options, **mode))
        models.append(model)
    builder = WorkflowBuilder(start_executor=executors[0], name="generated", checkpoint_storage=storage)
    if spec.chain:
        builder.add_chain(executors)
    for g in () if spec.chain else spec.groups:
        if g.kind == "direct":
            cond = condition(g.condition) if g.condition else None
            builder.add_edge(executors[g.sources[0]], executors[g.targets[0]], condition=cond)
        elif g.kind == "fan_out":
            pick = selection(*g.selection) if g.selection else None
            builder.add_fan_out_edges(executors[g.sources[0]], [executors[t] for t in g.targets], selection=pick)
        else:
            builder.add_fan_in_edges([executors[s] for s in g.sources], executors[g.targets[0]])
    if spec.asker is not None:
        builder.add_edge(executors[spec.asker], Asker("asker"))
    return Built(builder.build(), executors, models, list(sessions.values()), memory, sqlite, sqlite_path, filters)


# -- what a run did, and what a workflow holds, as comparable values ---------------------------------


def describe_message(m: Message) -> tuple[Any, ...]:
    return (m.role, m.author_name, m.text, tuple(c.type for c in m.contents))


def outputs_by_superstep(result: RunResult) -> dict[int, list[tuple[str, str]]]:
    """``{superstep: [(executor id, text of what it yielded), ...]}`` in the order yielded."""
    out: dict[int, list[tuple[str, str]]] = {}
    step = 0
    for e in result.events:
        if e.type == "superstep_started":
            step = e.superstep  # type: ignore[attr-defined]
        elif e.type == "output":
            out.setdefault(step, []).append((e.executor_id, getattr(e.data, "text", repr(e.data))))  # type: ignore[attr-defined]
    return out


def conversations(built: Built) -> dict[str, list[tuple[Any, ...]]]:
    return {ex.id: [describe_message(m) for m in ex.conversation] for ex in built.executors}


def sqlite_rows(path: Path | None) -> list[tuple[str, int, str]]:
    """Every stored history row, read with a connection of our own (not the provider's)."""
    if path is None or not path.exists():
        return []
    db = sqlite3.connect(path)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "agent_nb_messages" not in tables:
            return []
        return list(db.execute("SELECT session_id, seq, message FROM agent_nb_messages ORDER BY session_id, seq"))
    finally:
        db.close()


async def holdings(built: Built) -> dict[str, Any]:
    """Everything a run could change: conversations, caches, sessions, histories, rows, pending requests."""
    providers: dict[str, Any] = {"memory": built.memory}
    if built.sqlite is not None:
        providers["sqlite"] = built.sqlite
    sessions = {s.session_id: s for s in built.sessions}
    sessions.update({ex.session.session_id: ex.session for ex in built.executors if ex.session is not None})
    histories = {}  # the sessions the executors hold now (a resumed workflow holds the checkpoint's)
    for name, provider in providers.items():
        for sid, session in sorted(sessions.items()):
            histories[f"{name}/{sid}"] = [m.model_dump_json() for m in await provider.load(session)]
    return {
        "conversations": conversations(built),
        "caches": {ex.id: [describe_message(m) for m in ex.cache] for ex in built.executors},
        "sessions": {
            ex.id: None if ex.session is None else (ex.session.session_id, json.dumps(ex.session.state, sort_keys=True))
            for ex in built.executors
        },
        "waiting_on": {ex.id: ex.waiting_on for ex in built.executors},
        "histories": histories,
        "rows": sqlite_rows(built.sqlite_path),
        "pending": [(p.request_id, p.executor_id, repr(p.data)) for p in built.workflow.pending_requests],
    }


def shape(spec: GraphSpec) -> str:
    """A few words on a generated graph, for ``hypothesis.event`` (the statistics show what was tried)."""
    kinds = sorted({g.kind for g in spec.groups}) if not spec.chain else ["chain"]
    extras = [w for w, on in (("conditions", any(g.condition for g in spec.groups)),
                              ("selections", any(g.selection for g in spec.groups)),
                              ("shared sessions", len({n.session for n in spec.nodes}) < len(spec.nodes)),
                              ("custom filters", any(n.mode == "custom" for n in spec.nodes)),
                              ("sqlite", any(n.history == "sqlite" for n in spec.nodes)),
                              ("a pending request", spec.asker is not None)) if on]  # fmt: skip
    return f"{len(spec.nodes)} nodes, {'+'.join(kinds)}" + (f", {', '.join(extras)}" if extras else "")


def invoked(result: RunResult) -> list[str]:
    """The agent executors the run invoked, in order of first invocation."""
    return list(dict.fromkeys(s.executor_id for s in result.trace if s.executor_id != "asker"))
