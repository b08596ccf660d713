"""Running git for the daemon: one process per command, never a shell.

The environment is the daemon's without the variables that would point git
at another repository, with prompts off and messages in English (they are
matched and quoted). ``quiet`` adds what a command run on an agent's
worktree needs: no fsmonitor and no hooks, because the worktree's files are
the agent's and the daemon runs outside its sandbox.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import trio

GIT_TIMEOUT = 120.0  # seconds; a worktree of a large repository takes a while to check out
_DROPPED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
)
# config an agent could have planted is never honoured by the daemon's own git
QUIET = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


class GitError(Exception):
    """A git command failed; the message is git's own (its last lines)."""


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C", GIT_OPTIONAL_LOCKS="0")
    return env


async def git(
    *args: str,
    cwd: Path | str,
    check: bool = True,
    quiet: bool = False,
    limit: int = 0,
    env: dict[str, str] | None = None,
) -> Done:
    """``git args`` in ``cwd``. GitError with git's message when it fails and
    ``check``. ``limit``: keep at most this many bytes of stdout (0: all).
    ``env``: variables added to the environment."""
    argv = ["git", *(QUIET if quiet else ()), *args]
    try:
        with trio.fail_after(GIT_TIMEOUT):
            done = await trio.run_process(
                argv,
                cwd=str(cwd),
                env={**_env(), **(env or {})},
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                stdin=b"",
            )
    except FileNotFoundError:
        raise GitError("git is not installed (not on PATH)") from None
    except trio.TooSlowError:
        raise GitError(f"git {args[0]} took more than {GIT_TIMEOUT:.0f} s") from None
    out = done.stdout[:limit] if limit else done.stdout
    result = Done(
        done.returncode,
        out.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )
    if check and result.code != 0:
        raise GitError(message(result))
    return result


async def is_dir(path: str) -> bool:
    return await trio.to_thread.run_sync(os.path.isdir, path)


async def exists(path: str) -> bool:
    return await trio.to_thread.run_sync(os.path.lexists, path)


def message(done: Done) -> str:
    """git's own words for a failure: its stderr (else stdout), last lines."""
    text = (done.err.strip() or done.out.strip() or f"git exited with {done.code}").splitlines()
    return "\n".join(text[-12:])[-2000:]
