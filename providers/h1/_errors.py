"""The one exception the streaming client raises."""

from __future__ import annotations

from typing import Literal

Kind = Literal[
    "connect", "timeout_connect", "timeout_read", "timeout_write", "closed", "protocol", "refused"
]


class TransportError(Exception):
    """A streamed request failed below HTTP semantics.

    kind: connect (refused, DNS, TLS handshake, proxy refused or unsupported),
    timeout_connect / timeout_read / timeout_write, closed (the peer closed or
    reset mid-exchange), protocol (malformed HTTP), refused (a request this
    client will not send: retrying cannot help). The message never holds a
    header value or proxy credentials."""

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind: Kind = kind
        self.message = message

    def __repr__(self) -> str:
        return f"TransportError({self.kind!r}, {self.message!r})"
