"""``WorkflowBuilder``: wire executors (or agents) into a graph and validate it."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Union

from ..agents import SupportsAgentRun
from ..errors import WorkflowValidationError, bad_argument, did_you_mean
from ._types import any_compatible, type_name
from .edges import Condition, EdgeGroup, Selection
from .executor import Executor
from .nested import node_for
from .workflow import Workflow, check_limit, check_storage

if TYPE_CHECKING:
    from .checkpoints.storage import CheckpointStorage

__all__ = ["WorkflowBuilder"]

Node = Union[Executor, SupportsAgentRun, str]  # noqa: UP007


class WorkflowBuilder:
    """Build a ``Workflow``; agents passed directly are wrapped in an ``AgentExecutor``.

    ```python
    workflow = (
        WorkflowBuilder(start_executor=planner)
        .add_edge(planner, researcher)
        .add_edge(researcher, writer)
        .build()
    )
    ```

    A node is an ``Executor``, an agent, or the id of a node added elsewhere. One agent
    instance is wrapped once, however many edges use it. A workflow used as an agent
    (``workflow.as_agent()``) is wrapped in a ``WorkflowExecutor``, so its run nests in the parent's.

    Args:
        start_executor: the node that receives the run's input.
        name: the workflow's name in displays and errors.
        max_supersteps: the bound that stops a cycle that never ends; by default
            100 or the number of executors plus one, whichever is larger.
        output_from: ids whose yielded outputs become run outputs; by default all.
        checkpoint_storage: where every run takes checkpoints (at its start and after each
            superstep); ``with_checkpointing(storage)`` sets it too.
    """

    def __init__(
        self,
        start_executor: Node | None = None,
        *,
        name: str = "workflow",
        description: str | None = None,
        max_supersteps: int | None = None,
        output_from: Iterable[Node] | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise bad_argument("WorkflowBuilder", "name", name, "give a non-empty str: it names the workflow")
        if description is not None and not isinstance(description, str):
            raise bad_argument(f"WorkflowBuilder {name!r}", "description", description, "give a str, or None")
        self._name = name
        self._storage = check_storage(f"WorkflowBuilder {name!r}", checkpoint_storage)
        self._description = description
        self._max_supersteps = None if max_supersteps is None else check_limit(max_supersteps)
        self._nodes: dict[str, Executor] = {}
        self._duplicates: dict[str, list[Executor]] = {}
        self._wrapped: dict[int, Executor] = {}
        self._refs: list[str] = []
        self._groups: list[EdgeGroup] = []
        self._start: str | None = None
        self._output_from: list[Node] | None = (
            None if output_from is None else list(_nodes("WorkflowBuilder", "output_from", output_from))
        )
        if start_executor is not None:
            self.set_start_executor(start_executor)

    # -- nodes ----------------------------------------------------------------------

    def _add(self, node: Node) -> str:
        if isinstance(node, str):
            self._refs.append(node)
            return node
        if isinstance(node, Executor):
            ex: Executor = node
        elif isinstance(node, SupportsAgentRun):
            wrapped = self._wrapped.get(id(node))
            if wrapped is None:
                wrapped = self._wrapped[id(node)] = node_for(node)
            ex = wrapped
        else:
            raise bad_argument(
                "WorkflowBuilder", "node", node, "a node is an Executor, an agent (name, create_session, run) or an id"
            )
        known = self._nodes.setdefault(ex.id, ex)
        if known is not ex:
            bucket = self._duplicates.setdefault(ex.id, [known])
            if all(b is not ex for b in bucket):
                bucket.append(ex)
        return ex.id

    def add_executor(self, node: Node) -> WorkflowBuilder:
        """Add a node without an edge (it must still be reachable from the start)."""
        self._add(node)
        return self

    def set_start_executor(self, node: Node) -> WorkflowBuilder:
        self._start = self._add(node)
        return self

    # -- edges ----------------------------------------------------------------------

    def _group(self, **kw: Any) -> WorkflowBuilder:
        self._groups.append(EdgeGroup(index=len(self._groups), **kw))
        return self

    def add_edge(
        self, source: Node, target: Node, condition: Condition | None = None, *, label: str | None = None
    ) -> WorkflowBuilder:
        """Send ``source``'s messages to ``target`` (only those for which ``condition(message)`` is true)."""
        if condition is not None and label is None:
            label = getattr(condition, "__name__", None)
            label = None if label == "<lambda>" else label
            label = label or "condition"
        return self._group(
            kind="direct", sources=(self._add(source),), targets=(self._add(target),), condition=condition, label=label
        )

    def add_fan_out_edges(
        self, source: Node, targets: Sequence[Node], *, selection: Selection | None = None
    ) -> WorkflowBuilder:
        """Send each message of ``source`` to every target, or to those ``selection(message, target_ids)`` picks."""
        ids = tuple(self._add(t) for t in _nodes("add_fan_out_edges", "targets", targets))
        if selection is not None and not callable(selection):
            raise bad_argument("add_fan_out_edges", "selection", selection, "give a function (message, target_ids)")
        label = getattr(selection, "__name__", None) if selection else None
        return self._group(kind="fan_out", sources=(self._add(source),), targets=ids, selection=selection, label=label)

    def add_fan_in_edges(self, sources: Sequence[Node], target: Node) -> WorkflowBuilder:
        """Deliver to ``target`` one list of the sources' messages, once every source has sent."""
        ids = tuple(self._add(s) for s in _nodes("add_fan_in_edges", "sources", sources))
        return self._group(kind="fan_in", sources=ids, targets=(self._add(target),))

    def add_chain(self, nodes: Sequence[Node]) -> WorkflowBuilder:
        """``a → b → c``: an edge between each pair of neighbours."""
        ids = [self._add(n) for n in _nodes("add_chain", "nodes", nodes)]
        for a, b in itertools.pairwise(ids):
            self._group(kind="direct", sources=(a,), targets=(b,))
        return self

    # -- build ----------------------------------------------------------------------

    def build(self) -> Workflow:
        """Validate the graph and return the ``Workflow``; all problems are reported at once."""
        problems: list[str] = []
        involved: list[str] = []

        def problem(text: str, *ids: str) -> None:
            problems.append(text)
            involved.extend(ids)

        for eid, same in self._duplicates.items():
            kinds = ", ".join(type(e).__name__ for e in same)
            problem(f"{len(same)} different executors share the id {eid!r} ({kinds}); give each a unique id", eid)
        for ref in dict.fromkeys(self._refs):
            if ref not in self._nodes:
                problem(
                    f"{ref!r} is used as an executor id but no executor has it{did_you_mean(ref, self._nodes)}", ref
                )
        if self._start is None:
            problem("no start executor: pass WorkflowBuilder(start_executor=...)")
        elif (
            self._start in self._nodes
            and self._groups
            and not any(self._start in g.sources or self._start in g.targets for g in self._groups)
        ):
            problem(
                f"the start executor {self._start!r} is not in the graph: no edge starts or ends at it", self._start
            )
        seen: dict[tuple[str, str], int] = {}
        for g in self._groups:
            for e in g.edges():
                pair = (e.source, e.target)
                if pair in seen and (g.kind != "fan_in" or seen[pair] != g.index):
                    problem(f"duplicate edge {e.source} → {e.target}; add each edge once", e.source, e.target)
                seen.setdefault(pair, g.index)
        if problems:
            raise WorkflowValidationError(_report(problems), executor_ids=tuple(dict.fromkeys(involved)))
        assert self._start is not None
        for eid in self._unreachable(self._start):
            problem(f"{eid!r} cannot be reached from the start executor {self._start!r}", eid)
        for g in self._groups:
            for source in g.sources:
                for target in g.targets:
                    self._check_types(source, target, g, problem)
        output_from = None
        if self._output_from is not None:
            output_from = frozenset(self._resolve_output(n, problem) for n in self._output_from)
        if problems:
            raise WorkflowValidationError(_report(problems), executor_ids=tuple(dict.fromkeys(involved)))
        limit = max(100, len(self._nodes) + 1) if self._max_supersteps is None else self._max_supersteps
        return Workflow(
            name=self._name,
            description=self._description,
            executors=dict(self._nodes),
            start_executor_id=self._start,
            groups=tuple(self._groups),
            max_supersteps=limit,
            output_from=output_from,
            checkpoint_storage=self._storage,
        )

    def with_checkpointing(self, storage: CheckpointStorage) -> WorkflowBuilder:
        """Take a checkpoint at the start of every run and after each of its supersteps, in ``storage``."""
        self._storage = check_storage(f"WorkflowBuilder {self._name!r}", storage)
        return self

    def _unreachable(self, start: str) -> list[str]:
        reached, todo = {start}, [start]
        while todo:
            current = todo.pop()
            for g in self._groups:
                if current in g.sources:
                    for t in g.targets:
                        if t not in reached:
                            reached.add(t)
                            todo.append(t)
        return [eid for eid in self._nodes if eid not in reached]

    def _check_types(self, source: str, target: str, g: EdgeGroup, problem: Callable[..., None]) -> None:
        sent = self._nodes[source].sent_types()
        if sent is None:
            return
        accepted = self._nodes[target].accepted_types()
        if g.kind == "fan_in":
            sent = tuple(list[s] for s in sent)  # type: ignore[valid-type]
        if not sent:
            problem(f"edge {source} → {target}: {source!r} declares that it sends nothing", source, target)
        elif not any_compatible(sent, accepted):
            problem(
                f"edge {source} → {target}: {source!r} sends {', '.join(type_name(t) for t in sent)} but {target!r} "
                f"accepts only {', '.join(type_name(t) for t in accepted) or 'nothing'}",
                source,
                target,
            )

    def _resolve_output(self, node: Node, problem: Callable[..., None]) -> str:
        if isinstance(node, str):
            if node not in self._nodes:
                problem(f"output_from names {node!r}, which is not an executor of this workflow", node)
            return node
        if isinstance(node, Executor):
            return node.id
        wrapped = self._wrapped.get(id(node))
        if wrapped is None:
            problem(f"output_from names an agent that is not in the graph: {node!r:.60}")
            return ""
        return wrapped.id


def _nodes(where: str, argument: str, nodes: Any) -> Iterable[Any]:
    """``nodes`` once it is known to be a list of them (a bare string is one id, not a list)."""
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
        raise bad_argument(where, argument, nodes, "give a list of executors, agents or executor ids")
    return nodes


def _report(problems: list[str]) -> str:
    if len(problems) == 1:
        return f"cannot build the workflow: {problems[0]}"
    return "cannot build the workflow:\n" + "\n".join(f"  - {p}" for p in problems)
