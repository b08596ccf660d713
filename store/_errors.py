"""The store's errors: each names what was asked for and what is wrong with it."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every error the store raises on purpose."""


class DatabaseUnreachable(StoreError):
    """The database cannot be opened or connected to (the message names the
    URL, never a password)."""


class SchemaOutOfDate(StoreError):
    """The database is not at the schema revision this version of ikigai needs."""


class SchemaDrift(StoreError):
    """The SQLAlchemy models and the alembic migrations disagree (a migration is missing)."""


class AgentNotFound(StoreError, LookupError):
    """No agent has this id (or no agent matches this name or id prefix)."""


class AmbiguousAgent(StoreError, LookupError):
    """A name or id prefix matches more than one agent."""


class NameTaken(StoreError):
    """Another live agent already has this name."""


class BadForkPoint(StoreError):
    """The message to fork at is not in the parent's history."""


class NoSuchMark(StoreError, LookupError):
    """A rewind names a mark that is not in the agent's current context."""


class InvalidEntry(StoreError, ValueError):
    """A row to append is malformed: unknown kind, missing message, wrong role, bad reference."""


class ScheduleNotFound(StoreError, LookupError):
    """No schedule has this id or name."""


class Fenced(StoreError):
    """This daemon lost its lease on a shared database: another daemon may run
    its agents now, so it writes nothing more (store/_cluster.py)."""
