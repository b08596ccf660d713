"""Confining the processes of ``bash`` and external tools with bubblewrap.

A policy says how a tool's process runs (``agents.permissions.Sandbox``):

- ``none``: as the daemon's user, unconfined (``wrap`` returns argv unchanged).
- ``workdir``: the whole filesystem read-only, except the agent's working
  directory (read-write) and a private, empty ``/tmp`` (gone when the command
  ends); a private ``/proc`` (the daemon's own process, whose memory and
  environment hold the keys, is not visible), a minimal ``/dev``; no network
  unless the policy grants it (only a loopback of its own otherwise); no
  capabilities, even when the daemon runs as root (root could otherwise
  unmount what hides the secrets below).
- ``strict``: as ``workdir``, and the places a careful user keeps private or
  live are empty too: the user's home (``$HOME``, ``/home``, ``/root``), the
  runtime folders ``/run`` and ``/var/run`` (ssh-agent, gpg-agent, D-Bus and
  ikigai's own control socket), ``/mnt``, ``/media`` and ``/var/tmp``. The
  working directory is bound back even when it lies inside one of them. What
  stays readable is the system: ``/usr``, ``/etc``, ``/opt``...

In every sandboxed mode the daemon's own files are hidden: ``hide`` names
them (the tools pass each protected file of the ToolContext's Guard and the
folder holding it - credentials.json in IKIGAI_HOME or ~/.config/ikigai, with
the database, the logs and the socket when they live there). A folder is
covered by an empty tmpfs, a file (or socket) by /dev/null - after the working
directory is bound, so they stay hidden even in an agent working in its home
or in IKIGAI_HOME itself.

Everything the command starts lives in its own PID namespace, whose first
process dies with bwrap (--die-with-parent): when the command exits, every
process it left behind is killed at once, background servers included. On a
timeout or a cancel, _process ends bwrap's process group as for any command
(SIGTERM, a grace period, SIGKILL): the command and its children are in that
group too, because bwrap runs without --new-session. With --new-session they
would be in a session of their own, out of reach of the group kill, and only
--die-with-parent would end them - which a cancel in the first milliseconds,
before bwrap arms it, escapes (a test saw one run in five leave its processes
behind). --new-session guards a terminal against TIOCSTI; a tool process has
none: _process starts bwrap in a new session with no controlling terminal,
stdin is /dev/null or a pipe, and --dev gives a /dev without the host's ttys.

``sandbox_available`` runs bwrap once (cached) with the namespaces ``wrap``
asks for; ``sandbox_problem`` says why it cannot, for the daemon's log line
and the tool's error. When bwrap is missing, that names the command that
installs it on this system (``install_command``): the error is often the
first a new user hears of the sandbox, and ikictl shows it on one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from ._api import ToolContext, ToolOutput
from ._gitmounts import GitMounts, git_mounts, objects_root

if TYPE_CHECKING:  # at run time: the permissions package may import tools' names
    from agents.permissions._types import Sandbox

__all__ = ["confine", "install_command", "sandbox_available", "sandbox_problem", "wrap"]

_BWRAP = "bwrap"
_PROBE_TIMEOUT = 10.0  # seconds; a probe that hangs counts as unavailable
# Private in "strict": homes, live sockets, removable and mounted data.
_STRICT_HIDDEN = ("/home", "/root", "/run", "/var/run", "/mnt", "/media", "/var/tmp")
_NAMESPACES = (
    "--die-with-parent",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--cap-drop",
    "ALL",
)

# (the ID / ID_LIKE of /etc/os-release that share a package manager, its command)
_INSTALL: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"debian", "ubuntu"}), "apt-get install bubblewrap"),
    (frozenset({"fedora", "rhel", "centos"}), "dnf install bubblewrap"),
    (frozenset({"arch"}), "pacman -S bubblewrap"),
)
_OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")

_lock = threading.Lock()
_probed: tuple[str | None, str | None] | None = None  # (bwrap path, problem)


def _os_release() -> str:
    for place in _OS_RELEASE:
        try:
            return Path(place).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return ""


def _system_ids(os_release: str) -> set[str]:
    """The ID and ID_LIKE words of an os-release text (``ubuntu debian``)."""
    ids: set[str] = set()
    for line in os_release.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("ID", "ID_LIKE"):
            ids.update(value.strip().strip("\"'").lower().split())
    return ids


def install_command(
    os_release: str | None = None, *, platform: str | None = None, root: bool | None = None
) -> str | None:
    """The command that installs bubblewrap on this system
    (``sudo apt-get install bubblewrap``; no ``sudo`` for root), or None when
    there is none to name: macOS (bubblewrap is Linux-only) or a Linux whose
    package manager is not known here. Each argument left out is this
    machine's: /etc/os-release, ``sys.platform``, whether we run as root."""
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return None
    if os_release is None:
        os_release = _os_release()
    if root is None:
        root = os.geteuid() == 0
    ids = _system_ids(os_release)
    for family, command in _INSTALL:
        if ids & family:
            return command if root else f"sudo {command}"
    return None


def _not_installed(
    os_release: str | None = None, *, platform: str | None = None, root: bool | None = None
) -> str:
    """Why there is no sandbox when bwrap is not on PATH, with the fix. Short:
    in a tool error, ikictl shows it on a line of 100 characters."""
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return "bubblewrap is Linux-only: no sandbox on macOS"
    command = install_command(os_release, platform=platform, root=root)
    if command is None:
        return "bwrap is not on PATH; install the bubblewrap package"
    return f"bwrap is not on PATH; run: {command}"


