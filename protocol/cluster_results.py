"""Results about the daemons sharing one database (``daemons.list``,
``daemon.status``'s ``cluster``): docs/cluster.md. Re-exported by
protocol.results; TypedDicts, as there."""

# no ``from __future__ import annotations``: TypedDict must see its types
from typing import TypedDict


class ClusterState(TypedDict):
    """This daemon as a member (``daemon.status``)."""

    id: str  # stable per host and IKIGAI_HOME, or config cluster.id
    generation: int  # its lease epoch: one more each time it joins
    shared: bool  # the database can hold several daemons (PostgreSQL)
    lease: float  # seconds
    heartbeat: float  # seconds
    lease_held: bool  # false: cut off from the database, its agents stopped
    labels: list[str]


class DaemonRow(TypedDict):
    """One daemon of ``daemons.list``."""

    id: str
    host: str
    pid: int
    state: str  # up | draining | stopped | lost
    agents: int  # running agents, at its last heartbeat
    heartbeat_age: float  # seconds, by the database's clock
    expired: bool  # its lease ran out: the others are about to adopt its agents
    version: str
    schema: str
    labels: list[str]
    lease: float
    generation: int
    started_at: str
    socket: str
    address: str | None  # HOST:PORT for daemons of other hosts (cluster.listen); None: none
    self: bool  # the daemon that answered


class Moved(TypedDict):
    """``agent.move``: where it runs now; its events go on from ``next_seq``
    there (a subscription ended with reason "agent moved": subscribe again
    from the seq after the last one received, on any daemon)."""

    agent: str  # its id
    moved_from: str  # the daemon that ran it
    to: str  # the daemon that runs it now
    next_seq: int


class DaemonsListed(TypedDict):
    daemons: list[DaemonRow]
    self: str  # the answering daemon's id
