"""Opening a shared database as one daemon among others: the store is
migrated only when no live daemon runs code of another schema (it would
change the tables under them)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from daemon.cluster.tcp import bind
from daemon.config.cluster import ClusterConfig
from daemon.process.sockets import StartupError
from protocol.version import __version__
from store import Joining, SchemaOutOfDate, Store, display_url
from store._cluster import live_schemas
from store._head import scripted_head


def open_store(url: str) -> Store:
    """The store at ``url``, at this code's schema: migrated if it must be
    and no live daemon runs another schema; StartupError naming both
    versions otherwise."""
    try:
        return Store(url, upgrade=False)
    except SchemaOutOfDate:
        pass
    mine = scripted_head() or "unknown"
    others = [(d, v) for d, v in live_schemas(url) if v != mine]
    if others:
        raise other_schemas(mine, others, display_url(url))
    return Store(url)


def other_schemas(mine: str, others: list[tuple[str, str]], database: str) -> StartupError:
    """The refusal of a daemon whose schema version is not the live daemons'."""
    listed = ", ".join(f"{d} (schema {v})" for d, v in others[:5])
    return StartupError(
        f"this daemon's schema is {mine} but live daemons of the database {database} "
        f"run another: {listed}. Run one version of ikigai on every daemon: stop them "
        "all, then start them with one version (a rolling restart cannot change the schema)"
    )


def joining(
    daemon_id: str,
    config: ClusterConfig,
    home: Path,
    socket_path: Path,
    schema: str | None,
    port: int | None = None,
) -> Joining:
    """What this daemon says of itself in its row of ``daemons``; ``port``:
    its bound TCP port for other hosts' daemons (cluster.listen)."""
    return Joining(
        id=daemon_id,
        host=config.host or socket.gethostname(),
        address=None if port is None else advertised(config, port),
        pid=os.getpid(),
        home=str(home),
        socket=str(socket_path),
        version=__version__,
        schema=schema or "unknown",
        labels=list(config.labels),
        lease=config.lease,
    )


def advertised(config: ClusterConfig, port: int) -> str:
    """The HOST:PORT other daemons connect to."""
    if config.advertise:
        return config.advertise
    host = (config.listen or "").rpartition(":")[0].strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = config.host or socket.gethostname()
    return f"{host}:{port}"


CLUSTER_SECRET = "cluster_secret"  # the credentials.json key daemons of several hosts share
MIN_SECRET = 16


def listen_for_peers(
    config: ClusterConfig, secret: str | None
) -> tuple[socket.socket | None, int | None]:
    """The bound TCP socket for other hosts' daemons and its port
    (cluster.listen), or (None, None)."""
    if config.listen is None:
        return None, None
    if not secret or len(secret) < MIN_SECRET:
        raise StartupError(
            f"cluster.listen needs a shared secret of at least {MIN_SECRET} characters: "
            f'put the same "{CLUSTER_SECRET}" in every daemon\'s credentials.json '
            "(e.g. the output of `openssl rand -hex 32`)"
        )
    try:
        return bind(config.listen)
    except (OSError, ValueError) as e:
        raise StartupError(f"cluster.listen {config.listen}: cannot listen there: {e}") from None
