"""What git may write when an agent works in a worktree the daemon made.

A worktree agent's sandbox lets it write its worktree folder (its cwd) and,
so that ``git commit`` and ``git switch -c`` work there:

- its worktree's admin folder ``<common>/worktrees/<id>`` (HEAD, index);
- an object folder of its own, ``<worktrees folder>/.objects/<name>``:
  GIT_OBJECT_DIRECTORY points git there, and the repository's objects are
  read through GIT_ALTERNATE_OBJECT_DIRECTORIES, read-only (agents/
  worktrees/_objects.py lists the agent's folder in the repository's
  alternates, so its commits are seen outside);
- ``<common>/refs/heads`` and ``<common>/logs/refs/heads``: branches and
  their reflogs.

Everything else of the repository stays read-only: its objects, the config,
the hooks, packed-refs, tags and remotes, the main checkout's HEAD and
index, every other worktree's admin folder and files. Pinned read-only
inside the writable folders, so that the agent cannot redirect git nor move
a branch that is not its own:

- the worktree's ``.git`` file and its admin folder's ``commondir``,
  ``gitdir`` and ``config.worktree``: rewritten, they would point the
  daemon's own git commands (status, diff, merge) at a repository or a
  config the agent made;
- the ref file of every other local branch (a rename over a mount point
  fails: ``git update-ref``, ``git branch -f``, a commit on a HEAD pointed
  there cannot move it). A branch held only in packed-refs gets its loose
  file first (the same commit: git reads it the same), so that no loose
  ref can be made to shadow it. The branches it makes itself in the
  sandbox are its own.

The agent's own branch comes from the daemon's record, never from the
worktree's HEAD (which the agent may point anywhere).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

OBJECTS = ".objects"  # agents/worktrees/_objects.py
MAX_PINS = 4000  # refs pinned one by one; past that, the newest are left out
_PINNED_ADMIN = ("commondir", "gitdir", "config.worktree")


@dataclass(frozen=True)
class GitMounts:
    writable: list[str] = field(default_factory=list)  # folders bound read-write
    pinned: list[str] = field(default_factory=list)  # files bound read-only over themselves
    expose: list[str] = field(default_factory=list)  # folders bound back read-only
    env: dict[str, str] = field(default_factory=dict)  # set in the sandbox


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _admin(cwd: Path) -> Path | None:
    text = _read(cwd / ".git")
    if text is None or not text.startswith("gitdir:"):
        return None
    return Path(cwd, text[len("gitdir:") :].strip()).resolve()


def _packed(common: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (_read(common / "packed-refs") or "").splitlines():
        parts = line.split(" ", 1)
        if len(parts) == 2 and parts[1].startswith("refs/heads/") and len(parts[0]) >= 40:
            out[parts[1][len("refs/heads/") :]] = parts[0]
    return out


def _loose(heads: Path) -> list[str]:
    out: list[str] = []
    for folder, dirs, files in os.walk(heads):
        rel = os.path.relpath(folder, heads)
        for name in files:
            if not name.endswith(".lock") and not name.startswith("."):
                out.append(name if rel == "." else f"{rel}/{name}")
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return out


def _loosen(heads: Path, branch: str, sha: str) -> bool:
    """Write ``branch``'s loose ref from packed-refs; never over an existing
    file (git's own write wins a race)."""
    ref = heads / branch
    if not ref.resolve().is_relative_to(heads.resolve()):
        return False
    try:
        ref.parent.mkdir(parents=True, exist_ok=True)
        tmp = ref.parent / f".{ref.name}.ikigai-{os.getpid()}"
        tmp.write_text(sha + "\n", encoding="ascii")
        try:
            os.link(tmp, ref)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    except OSError:
        return False
    return ref.is_file()


def objects_root(root: Path | None) -> str | None:
    """The folder of every worktree agent's objects, to bind back read-only in
    every sandbox (it lies in the daemon's hidden folder): a repository lists
    them in its alternates, and git must read them to show agents' commits."""
    if root is None:
        return None
    place = Path(root) / OBJECTS
    return str(place) if place.is_dir() else None


def git_mounts(cwd: Path, root: Path | None, branch: str | None) -> GitMounts | None:
    """The mounts for an agent working in ``cwd`` when it is a worktree the
    daemon made under ``root`` on ``branch`` (the daemon's record); None
    otherwise: the agent gets no more than in any folder."""
    if root is None or branch is None:
        return None
    real = Path(os.path.realpath(cwd))
    if not real.is_relative_to(os.path.realpath(root)):
        return None
    admin = _admin(real)
    if admin is None or not admin.is_dir():
        return None
    common_text = _read(admin / "commondir")
    if common_text is None:
        return None
    common = Path(admin, common_text).resolve()
    own_objects = Path(os.path.realpath(root)) / OBJECTS / real.name
    heads = common / "refs" / "heads"
    logs = common / "logs" / "refs" / "heads"
    if not own_objects.is_dir() or not heads.is_dir():
        return None
    writable = [str(admin), str(own_objects), str(heads)]
    if logs.is_dir():
        writable.append(str(logs))
    pinned = [str(real / ".git")]
    pinned += [str(admin / f) for f in _PINNED_ADMIN if (admin / f).is_file()]
    loose = set(_loose(heads))
    for name, sha in _packed(common).items():
        if name not in loose and name != branch and _loosen(heads, name, sha):
            loose.add(name)
    others = sorted(b for b in loose if b != branch)[:MAX_PINS]
    pinned += [str(heads / b) for b in others]
    return GitMounts(
        writable=writable,
        pinned=pinned,
        expose=[str(common)],
        env={
            "GIT_OBJECT_DIRECTORY": str(own_objects),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(common / "objects"),
        },
    )
