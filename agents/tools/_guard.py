"""Files the file tools must not touch: the daemon's credentials, and the
daemon's own process in /proc (its memory and environment hold the keys).

The protected files are given by the daemon (it knows where credentials.json
is); nothing here guesses them. A path is compared after every symbolic link
and ``..`` is resolved (``/proc/self/root/...`` included), and by (st_dev,
st_ino), so a hard link or a /proc/self/fd entry is refused too. Readers check
again on the file they opened (``check_opened``), so a symbolic link swapped
between the check and the open does not get through.

This guards the file tools only: bash runs as the same user and can read
whatever the daemon can, until tools run in a sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEYS_REASON", "Guard", "Look", "Protected", "ToolFailure", "refusal"]

KEYS_REASON = "holds ikigai's API keys"
_OWN_PROCESS = (
    "belongs to the daemon's own process, whose memory and environment hold ikigai's API keys"
)


class ToolFailure(Exception):
    """A failure whose message is the whole answer to the model (no type name)."""


@dataclass(frozen=True)
class Protected:
    path: Path
    reason: str = KEYS_REASON


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


class Guard:
    """Answers "may a tool open this path?" for a fixed list of protected files."""

    def __init__(self, files: Iterable[Protected | Path | str] = ()) -> None:
        self.files = [f if isinstance(f, Protected) else Protected(Path(f)) for f in files]

    def look(self) -> Look:
        """The protected files as they are now (they may be created or replaced
        after start); one Look serves the many checks of one tool call."""
        targets = []
        for f in self.files:
            try:
                ident: tuple[int, int] | None = _identity(os.stat(f.path))
            except OSError:
                ident = None
            targets.append((f.reason, os.path.realpath(f.path), ident))
        return Look(targets)

    def check(self, path: Path | str, shown: str, verb: str = "read") -> None:
        """Raise ToolFailure when ``path`` is protected."""
        self.look().check(path, shown, verb)


class Look:
    def __init__(self, targets: list[tuple[str, str, tuple[int, int] | None]]) -> None:
        self._targets = targets

    def reason(self, path: Path | str) -> str | None:
        """Why ``path`` is refused, or None when a tool may use it."""
        real = os.path.realpath(path)
        own = _own_process(real)
        if own:
            return own
        try:
            ident: tuple[int, int] | None = _identity(os.stat(real))
        except OSError:
            ident = None
        for why, target, target_ident in self._targets:
            if real == target or (ident is not None and ident == target_ident):
                return why
        return None

    def reason_of(self, st: os.stat_result) -> str | None:
        """Why the file with status ``st`` (of an open file, or followed
        through its links) is refused, or None."""
        ident = _identity(st)
        for why, _target, target_ident in self._targets:
            if ident == target_ident:
                return why
        return None

    def check(self, path: Path | str, shown: str, verb: str = "read") -> None:
        why = self.reason(path)
        if why is not None:
            raise ToolFailure(refusal(shown, why, verb))

    def check_opened(self, fd: int, shown: str, verb: str = "read") -> None:
        why = self.reason_of(os.fstat(fd))
        if why is not None:
            raise ToolFailure(refusal(shown, why, verb))


def refusal(shown: str, why: str, verb: str = "read") -> str:
    return f"{shown} {why}; tools may not {verb} it"


def _own_process(real: str) -> str | None:
    """/proc/<pid>/..., /proc/<tid>/... of this process (a worker thread's id
    names the same memory)."""
    parts = real.split("/")
    if len(parts) < 3 or parts[1] != "proc" or not parts[2].isdigit():
        return None
    pid = os.getpid()
    if int(parts[2]) == pid or os.path.exists(f"/proc/{pid}/task/{parts[2]}"):
        return _OWN_PROCESS
    return None
