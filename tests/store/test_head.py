"""Opening a database at head does not import alembic (nor the mako and
pygments it pulls in); a fresh database or one at an older revision is still
upgraded by alembic; the head read from the revision files is alembic's own.
On both engines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import SchemaOutOfDate, Store, _head, migrate

ROOT = Path(__file__).resolve().parents[2]
HEAVY = "alembic,mako,pygments"

# Run in a fresh interpreter: this one imported alembic long ago.
CHILD = r"""
import json, sys
from store import Store
url, upgrade, heavy = sys.argv[1], sys.argv[2] == "upgrade", set(sys.argv[3].split(","))
with Store(url, upgrade=upgrade) as s:
    s.create_agent("child", provider="p", model="m")
    s.list_agents(include_dead=True)
    rev = s.revision
loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
print(json.dumps({"revision": rev, "heavy": loaded}))
"""


def open_in_child(url: str, *, upgrade: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "IKIGAI_DB_URL"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, url, "upgrade" if upgrade else "check", HEAVY],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def script() -> ScriptDirectory:
    return ScriptDirectory.from_config(migrate.alembic_config())


def older_revisions() -> list[str]:
    """Every shipped revision but the head, oldest first."""
    return [s.revision for s in script().walk_revisions()][:0:-1]


def schema(url: str) -> dict[str, set[str]]:
    """Each table's columns."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        insp = sa.inspect(engine)
        return {t: {c["name"] for c in insp.get_columns(t)} for t in insp.get_table_names()}
    finally:
        engine.dispose()


# ---------------------------------------------------------------- (a) at head: no alembic


@pytest.mark.parametrize("upgrade", [True, False], ids=["upgrade", "no-upgrade"])
def test_a_database_at_head_opens_without_alembic(db_url: str, upgrade: bool) -> None:
    got = open_in_child(db_url, upgrade=upgrade)
    assert got["revision"] == migrate.head_revision()
    assert got["heavy"] == [], f"imported to open a database at head: {got['heavy']}"


def test_a_fresh_database_still_imports_alembic_to_upgrade(empty_db_url: str) -> None:
    """The check above can see alembic when it is used."""
    got = open_in_child(empty_db_url, upgrade=True)
    assert got["revision"] == migrate.head_revision()
    assert "alembic" in got["heavy"]


# ---------------------------------------------------------------- (b) behind head: upgraded


def test_there_are_older_revisions_to_test() -> None:
    assert len(older_revisions()) >= 2


@pytest.mark.parametrize(
    "start", ["fresh", "base", "oldest", "previous"], ids=lambda s: f"from-{s}"
)
def test_a_database_behind_head_is_upgraded_on_open(empty_db_url: str, start: str) -> None:
    url, head = empty_db_url, migrate.head_revision()
    older = older_revisions()
    if start == "base":  # alembic_version is there, with no row
        migrate.upgrade(url)
        assert migrate.downgrade(url, "base") is None
    elif start != "fresh":
        rev = older[0] if start == "oldest" else older[-1]
        assert migrate.upgrade(url, rev) == rev
    before = schema(url)
    with pytest.raises(SchemaOutOfDate, match=f"needs revision {head}"):
        Store(url, upgrade=False)
    with Store(url) as s:
        assert s.revision == head
        s.create_agent("a", provider="p", model="m")
    assert migrate.current_revision(url) == head
    assert schema(url) != before  # every revision changes the schema
    migrate.check(url)  # and the upgraded one is the models'
    with Store(url, upgrade=False) as s:  # now it opens at head
        assert s.revision == head
        assert [a.name for a in s.list_agents(include_dead=True)] == ["a"]


def set_versions(url: str, values: list[str]) -> None:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM alembic_version")
        for v in values:
            conn.execute(sa.text("INSERT INTO alembic_version VALUES (:v)"), {"v": v})
    engine.dispose()


def fast_answer(url: str) -> str | None:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return _head.at_head(engine)
    finally:
        engine.dispose()


def test_anything_unexpected_is_left_to_alembic(empty_db_url: str) -> None:
    url, head = empty_db_url, migrate.head_revision()
    assert fast_answer(url) is None  # no alembic_version table
    migrate.upgrade(url)
    assert fast_answer(url) == head
    # a revision from a newer ikigai: alembic refuses it, as before
    set_versions(url, ["9999_future"])
    assert fast_answer(url) is None
    for upgrade in (True, False):
        with pytest.raises(SchemaOutOfDate, match="9999_future"):
            Store(url, upgrade=upgrade)
    # head and another row: alembic's own complaint, as before
    set_versions(url, [head, older_revisions()[-1]])
    assert fast_answer(url) is None
    for upgrade in (True, False):
        with pytest.raises(CommandError, match="more than one head"):
            Store(url, upgrade=upgrade)
    set_versions(url, [head])
    assert fast_answer(url) == head


