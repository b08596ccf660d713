"""Is the database at the newest schema revision? Answered without alembic.

Importing alembic (and the mako and pygments it pulls in) costs more than
SQLAlchemy itself, and a restarted daemon finds its database at the newest
revision almost every time. So the store first compares two plain answers:

- the newest revision, from the revision files' own top-level
  ``revision = "..."`` and ``down_revision = ...`` lines (read, never run),
  following the ``down_revision`` chain to its single head;
- the database's, from its ``alembic_version`` table with plain SQL.

Only when they agree is alembic skipped. Anything else (a fresh database, an
older or unknown revision, several rows, a branched history, a file whose ids
are not plain string literals, an error) goes to ``store.migrate``, where
alembic decides and reports exactly as it did before. ``tests/store/test_head.py``
checks that the head found here is alembic's own.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sqlite3
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import exc

import migrations

VERSIONS = migrations.LOCATION / "versions"
VERSION_TABLE = "alembic_version"

# the file names alembic loads as revisions (alembic.script.base._only_source_rev_file)
_REVISION_FILE = re.compile(r"(?!\.\#|__init__)(.*\.py)$")
# a top-level assignment (annotated or not) of a name alembic reads from a revision file
_ASSIGNMENT = re.compile(
    r"^(revision|down_revision|branch_labels|depends_on)[ \t]*(?::[^=\n]*)?=[ \t]*(.*?)[ \t]*$",
    re.MULTILINE,
)
_SELECT_VERSIONS = sa.text(f"SELECT version_num FROM {VERSION_TABLE}")


def _ids(source: str) -> tuple[str, str | None] | None:
    """A revision file's (revision, down_revision); None when reading is not
    enough to be sure (assigned twice, not a literal, a merge, branch labels)."""
    found: dict[str, object] = {}
    for name, value in _ASSIGNMENT.findall(source):
        if name in found:
            return None
        try:
            found[name] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    revision = found.get("revision")
    if not isinstance(revision, str) or not revision or "down_revision" not in found:
        return None
    down = found["down_revision"]
    if down is not None and not isinstance(down, str):
        return None  # a merge point names several (a tuple): let alembic work it out
    if found.get("branch_labels") is not None or found.get("depends_on") is not None:
        return None
    return revision, down


def read_head(folder: Path) -> str | None:
    """The head of the revisions in ``folder``, read from the files; None
    unless they make one linear chain from a single base."""
    down_of: dict[str, str | None] = {}
    try:
        with os.scandir(folder) as entries:
            files = sorted(e.name for e in entries if e.is_file())
        for name in files:
            if not _REVISION_FILE.match(name):
                continue
            ids = _ids((folder / name).read_text(encoding="utf-8"))
            if ids is None or ids[0] in down_of:
                return None
            down_of[ids[0]] = ids[1]
    except (OSError, UnicodeDecodeError):
        return None
    child_of: dict[str | None, str] = {}
    for revision, down in down_of.items():
        if down is not None and down not in down_of:
            return None  # revises a revision that is not there
        if down in child_of:
            return None  # a branch, or a second base
        child_of[down] = revision
    head: str | None = None
    for _ in range(len(down_of)):
        if head not in child_of:
            return None  # some revisions are not on the chain from the base
        head = child_of[head]
    return head


@functools.cache
def scripted_head() -> str | None:
    """The newest revision this version of ikigai ships, read from
    ``migrations/versions`` (None: ask alembic)."""
    return read_head(VERSIONS)


def stored_revisions(conn: sa.Connection) -> tuple[str, ...] | None:
    """The rows of the database's ``alembic_version`` table; None without one
    (a database alembic never ran on)."""
    if not sa.inspect(conn).has_table(VERSION_TABLE):
        return None
    return tuple(conn.execute(_SELECT_VERSIONS).scalars())


def at_head(engine: sa.Engine) -> str | None:
    """The head revision when the database is known to be at it, read without
    alembic; None when alembic has to decide."""
    head = scripted_head()
    if head is None:
        return None
    try:
        with engine.connect() as conn:
            revisions = stored_revisions(conn)
            conn.rollback()
    except (exc.DBAPIError, sqlite3.Error):
        # alembic meets the same error and reports it as it always did
        return None
    return head if revisions == (head,) else None
