"""A daemon's id: stable across restarts, distinct per host and IKIGAI_HOME."""

from __future__ import annotations

import hashlib
import re
import socket
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def daemon_id(home: Path, configured: str | None = None, host: str | None = None) -> str:
    """``configured`` (config ``cluster.id``) if set, else the short host name
    and six hex digits of a hash of the host and the home folder: two
    daemons of one host with different homes differ, one restarted keeps its id."""
    if configured:
        return configured
    host = host or socket.gethostname()
    short = _UNSAFE.sub("-", host.split(".")[0]).strip("-")[:40] or "host"
    digest = hashlib.sha256(f"{host}\0{Path(home).resolve()}".encode()).hexdigest()[:6]
    return f"{short}-{digest}"
