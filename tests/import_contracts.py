"""Two import contracts import-linter does not ship, used by the contracts in pyproject.toml.

- ``no_cycles``: no module of a package imports itself back, directly or through others
  (every import counts, those inside functions and under ``TYPE_CHECKING`` too).
- ``module_level_imports``: an external package is imported at module level only by the
  modules that own it, so importing anything else never loads it. An import inside a
  function, or under ``TYPE_CHECKING``, is not at module level; importing a module also
  runs its parent packages, so they count as imported with it.

``lint-imports`` finds this module on the path (it runs from the repository's root).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from functools import cache

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

RUN = {"module", "lazy"}


def _modules(graph: ImportGraph, root: str) -> set[str]:
    return {m for m in graph.modules if m == root or m.startswith(root + ".")}


def _cycles(graph: ImportGraph, modules: set[str]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each as one cycle through it.

    Imports that run count, those inside functions included; those under ``TYPE_CHECKING`` do
    not (annotations only; the layer contract still keeps them pointing downwards).
    """
    edges = {
        m: sorted(t for t in graph.find_modules_directly_imported_by(m) & modules if _imports(graph, m, t, RUN))
        for m in modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(root: str) -> None:  # iterative: a deep chain of imports must not hit the recursion limit
        work: list[tuple[str, Iterator[str]]] = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(edges[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for module in sorted(modules):
        if module not in index:
            visit(module)
    cycles = []
    for group in groups:
        start = min(group)
        back = [m for m in group if start in edges[m]]
        cycles.append(min((_path(edges, start, m) for m in back), key=len))
    return sorted(cycles)


def _path(edges: dict[str, list[str]], start: str, end: str) -> list[str]:
    """The shortest path from ``start`` to ``end`` along ``edges`` (breadth first)."""
    came: dict[str, str | None] = {start: None}
    queue = [start]
    for node in queue:
        if node == end:
            break
        for target in edges[node]:
            if target not in came:
                came[target] = node
                queue.append(target)
    path, step = [], end
    while step is not None:
        path.append(step)
        step = came[step]
    return path[::-1]


class NoCyclesContract(Contract):
    """No import cycle among the modules of ``packages``."""

    type_name = "no_cycles"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        cycles = [c for root in self.packages for c in _cycles(graph, _modules(graph, root))]  # type: ignore[attr-defined]
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(" -> ".join([*cycle, cycle[0]]))
            output.new_line()


@cache
def _tree(module: str) -> ast.Module | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    with open(spec.origin, encoding="utf-8") as f:
        return ast.parse(f.read())


def _type_checking(test: ast.expr) -> bool:
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return name == "TYPE_CHECKING"


@cache
def _import_kinds(module: str) -> dict[int, str]:
    """Each line of an import statement of ``module``: ``"module"`` (runs when the module is
    imported), ``"lazy"`` (inside a function) or ``"typing"`` (under ``TYPE_CHECKING``)."""
    tree = _tree(module)
    kinds: dict[int, str] = {}

    def walk(nodes: list[ast.stmt], kind: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                kinds.update(dict.fromkeys(range(node.lineno, (node.end_lineno or node.lineno) + 1), kind))
            elif isinstance(node, ast.If):
                walk(node.body, "typing" if _type_checking(node.test) else kind)
                walk(node.orelse, kind)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(node.body, "typing" if kind == "typing" else "lazy")
            else:  # class bodies, with, try, loops: whatever runs, runs with the enclosing code
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, field, ()):
                        walk(child.body if isinstance(child, ast.ExceptHandler) else [child], kind)

    if tree is not None:
        walk(tree.body, "module")
    return kinds


def _imports(graph: ImportGraph, importer: str, imported: str, kinds: set[str]) -> list[tuple[int, str]]:
    """The lines (number, text) where ``importer`` imports ``imported`` in one of ``kinds``."""
    lines = _import_kinds(importer)
    return [
        (d["line_number"], d["line_contents"])
        for d in graph.get_import_details(importer=importer, imported=imported)
        if lines.get(d["line_number"], "module") in kinds
    ]


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


class ModuleLevelImportsContract(Contract):
    """``externals`` are imported at module level only by their ``owners`` (``external: owner, owner``)."""

    type_name = "module_level_imports"

    root = fields.StringField()
    externals = fields.ListField(subfield=fields.StringField())

    def _owners(self) -> dict[str, tuple[str, ...]]:
        owners = {}
        for entry in self.externals:  # type: ignore[attr-defined]
            name, _, modules = entry.partition(":")
            owners[name.strip()] = tuple(m.strip() for m in modules.split(",") if m.strip())
        return owners

    def _loads(self, graph: ImportGraph, modules: set[str]) -> dict[str, list[tuple[str, int, str]]]:
        """Per module, what it imports at module level: (module, line, the line's text)."""
        found: dict[str, list[tuple[str, int, str]]] = {m: [] for m in modules}
        for importer in modules:
            for imported in graph.find_modules_directly_imported_by(importer):
                lines = _imports(graph, importer, imported, {"module"})
                if lines:
                    found[importer].append((imported, *lines[0]))
        return found

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        modules = _modules(graph, self.root)  # type: ignore[attr-defined]
        loads = self._loads(graph, modules)
        problems = []
        for external, owners in self._owners().items():

            def owned(module: str, owners: tuple[str, ...] = owners) -> bool:
                return any(module == o or module.startswith(o + ".") for o in owners)

            # the modules that load ``external`` when imported, and how: module -> (next step, line, text)
            how: dict[str, tuple[str, int, str]] = {}
            changed = True
            while changed:
                changed = False
                for module in modules:
                    if module in how:
                        continue
                    steps = [*loads[module], *((p, 0, "(its package)") for p in _parents(module) if p in modules)]
                    for imported, line, text in steps:
                        if imported == external or imported in how:
                            how[module] = (imported, line, text)
                            changed = True
                            break
            loaded = sorted(m for m in how if not owned(m))
            # name the imports that cross into the owners: every other module loads it through them
            for module in loaded:
                imported, line, text = how[module]
                if imported == external or owned(imported):
                    where = f"l.{line}: {text.strip()}" if line else "as its package"
                    others = len(loaded) - 1
                    problems.append(
                        f"{module} imports {imported} at module level ({where}), so importing it loads "
                        f"{external}" + (f" (as it does for {others} other modules)" if others else "")
                    )
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for problem in check.metadata["problems"]:
            output.print_error(problem)
        output.new_line()
        output.print("Import it inside the function that needs it (or under TYPE_CHECKING for annotations).")
