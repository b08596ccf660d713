"""Alembic revisions of the store's schema. ``store.migrate`` runs them."""

from pathlib import Path

LOCATION = Path(__file__).resolve().parent
