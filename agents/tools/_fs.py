"""Helpers shared by the file and search tools: path resolution, binary
detection, atomic writes, and running blocking work off the trio loop."""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import trio

from ._api import ToolContext, ToolOutput
from ._guard import ToolFailure

T = TypeVar("T")

# Folders that searches never enter.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)

_SNIFF = 8192


_Handler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolOutput]]


def failures_as_errors(handler: _Handler) -> _Handler:
    """ToolFailure and OSError become plain error results (no exception type
    name: the message says it all)."""

    @functools.wraps(handler)
    async def wrapper(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            return await handler(args, ctx)
        except ToolFailure as exc:
            return ToolOutput(str(exc), is_error=True)
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            return ToolOutput(f"{exc.strerror or exc}{where}", is_error=True)

    return wrapper


def resolve(ctx: ToolContext, path: str) -> Path:
    """A path as the model gave it: ``~`` expanded, relative ones against the
    agent's folder. Not made canonical, so messages show what the model knows."""
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = ctx.cwd / p
    return p


def show(ctx: ToolContext, path: Path) -> str:
    """A path for output: relative to the agent's folder when inside it (the
    file tools read it back the same way), absolute otherwise."""
    path = Path(os.path.normpath(path))
    try:
        return path.relative_to(ctx.cwd).as_posix()
    except ValueError:
        return str(path)


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block, the test git and grep use."""
    return b"\0" in head[:_SNIFF]


async def in_thread(fn: Callable[[threading.Event], T]) -> T:
    """Run blocking ``fn(stop)`` in a worker thread. When the caller is
    cancelled, trio moves on at once and ``stop`` is set so ``fn`` can end
    early (read-only work only: it may be abandoned half done)."""
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(fn, stop, abandon_on_cancel=True)
    finally:
        stop.set()


async def in_thread_to_end(fn: Callable[[], T]) -> T:
    """Run blocking ``fn()`` in a worker thread and wait for it even when
    cancelled (for writes: short, and never left half done)."""
    return await trio.to_thread.run_sync(fn)


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def atomic_write(path: Path, data: bytes, shown: str | None = None) -> bool:
    """Write ``data`` to ``path`` through a temporary file and os.replace, so a
    reader sees the old or the new file, never half of one. Parent folders are
    created; a symlink is followed (its target is replaced, the link stays); an
    existing file keeps its permission bits. Returns whether the file existed."""
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise ToolFailure(f"{shown or path} is a folder, not a file")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
        existed = True
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
        existed = False
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return existed
