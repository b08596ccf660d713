"""The ``cluster`` section of config.json: this daemon among others on one
PostgreSQL database (docs/cluster.md). Read at start only."""

from __future__ import annotations

import re
from typing import Annotated

import msgspec
from msgspec import Meta

__all__ = ["ClusterConfig"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_ADDRESS = r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]*):[0-9]{1,5}$"
_HOST = Annotated[str, Meta(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9._-]+$")]
_LABEL = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:=-]+$")]


class ClusterConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``cluster``: membership, leases and draining."""

    # this daemon's id; null: its host name and a hash of its host and
    # IKIGAI_HOME (stable across restarts, distinct per home)
    id: Annotated[str, Meta(pattern=_ID.pattern)] | None = None
    # seconds without a heartbeat after which the others adopt its agents
    lease: Annotated[float, Meta(ge=1, le=3600)] = 10.0
    # seconds between heartbeats; null: half the lease. Adoption takes at most
    # lease + heartbeat after the daemon's last heartbeat
    heartbeat: Annotated[float, Meta(ge=0.1, le=1800)] | None = None
    # what `agent.create {on}` and `hosts` restrictions match, beside the id and host
    labels: list[_LABEL] = msgspec.field(default_factory=list)
    # on SIGTERM, hand the agents to the other live daemons before stopping
    drain: bool = False
    # "HOST:PORT" of a TCP port for daemons on other hosts (port 0: any free
    # one); null: none, only daemons of this host reach this one. Needs
    # cluster_secret in credentials.json
    listen: Annotated[str, Meta(pattern=_ADDRESS)] | None = None
    # "HOST:PORT" the other daemons connect to; null: the listen address,
    # with this host's name for a wildcard host
    advertise: Annotated[str, Meta(pattern=_ADDRESS)] | None = None
    # the host name this daemon announces (daemons of one host reach each
    # other on their Unix sockets); null: the machine's own
    host: _HOST | None = None

    @property
    def heartbeat_s(self) -> float:
        return self.heartbeat if self.heartbeat is not None else self.lease / 2


def cluster_fault(config: ClusterConfig) -> str | None:
    """What is wrong with a section each key of which is valid alone."""
    if config.heartbeat is not None and config.heartbeat > config.lease / 2:
        return (
            f"cluster.heartbeat ({config.heartbeat:g} s) must be at most half of "
            f"cluster.lease ({config.lease:g} s): one missed heartbeat must not lose the lease"
        )
    return None
