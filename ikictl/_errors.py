"""Exit codes and the errors ikictl maps to them, defined once.

DaemonUnreachable and UsageError are the client library's (ikigai.errors):
what the library raises for a request that cannot be sent is a usage error
here too. RpcError (an error answer from the daemon) is protocol's; it
is not re-exported here so that importing this module costs nothing at
start-up (``ikictl --version`` imports it).
"""

from __future__ import annotations

from ikigai.errors import DaemonUnreachable, UsageError

__all__ = [
    "EXIT_CONFLICT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "DaemonUnreachable",
    "UsageError",
]

EXIT_OK = 0
EXIT_ERROR = 1  # the daemon refused, the turn failed...
EXIT_USAGE = 2  # bad command-line input
EXIT_UNREACHABLE = 3  # no daemon answers
EXIT_NOT_FOUND = 4  # no such agent, or an ambiguous reference
EXIT_CONFLICT = 5  # merge: git stopped on a conflict (nothing was merged)
# the agent is alive but no daemon of the database runs it now (its daemon was
# lost: adopted within the lease; or stopped): worth a retry, unlike 1
EXIT_UNAVAILABLE = 6
EXIT_INTERRUPTED = 130  # Ctrl+C
