"""The error the supervisor refuses a request with."""

from __future__ import annotations


class AgentError(Exception):
    """A refused request: unknown agent, busy agent, bad model text... The message says why."""
