"""Alembic environment for ikigai's store.

The store drives alembic from code (``store.migrate``) and hands this file an
open connection in ``config.attributes["connection"]``. From the command line
(for writing new revisions) it takes the URL from ``-x url=...``, else
$IKIGAI_DB_URL, else the default SQLite file:

    alembic -c migrations/alembic.ini -x url=sqlite:///dev.db revision --autogenerate -m "..."
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from store._engine import make_engine, resolve_url
from store._schema import metadata

config = context.config
if config.config_file_name is not None:  # the alembic command line
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    return resolve_url(context.get_x_argument(as_dictionary=True).get("url"))


def _configure(**kwargs) -> None:
    context.configure(
        target_metadata=metadata,
        # SQLite cannot ALTER most things: alembic recreates the table instead
        render_as_batch=True,
        compare_type=True,
        **kwargs,
    )


def run_offline() -> None:
    _configure(url=_url(), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_url(), foreign_keys=False)
    try:
        with engine.connect() as connection:
            _configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