def _probe() -> tuple[str | None, str | None]:
    exe = shutil.which(_BWRAP)
    if exe is None:
        return None, _not_installed()
    argv = [
        exe,
        *_NAMESPACES,
        "--unshare-net",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--",
        "true",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{exe} cannot run: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", errors="replace").strip()[-300:]
        return None, f"{exe} cannot create a sandbox here (exit {done.returncode}): {err}"
    return exe, None


def _state() -> tuple[str | None, str | None]:
    global _probed
    with _lock:
        if _probed is None:
            _probed = _probe()
        return _probed


def sandbox_available() -> bool:
    """Whether bubblewrap is installed and can create its namespaces here.
    Probed once (it runs a process: call it from a thread in async code)."""
    return _state()[0] is not None


def sandbox_problem() -> str | None:
    """Why the sandbox is not available, or None when it is."""
    return _state()[1]


def _forget() -> None:
    """Probe again on the next call (tests that change PATH)."""
    global _probed
    with _lock:
        _probed = None


def _real(path: Path | str) -> str:
    return os.path.realpath(path)


def _depth_first(mount: tuple[str, bool]) -> tuple[int, bool, str]:
    place, bind = mount
    return len(Path(place).parts), bind, place


def wrap(
    argv: Sequence[str],
    *,
    cwd: Path,
    mode: Sandbox,
    network: bool,
    hide: Iterable[Path] = (),
    expose: Iterable[Path] = (),
    git: GitMounts | None = None,
) -> list[str]:
    """``argv`` run in a sandbox of ``mode`` (``none``: ``argv`` unchanged).

    ``cwd`` is the only place the command may write, with the git folders
    ``git`` names for an agent in a worktree (_gitmounts.py). ``hide``: files and
    folders made unreadable (a folder gets an empty tmpfs, a file /dev/null).
    ``expose``: folders bound back read-only after the hiding; for a file,
    its folder and its link target's (an external tool's own folder). A
    folder given in ``hide`` is never bound back. Paths that do not exist are left out.
    """
    if mode == "none":
        return list(argv)
    work = _real(cwd)
    args = [_state()[0] or _BWRAP, *_NAMESPACES]
    if not network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # (folder, is a bind): the deeper mount wins, so they are made shallowest
    # first, a tmpfs before a bind of the same folder. A folder holding the
    # working directory is thus covered, then the directory bound back; a
    # hidden folder inside the working directory stays hidden.
    mounts: dict[str, bool] = {"/tmp": False}
    if mode == "strict":
        for place in (os.environ.get("HOME") or str(Path.home()), *_STRICT_HIDDEN):
            mounts[_real(place)] = False
    files: list[str] = []
    for path in hide:
        real = _real(path)
        if os.path.isdir(real):
            mounts[real] = False
        elif os.path.lexists(real):
            files.append(real)
    for item in expose:
        if os.path.isdir(item):
            folders = {_real(item)}
        else:  # a file: its folder, and its target's when it is a link
            folders = {_real(Path(item).parent), os.path.dirname(_real(item))}
        for real in folders:
            if os.path.isdir(real) and real not in mounts:
                mounts[real] = True
    mounts[work] = True
    writable = {work}
    if git is not None:
        for place in git.expose:
            mounts.setdefault(place, True)
        for place in git.writable:
            mounts[place] = True
            writable.add(place)
    for place, bind in sorted(mounts.items(), key=_depth_first):
        if bind:
            args += ["--bind" if place in writable else "--ro-bind", place, place]
        elif place != "/" and os.path.isdir(place):
            args += ["--tmpfs", place]
    for file in files:  # last: nothing bound above may show them again
        args += ["--ro-bind", "/dev/null", file]
    for file in git.pinned if git is not None else ():
        args += ["--ro-bind", file, file]
    for name, value in git.env.items() if git is not None else ():
        args += ["--setenv", name, value]
    args += ["--chdir", work, "--", *argv]
    return args


async def confine(
    argv: Sequence[str], ctx: ToolContext, *, expose: Iterable[Path] = ()
) -> list[str] | ToolOutput:
    """``argv`` wrapped for the context's sandbox, or the error result to give
    when a sandbox is asked for and cannot be had: the command is then not run
    at all, never run unconfined. Hidden: each file the context's Guard
    protects, and the folder holding it (ikigai's own folder)."""
    if ctx.sandbox == "none":
        return list(argv)
    if not await trio.to_thread.run_sync(sandbox_available):
        return ToolOutput(
            f"the sandbox is not available ({sandbox_problem()}): not run", is_error=True
        )
    hide: list[Path] = []
    for protected in ctx.files.files:
        hide += [protected.path, protected.path.parent]
    # wrap looks at the filesystem (links, folders): not on the event loop
    return await trio.to_thread.run_sync(partial(_wrapped, argv, ctx, hide, expose))


def _wrapped(
    argv: Sequence[str], ctx: ToolContext, hide: list[Path], expose: Iterable[Path]
) -> list[str]:
    shared = objects_root(ctx.worktrees)  # agents' commits, seen from any checkout
    return wrap(
        argv,
        cwd=ctx.cwd,
        mode=ctx.sandbox,
        network=ctx.network,
        hide=hide,
        expose=[*expose, *([Path(shared)] if shared else [])],
        git=git_mounts(ctx.cwd, ctx.worktrees, ctx.worktree_branch),
    )
