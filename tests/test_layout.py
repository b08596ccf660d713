"""The house rules of the code packages (docs/architecture.md): no module
over 600 lines (450 in daemon/), no import cycle between modules (imports
inside functions and under TYPE_CHECKING count), the layers' arrows pointing
down, clients that import only the wire contract (protocol/), and daemon/ in
rooms a newcomer can find things in by the folder names alone."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("providers", "store", "agents", "protocol", "daemon", "ikigai", "ikictl")
MAX_LINES = 600
MAX_DAEMON_LINES = 450
# what each package may import of ours (DESIGN.md: the arrows point down)
ALLOWED = {
    "providers": set(),
    "store": {"providers"},
    "agents": {"providers", "store"},
    # the wire contract: the redactor (credentials' errors) and thinking names (model rows)
    "protocol": {"providers"},
    "daemon": {"protocol", "agents", "store", "providers", "migrations"},
    # the client library: the contract only
    "ikigai": {"protocol"},
    # providers only on the rare offline path (ikictl models --offline)
    "ikictl": {"protocol", "providers", "ikigai"},
}
# the rooms of daemon/ (docs/architecture.md): nothing else at its top
DAEMON_ROOMS = {"config", "methods", "server", "process", "cluster"}
DAEMON_TOP = {"__init__.py", "__main__.py"}


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


def test_no_module_is_over_600_lines_nor_over_450_in_daemon():
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()
    }
    assert len(sizes) > 80
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}
    daemon = {n: s for n, s in sizes.items() if n.startswith("daemon.")}
    assert len(daemon) > 20
    assert {n: s for n, s in daemon.items() if s > MAX_DAEMON_LINES} == {}


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
    assert wrong == set()


def test_clients_import_only_the_contract_of_the_daemon_side():
    """ikigai and ikictl reach no daemon internals: what they need of paths,
    credentials and the version is in protocol/, with the wire contract."""
    graph = import_graph(modules())
    reached = {
        f"{name} -> {dep}"
        for name, deps in graph.items()
        if name.split(".")[0] in ("ikigai", "ikictl")
        for dep in deps
        if dep.split(".")[0] in ("daemon", "agents", "store", "migrations")
    }
    assert reached == set()
    # the contract itself is importable without the daemon's stack
    contract = {n: d for n, d in graph.items() if n.split(".")[0] == "protocol"}
    assert {f"{n} -> {d}" for n, ds in contract.items() for d in ds if d.startswith("daemon")} == set()


def test_daemon_is_in_rooms():
    top = ROOT / "daemon"
    files = {p.name for p in top.iterdir() if p.is_file() and p.suffix == ".py"}
    folders = {p.name for p in top.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert files == DAEMON_TOP
    assert folders == DAEMON_ROOMS
    for room in DAEMON_ROOMS:
        assert (top / room / "__init__.py").is_file(), room
        assert '"""' in (top / room / "__init__.py").read_text(encoding="utf-8"), (
            f"daemon/{room}/__init__.py says what the room holds"
        )


# a method's family, as a newcomer reads the folder: method -> daemon/methods/<family>.py
def _family(method: str) -> str:
    fixed = {
        "agent.history": "history",
        "agent.usage": "history",
        "agent.clear": "history",
        "agent.mark": "history",
        "agent.rewind": "history",
        "agent.compact": "history",
        "agent.wait": "admin",
        "agent.rename": "admin",
        "agent.remove": "admin",
        "agent.prune": "admin",
        "agent.export": "transfer",
        "agent.import": "transfer",
        "agent.approve": "approvals",
        "agent.set_budget": "budgets",
        "agent.move": "cluster",
    }
    if method in fixed:
        return fixed[method]
    prefix = method.split(".")[0]
    return {
        "agent": "agents",
        "mail": "mail",
        "approvals": "approvals",
        "mcp": "mcp",
        "daemon": "daemon",
        "models": "daemon",
        "providers": "daemon",
        "fleet": "fleet",
        "schedule": "schedules",
        "schema": "schemas",
        "worktree": "worktrees",
        "daemons": "cluster",
    }[prefix]


def _registered_methods() -> dict[str, str]:
    """method name -> the module of daemon/methods/ whose handler table names it."""
    import protocol

    names = {k: v for k, v in vars(protocol).items() if k.isupper() and isinstance(v, str)}
    found: dict[str, str] = {}
    for path in sorted((ROOT / "daemon" / "methods").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Dict):
                continue
            for key in node.keys:
                if (
                    isinstance(key, ast.Attribute)
                    and isinstance(key.value, ast.Name)
                    and key.value.id == "p"
                    and key.attr in names
                ):
                    method = names[key.attr]
                    assert method not in found, f"{method} registered twice"
                    found[method] = path.stem
    return found


def test_each_method_is_in_the_file_its_name_points_to():
    from protocol.params import PARAMS

    found = _registered_methods()
    assert set(found) == set(PARAMS)
    wrong = {m: f for m, f in found.items() if f != _family(m)}
    assert wrong == {}


def test_socket_behaviours_live_in_the_server_room():
    """``lagged`` (a subscriber too slow to keep up) is the control server's
    doing: every place daemon/ says it is under daemon/server/."""
    sayers = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "daemon").rglob("*.py")
        if '"lagged"' in p.read_text(encoding="utf-8")
    }
    assert sayers and all(s.startswith("daemon/server/") for s in sayers)


def test_the_checks_can_fail(tmp_path: Path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.c import y\n")
    (pkg / "c.py").write_text("if False:\n    from . import a\n")
    graph = import_graph(modules(tmp_path, ("pkg",)))
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_each_config_section_is_in_the_module_named_after_it():
    """A config key's section names its file: ``context.compact_at`` is in
    daemon/config/context.py, ``providers.NAME.*`` in providers.py..."""
    import typing

    import msgspec

    from daemon.config import Config

    room = {"mcp_servers": "mcp", "policies": "policy"}
    sections = {}
    for field in msgspec.structs.fields(Config):
        kind = typing.get_type_hints(Config)[field.name]
        args = typing.get_args(kind)
        inner = args[-1] if typing.get_origin(kind) is dict else kind
        if isinstance(inner, type) and issubclass(inner, msgspec.Struct):
            sections[field.name] = inner.__module__
    assert set(sections) >= {"providers", "tools", "context", "mcp_servers", "policies", "stream"}
    wrong = {
        key: module
        for key, module in sections.items()
        if module != f"daemon.config.{room.get(key, key)}"
    }
    assert wrong == {}
