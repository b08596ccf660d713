"""The store stays split by concern: small modules, no import cycle between them,
and every public Store method found in exactly one of them."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import store
from store import Store
from store._base import StoreBase
from store._rows import Prepared
from tests.test_layout import cycles

STORE_DIR = Path(store.__file__).parent
MAX_LINES = 600


def imports_within(folder: Path) -> dict[str, set[str]]:
    """module -> the sibling modules it imports (at any depth in its code)."""
    modules = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                head, _, rest = node.module.partition(".")
                if head == folder.name and rest:
                    deps.add(rest.split(".")[0])
        graph[path.stem] = (deps & modules) - {path.stem}
    return graph


def test_no_store_module_is_over_600_lines():
    sizes = {
        p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in STORE_DIR.glob("*.py")
    }
    assert len(sizes) >= 10, sizes
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_store_modules_import_each_other_without_a_cycle():
    graph = imports_within(STORE_DIR)
    assert graph["_store"] >= {"_agents", "_messages", "_mail", "_usage", "_turns"}
    assert cycles(graph) == []


def test_the_cycle_finder_sees_a_cycle(tmp_path: Path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.c import y\n")
    (pkg / "c.py").write_text("from . import a\n")
    assert cycles(imports_within(pkg)) == [["a", "b", "c", "a"]]


def test_each_public_store_method_lives_in_one_concern_module():
    homes: dict[str, str] = {}
    for name, _fn in inspect.getmembers(Store, inspect.isfunction):
        if name.startswith("_"):
            continue
        owners = [k for k in Store.__mro__ if name in vars(k)]
        assert len(owners) == 1, (name, owners)
        homes[name] = owners[0].__module__
    assert homes["fork"] == "store._agents"
    assert homes["append_many"] == "store._messages"
    assert homes["replay"] == "store._messages"
    assert homes["send_mail"] == "store._mail"
    assert homes["usage"] == "store._usage"
    assert homes["enqueue_prompt"] == "store._turns"
    assert homes["close"] == "store._base"
    # every concern mixin shares one base: one engine, one lineage cache
    assert all(issubclass(k, StoreBase) for k in Store.__mro__[1:-2])


def test_a_prepared_row_has_named_fields():
    assert Prepared._fields == ("kind", "content", "data", "message_json", "message", "blobs")
    row = Prepared("mark", "here", {"label": "here"})
    assert (row.kind, row.content, row.data, row.message_json, row.message) == (
        "mark",
        "here",
        {"label": "here"},
        None,
        None,
    )
