"""The house rules of the code packages (docs/architecture.md): no module
over 600 lines, no import cycle between modules (imports inside functions and
under TYPE_CHECKING count), and the layers' arrows pointing down."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("providers", "store", "agents", "daemon", "ikigai", "ikictl")
MAX_LINES = 600
# what each package may import of ours (DESIGN.md: the arrows point down)
ALLOWED = {
    "providers": set(),
    "store": {"providers"},
    "agents": {"providers", "store"},
    "daemon": {"agents", "store", "providers", "migrations"},
    # the client library: the protocol's contract only
    "ikigai": {"daemon"},
    # providers only on the rare offline path (ikictl models --offline)
    "ikictl": {"daemon", "providers", "ikigai"},
}
# ikictl and the client library (ikigai) must start fast: of the daemon they
# may import the protocol and, on their rare paths, the paths, the version,
# the result types and the catalog rows
IKICTL_MAY_USE = {
    "daemon",
    "daemon.protocol",
    "daemon._version",
    "daemon.paths",
    "daemon.results",
    "daemon.rows",
    "daemon.credentials",  # `keys set` writes the file the daemon reads: one writer, one reader
}


def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    out = {}
    for pkg in packages:
        for path in (root / pkg).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ours it imports, anywhere in its code."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - node.level + 1]
                    stem = ".".join([*anchor, node.module] if node.module else anchor)
                else:
                    stem = node.module or ""
                targets = [stem] + [f"{stem}.{a.name}" for a in node.names]
            for t in targets:
                # the deepest module of ours the import names
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    deps.add(t)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                found.append([*path[path.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_module_is_over_600_lines():
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()
    }
    assert len(sizes) > 80
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_no_import_cycle_between_modules():
    graph = import_graph(modules())
    # a package's __init__ re-exports its modules: an edge into it from its
    # own modules is how Python resolves "from . import x", not a cycle
    for name in graph:
        graph[name] = {d for d in graph[name] if not name.startswith(d + ".")}
    assert cycles(graph) == []


def test_the_layers_arrows_point_down():
    graph = import_graph(modules())
    wrong = set()
    for name, deps in graph.items():
        pkg = name.split(".")[0]
        for dep in deps:
            target = dep.split(".")[0]
            if target != pkg and target not in ALLOWED[pkg]:
                wrong.add(f"{name} -> {dep}")
            if pkg in ("ikictl", "ikigai") and target == "daemon" and dep not in IKICTL_MAY_USE:
                wrong.add(f"{name} -> {dep}")
    assert wrong == set()


def test_the_checks_can_fail(tmp_path: Path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.c import y\n")
    (pkg / "c.py").write_text("if False:\n    from . import a\n")
    graph = import_graph(modules(tmp_path, ("pkg",)))
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
