"""The architecture's numbers, per layer of tirc/: import cycles, imports deferred into
function bodies (with or without a `# deferred: <reason>` comment), `# type: ignore` comments
(with or without a reason after them), and lines of code.

    .venv/bin/python tools/architecture_report.py           # a table, for the notes
    .venv/bin/python tools/architecture_report.py --json    # the same numbers, for a CI check
    .venv/bin/python tools/architecture_report.py --list    # also every cycle's modules and
                                                            # every uncommented deferred import

A cycle is a strongly connected component of more than one module in grimp's import graph
(imports under `if TYPE_CHECKING:` included, as grimp counts them). A deferred import is an
`import` inside a function body, not under `if TYPE_CHECKING:`; adjacent imports of one body
form a group, named when one of its lines, or the comment lines right above it, say
`# deferred: <reason>`. A `# type: ignore` has a
reason when another comment follows it on its line (`# type: ignore[code]  # why`).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "tirc"
IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(?P<rest>.*)$")
DEFERRED = "# deferred:"


@dataclass
class DeferredImport:
    path: str
    line: int
    text: str
    commented: bool


@dataclass
class LayerNumbers:
    lines: int = 0
    deferred_commented: int = 0
    deferred_uncommented: int = 0
    ignores_with_reason: int = 0
    ignores_without_reason: int = 0
    cycle_modules: int = 0


@dataclass
class Report:
    modules: int
    cycles: list[list[str]]
    layers: dict[str, LayerNumbers]
    uncommented: list[DeferredImport] = field(default_factory=list)


def layer_of(path: Path) -> str:
    """`text` for tirc/text/..., `api.py` for tirc/api.py."""
    parts = path.relative_to(ROOT / PACKAGE).parts
    return parts[0]


def module_layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    candidate = ROOT / PACKAGE / parts[1]
    return parts[1] if candidate.is_dir() else f"{parts[1]}.py"


def import_cycles() -> tuple[int, list[list[str]]]:
    """The number of modules, and each strongly connected component of two or more modules
    (Tarjan's algorithm, iterative: the import graph is deep enough for Python's stack)."""
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in modules:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(edges[successor])))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return len(modules), sorted(components, key=lambda c: (-len(c), c))


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def deferred_imports(path: Path) -> Iterable[DeferredImport]:
    """The imports inside function bodies. Adjacent import statements of one body form a
    group that one `# deferred: <reason>` names: on any of their lines, or in the comment
    lines right above the first."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    relative = str(path.relative_to(ROOT))
    found: list[DeferredImport] = []

    def named(first: int, last: int) -> bool:
        if any(DEFERRED in lines[number - 1] for number in range(first, last + 1)):
            return True
        above = first - 2
        while above >= 0 and lines[above].strip().startswith("#"):
            if DEFERRED in lines[above]:
                return True
            above -= 1
        return False

    def record(group: list[ast.stmt]) -> None:
        first, last = group[0].lineno, group[-1].end_lineno or group[-1].lineno
        commented = named(first, last)
        for statement in group:
            text = lines[statement.lineno - 1].strip()
            found.append(DeferredImport(relative, statement.lineno, text, commented))

    def visit_body(body: list[ast.stmt], in_function: bool) -> None:
        group: list[ast.stmt] = []
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                group.append(statement)
                continue
            if group and in_function:
                record(group)
            group = []
            visit(statement, in_function)
        if group and in_function:
            record(group)

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            visit_body(node.orelse, in_function)
            return
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                visit_body(body, inner)
        for handler in getattr(node, "handlers", []):
            visit_body(handler.body, inner)
        for case in getattr(node, "cases", []):
            visit_body(case.body, inner)

    visit(ast.parse(source), False)
    return found


def type_ignores(path: Path) -> tuple[int, int]:
    """(with a reason, without one) in the file."""
    with_reason = without = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        match = IGNORE.search(line)
        if match is None:
            continue
        if match.group("rest").strip().startswith("#"):
            with_reason += 1
        else:
            without += 1
    return with_reason, without


def build_report() -> Report:
    modules, cycles = import_cycles()
    layers: dict[str, LayerNumbers] = {}
    uncommented: list[DeferredImport] = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        numbers = layers.setdefault(layer_of(path), LayerNumbers())
        numbers.lines += len(path.read_text(encoding="utf-8").splitlines())
        for item in deferred_imports(path):
            if item.commented:
                numbers.deferred_commented += 1
            else:
                numbers.deferred_uncommented += 1
                uncommented.append(item)
        with_reason, without = type_ignores(path)
        numbers.ignores_with_reason += with_reason
        numbers.ignores_without_reason += without
    for cycle in cycles:
        for module, count in Counter(module_layer(m) for m in cycle).items():
            layers.setdefault(module, LayerNumbers()).cycle_modules += count
    return Report(modules, cycles, dict(sorted(layers.items())), uncommented)


COLUMNS = (
    ("lines", "lines"),
    ("cycle_modules", "in cycles"),
    ("deferred_commented", "deferred, named"),
    ("deferred_uncommented", "deferred, unnamed"),
    ("ignores_with_reason", "ignores, reason"),
    ("ignores_without_reason", "ignores, no reason"),
)


def print_table(report: Report, listing: bool) -> None:
    module_count = sum(len(c) for c in report.cycles)
    print(f"{len(report.cycles)} import cycles over {module_count} of {report.modules} modules")
    for cycle in report.cycles:
        shown = cycle if listing else cycle[:3] + (["..."] if len(cycle) > 3 else [])
        print(f"  {len(cycle):3}  {', '.join(shown)}")
    print()
    widths = [max(len(title), 7) for _, title in COLUMNS]
    name_width = max(len(name) for name in report.layers)
    print(
        f"{'layer':<{name_width}}  "
        + "  ".join(f"{t:>{w}}" for (_, t), w in zip(COLUMNS, widths, strict=True))
    )
    totals = LayerNumbers()
    for name, numbers in report.layers.items():
        values = asdict(numbers)
        for key in values:
            setattr(totals, key, getattr(totals, key) + values[key])
        print(
            f"{name:<{name_width}}  "
            + "  ".join(f"{values[k]:>{w}}" for (k, _), w in zip(COLUMNS, widths, strict=True))
        )
    values = asdict(totals)
    print(
        f"{'total':<{name_width}}  "
        + "  ".join(f"{values[k]:>{w}}" for (k, _), w in zip(COLUMNS, widths, strict=True))
    )
    if listing and report.uncommented:
        print("\ndeferred imports without a `# deferred: <reason>`:")
        for item in report.uncommented:
            print(f"  {item.path}:{item.line}: {item.text}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--list", action="store_true", help="list cycles and unnamed deferrals")
    options = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # grimp imports the package to find it
    report = build_report()
    if options.json:
        data = {
            "modules": report.modules,
            "cycles": report.cycles,
            "layers": {name: asdict(numbers) for name, numbers in report.layers.items()},
            "uncommented_deferred_imports": [asdict(item) for item in report.uncommented],
        }
        print(json.dumps(data, indent=2))
    else:
        print_table(report, options.list)
    return 0


if __name__ == "__main__":
    sys.exit(main())
