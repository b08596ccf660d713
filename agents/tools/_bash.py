"""The bash tool: run a shell command in the agent's folder."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from ._api import ToolContext, ToolOutput, ToolSpec
from ._process import KILL_GRACE, Completed, run_captured
from ._sandbox import confine
from ._text import seconds

__all__ = ["bash_tool"]


def _is_dir(path: Path) -> bool:
    return path.is_dir()


# A sandbox whose mounts raced a file being replaced (a worktree agent's
# pinned refs, renamed by a sibling's git at that moment) fails before the
# command starts: it is set up again, the command never ran twice.
SETUP_TRIES = 3


def _setup_failed(done: Completed) -> bool:
    """bwrap failed to bind a pinned ref (exit 1, its own message first,
    naming the ref): nothing ran."""
    if done.returncode != 1:
        return False
    first = done.stdout.text().partition("\n")[0]
    return first.startswith("bwrap: Can't") and "/refs/heads/" in first


def bash_tool(*, timeout: float = 120.0, max_output: int = 64 * 1024) -> ToolSpec:
    """``timeout`` is the longest a command may run (the default when the model
    gives none, and the cap on what it asks for). The spec's own timeout - the
    registry's backstop - is a little longer, so that the tool itself reports a
    timeout together with the output printed so far."""
    limit = max(1024, max_output - 512)  # room for the notes we add

    async def run_bash(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command: str = args["command"]
        wanted = args.get("timeout")
        limit_s = timeout if wanted is None else min(float(wanted), timeout)
        env = ctx.process_env("bash")
        for attempt in range(SETUP_TRIES):
            argv = await confine(["bash", "-c", command], ctx)
            if isinstance(argv, ToolOutput):
                return argv
            try:
                done = await run_captured(
                    argv, cwd=ctx.cwd, env=env, limit=limit, time_limit=limit_s
                )
            except FileNotFoundError:
                if not _is_dir(ctx.cwd):
                    return ToolOutput(f"the working folder {ctx.cwd} does not exist", is_error=True)
                raise
            raced = ctx.worktree_branch is not None and _setup_failed(done)
            if not raced or attempt == SETUP_TRIES - 1:
                break
        text = done.stdout.text()
        if text.endswith("\n"):
            text = text[:-1]
        notes: list[str] = []
        failed = False
        if done.timed_out:
            failed = True
            notes.append(
                f"[timed out after {seconds(limit_s)} s; the command and every process "
                "it started were killed]"
            )
        elif done.returncode is not None and done.returncode < 0:
            failed = True
            try:
                name = signal.Signals(-done.returncode).name
            except ValueError:
                name = str(-done.returncode)
            notes.append(f"killed by signal {name}")
        elif done.returncode:
            failed = True
            notes.append(f"exit code {done.returncode}")
        if done.lingering:
            notes.append(
                "[processes the command started in the background still held its output "
                "open after it exited; they were stopped. Redirect their output "
                "(cmd > file 2>&1 &) to keep them running]"
            )
        if not text and not notes:
            return ToolOutput("(no output)")
        body = "\n\n".join(p for p in [text, "\n".join(notes)] if p)
        return ToolOutput(body, is_error=failed)

    return ToolSpec(
        name="bash",
        description=(
            "Run a command with bash -c in the agent's working folder and return its "
            "output (stdout and stderr together). A non-zero exit is reported as "
            "'exit code N'. stdin is empty, so interactive commands get end of file. "
            f"Commands are stopped after {seconds(timeout)} s (or the 'timeout' given, "
            "if shorter), together with every process they started. Long output is "
            "cut in the middle. Prefer file_read/file_edit/grep/glob for files."
        ),
        parameters={
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The bash command line to run.",
                },
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": (
                        f"Seconds before the command is stopped; at most {seconds(timeout)} "
                        "(the default)."
                    ),
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        handler=run_bash,
        timeout=timeout + KILL_GRACE + 3.0,
        max_output=max_output,
    )