# ---------------------------------------------------------------- (c) the head read from the files


def test_the_head_read_from_the_files_is_alembics() -> None:
    assert _head.scripted_head() == script().get_current_head() == migrate.head_revision()
    assert _head.read_head(_head.VERSIONS) == migrate.head_revision()


def write_versions(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)


def revision_file(rev: str, down: object, *, annotated: bool = False, extra: str = "") -> str:
    ann = (": str", ": str | None") if annotated else ("", "")
    return (
        f'"""Revision ID: {rev}\nRevises: {down}\n"""\n\n'
        f"revision{ann[0]} = {rev!r}\n"
        f"down_revision{ann[1]} = {down!r}\n"
        f"{extra}"
        "\n\ndef upgrade() -> None:\n    pass\n"
    )


A, B = revision_file("a", None), revision_file("b", "a")
# file name -> text, and the head read from them (None: alembic is asked)
CHAINS: dict[str, tuple[dict[str, str], str | None]] = {
    "one": ({"1_a.py": A}, "a"),
    "two-annotated-among-others": (
        {
            "2_b.py": revision_file("b", "a", annotated=True),
            "1_a.py": A,
            "__init__.py": "",
            "notes.txt": "revision = 'z'\ndown_revision = 'b'\n",
        },
        "b",
    ),
    "empty": ({}, None),
    "branch": ({"1_a.py": A, "2_b.py": B, "3_c.py": revision_file("c", "a")}, None),
    "two-bases": ({"1_a.py": A, "2_b.py": revision_file("b", None)}, None),
    "merge": (
        {
            "1_a.py": A,
            "2_b.py": B,
            "3_c.py": revision_file("c", "a"),
            "4_m.py": revision_file("m", ("b", "c")),
        },
        None,
    ),
    "missing-parent": ({"1_a.py": A, "2_b.py": revision_file("b", "x")}, None),
    "duplicate": ({"1_a.py": A, "2_a.py": A}, None),
    "no-revision": ({"1_a.py": A, "2_b.py": "down_revision = 'a'\n"}, None),
    "computed": ({"1_a.py": A, "2_b.py": "revision = make_id()\ndown_revision = 'a'\n"}, None),
    "branch-labels": ({"1_a.py": revision_file("a", None, extra="branch_labels = ('x',)\n")}, None),
    "assigned-twice": ({"1_a.py": revision_file("a", None, extra="revision = 'b'\n")}, None),
    "cycle-off-the-chain": (
        {"1_a.py": A, "2_b.py": revision_file("b", "c"), "3_c.py": revision_file("c", "b")},
        None,
    ),
}


@pytest.mark.parametrize(("files", "expected"), list(CHAINS.values()), ids=list(CHAINS))
def test_read_head_follows_one_linear_chain_only(
    tmp_path: Path, files: dict[str, str], expected: str | None
) -> None:
    write_versions(tmp_path / "versions", files)
    assert _head.read_head(tmp_path / "versions") == expected


def alembic_head(root: Path) -> str | None:
    """What alembic makes of root/versions; None when it cannot name one head."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ScriptDirectory(str(root)).get_current_head()
        except Exception:  # whatever alembic refuses with
            return None


IDS = ["a1", "b2", "c3", "d4", "e5"]
revisions = st.lists(
    st.tuples(
        st.sampled_from(IDS),
        st.one_of(st.none(), st.sampled_from([*IDS, "zz"]), st.tuples(*[st.sampled_from(IDS)] * 2)),
        st.booleans(),
    ),
    max_size=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(revisions)
def test_read_head_agrees_with_alembic_when_it_answers(revs: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = {
            f"{i}_{rev}.py": revision_file(rev, down, annotated=ann)
            for i, (rev, down, ann) in enumerate(revs)
        }
        write_versions(root / "versions", files)
        ours = _head.read_head(root / "versions")
        if ours is not None:
            assert ours == alembic_head(root)


@settings(max_examples=40, deadline=None)
@given(st.permutations(IDS), st.lists(st.booleans(), min_size=5, max_size=5))
def test_read_head_finds_the_head_of_any_linear_chain(order: list[str], ann: list[bool]) -> None:
    """Whatever the file names' order: the chain IDS[0] <- IDS[1] <- ... is followed."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = {
            f"{order.index(rev)}_{rev}.py": revision_file(
                rev, IDS[i - 1] if i else None, annotated=ann[i]
            )
            for i, rev in enumerate(IDS)
        }
        write_versions(root / "versions", files)
        assert _head.read_head(root / "versions") == IDS[-1] == alembic_head(root)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=3))
def test_read_head_survives_any_file(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "versions"
        write_versions(folder, {f"{i}_x.py": t for i, t in enumerate(texts)})
        head = _head.read_head(folder)
        assert head is None or isinstance(head, str)
