"""A worktree agent's own object store.

Inside its sandbox an agent's git writes new objects (its commits) to a
folder of its own, ``<worktrees folder>/.objects/<worktree name>``
(GIT_OBJECT_DIRECTORY, set by the sandbox), and reads the repository's
objects read-only (GIT_ALTERNATE_OBJECT_DIRECTORIES): a command cannot
delete or damage the objects the parent's checkout is made of. The folder
is listed in the repository's ``objects/info/alternates`` (by the daemon,
outside the sandbox), so the repository, its other checkouts and the
daemon's own git see the agent's commits. When the worktree is pruned its
objects are first copied into the repository's own store, then the folder
and its alternates line go: a branch kept after a prune stays whole. A
merge copies them first too: the repository's own branches never depend on
the daemon's folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

OBJECTS = ".objects"  # under the worktrees folder


def objects_dir(worktree: str) -> Path:
    """The object folder of the worktree at ``worktree``."""
    path = Path(worktree)
    return path.parent / OBJECTS / path.name


def _alternates(common: str) -> Path:
    return Path(common) / "objects" / "info" / "alternates"


def _write_lines(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(f".{path.name}.ikigai-{os.getpid()}")
    tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)


def attach(common: str, worktree: str) -> Path:
    """Make the worktree's object folder and list it in the repository's
    alternates. Blocking: call it from a thread."""
    own = objects_dir(worktree)
    (own / "info").mkdir(parents=True, exist_ok=True)
    (own / "pack").mkdir(exist_ok=True)
    alt = _alternates(common)
    alt.parent.mkdir(parents=True, exist_ok=True)
    lines = alt.read_text(encoding="utf-8").splitlines() if alt.exists() else []
    if str(own) not in lines:
        _write_lines(alt, [*lines, str(own)])
    return own


def absorb(common: str, worktree: str) -> None:
    """Copy the worktree's objects into the repository's own store (before a
    merge: the repository's branches must not depend on the daemon's
    folder). Blocking: call it from a thread."""
    own = objects_dir(worktree)
    store = Path(common) / "objects"
    if own.is_dir() and store.is_dir():
        _copy_objects(own, store)


def detach(common: str, worktree: str) -> None:
    """Copy the worktree's objects into the repository's store, then drop
    its folder and its alternates line. Blocking: call it from a thread."""
    absorb(common, worktree)
    own = objects_dir(worktree)
    alt = _alternates(common)
    if alt.exists():
        lines = alt.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if line.strip() != str(own)]
        if kept != lines:
            if kept:
                _write_lines(alt, kept)
            else:
                alt.unlink()
    shutil.rmtree(own, ignore_errors=True)


def _copy_objects(src: Path, dst: Path) -> None:
    """Loose objects (xx/yyyy) and packs not already in ``dst``; packs
    before their index, so a reader never sees an index without its pack."""
    for folder in src.iterdir():
        if len(folder.name) == 2 and folder.is_dir():
            (dst / folder.name).mkdir(exist_ok=True)
            for obj in folder.iterdir():
                target = dst / folder.name / obj.name
                if not target.exists():
                    _copy(obj, target)
    packs = src / "pack"
    if packs.is_dir():
        (dst / "pack").mkdir(exist_ok=True)
        names = sorted(p.name for p in packs.iterdir())
        for name in sorted(names, key=lambda n: n.endswith(".idx")):
            target = dst / "pack" / name
            if not target.exists():
                _copy(packs / name, target)


def _copy(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".{dst.name}.ikigai-{os.getpid()}")
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o444)
    os.replace(tmp, dst)
