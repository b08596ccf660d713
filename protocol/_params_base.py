"""The base of every method's params (protocol.params): unknown fields are
refused, so a misspelt one is an error, not a silent default."""

import msgspec


class _P(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    pass
