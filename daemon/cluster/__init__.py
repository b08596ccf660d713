"""Several daemons on one PostgreSQL database: this daemon's id, its
membership (heartbeat, the watchdog that stops its agents when it cannot
renew its lease, adopting the agents of lost daemons), and the forwarding
of requests for agents another daemon runs. docs/cluster.md says what is
guaranteed; store/_cluster.py holds the SQL."""

from daemon.cluster.identity import daemon_id
from daemon.cluster.membership import Membership

__all__ = ["Membership", "daemon_id"]
