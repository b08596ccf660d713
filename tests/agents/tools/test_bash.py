from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
import trio

from agents.tools import ToolContext, ToolRegistry, builtin_tools

from .helpers import call, run


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie - dead, not yet reaped by
    its parent, which here may be an init that never reaps - counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


def pids_in(text: str, tag: str) -> list[int]:
    return [int(m) for m in re.findall(rf"{tag} (\d+)", text)]


async def test_output_and_success(builtins, ctx):
    result = await run(builtins, ctx, "bash", command="echo hello; echo world")
    assert not result.is_error
    assert result.content == "hello\nworld"


async def test_no_output(builtins, ctx):
    result = await run(builtins, ctx, "bash", command="true")
    assert (result.content, result.is_error) == ("(no output)", False)


async def test_stderr_is_merged_in_order_and_exit_code_reported(builtins, ctx):
    result = await run(builtins, ctx, "bash", command="echo out; echo err >&2; echo out2; exit 3")
    assert result.is_error
    assert result.content == "out\nerr\nout2\n\nexit code 3"


async def test_exit_code_without_output(builtins, ctx):
    result = await run(builtins, ctx, "bash", command="exit 7")
    assert (result.content, result.is_error) == ("exit code 7", True)


async def test_killed_by_signal(builtins, ctx):
    result = await run(builtins, ctx, "bash", command="kill -KILL $$")
    assert (result.content, result.is_error) == ("killed by signal SIGKILL", True)


async def test_runs_in_cwd_with_extra_env_and_empty_stdin(tmp_path):
    ctx = ToolContext(agent_uuid="a-7", cwd=tmp_path, env={"IKI_TEST": "v 1"})
    reg = ToolRegistry(builtin_tools())
    real = tmp_path.resolve()
    result = await run(
        reg, ctx, "bash", command='pwd; echo "$IKI_TEST"; echo "$IKIGAI_AGENT_UUID"; cat'
    )
    assert result.content == f"{real}\nv 1\na-7"
    assert "PATH" in (await run(reg, ctx, "bash", command="env")).content


async def test_output_is_capped_keeping_head_and_tail(builtins, ctx):
    # 200,000 bytes: line numbers so the head and tail are recognisable
    result = await run(
        builtins, ctx, "bash", command="seq 1 200000 | head -c 200000; echo; echo END"
    )
    assert not result.is_error
    assert result.content.startswith("1\n2\n3\n")
    assert result.content.endswith("\nEND")
    assert re.search(r"\n\[\.\.\. \d+ bytes of output cut \.\.\.\]\n", result.content)
    assert len(result.content) <= 4000


async def test_timeout_argument_kills_the_whole_process_group(builtins, ctx):
    command = "echo PGID $$; sleep 60 & echo CHILD $!; sleep 60"
    with trio.fail_after(8):
        start = trio.current_time()
        result = await run(builtins, ctx, "bash", command=command, timeout=0.5)
        elapsed = trio.current_time() - start
    assert result.is_error
    assert result.content.endswith(
        "[timed out after 0.5 s; the command and every process it started were killed]"
    )
    assert elapsed < 2.5
    (pgid,) = pids_in(result.content, "PGID")
    (child,) = pids_in(result.content, "CHILD")
    assert not running(child)
    assert group_members(pgid) == []


async def test_timeout_argument_is_capped_by_the_tool_limit(ctx):
    reg = ToolRegistry(builtin_tools(bash_timeout=0.5))
    result = await run(reg, ctx, "bash", command="echo started; sleep 60", timeout=1000)
    assert result.is_error
    assert result.content == (
        "started\n\n[timed out after 0.5 s; the command and every process it started were killed]"
    )


async def test_cancelling_the_caller_kills_the_process_group_promptly(builtins, ctx, tmp_path):
    command = "echo $$ > pgid; sleep 60 & echo $! > child; sleep 60"
    with trio.move_on_after(0.5) as scope:
        await builtins.run(call("bash", command=command), ctx)
        pytest.fail("not cancelled")
    cancelled_at = trio.current_time()
    assert scope.cancelled_caught
    # run() returned (by raising Cancelled) only after the group was dealt with
    assert trio.current_time() - cancelled_at < 2.5
    pgid = int((tmp_path / "pgid").read_text())
    child = int((tmp_path / "child").read_text())
    assert not running(child)
    assert group_members(pgid) == []


async def test_processes_ignoring_sigterm_get_sigkill_after_the_grace(builtins, ctx, tmp_path):
    command = "trap '' TERM; echo $$ > pgid; sleep 60 & echo $! > child; sleep 60"
    start = trio.current_time()
    with trio.move_on_after(0.3):
        await builtins.run(call("bash", command=command), ctx)
    elapsed = trio.current_time() - start
    assert 2.0 <= elapsed < 3.0  # 0.3 s, then SIGTERM, 2 s of grace, SIGKILL
    pgid = int((tmp_path / "pgid").read_text())
    assert not running(int((tmp_path / "child").read_text()))
    assert group_members(pgid) == []


async def test_background_process_holding_the_output_is_stopped(builtins, ctx):
    with trio.fail_after(6):
        result = await run(builtins, ctx, "bash", command="sleep 30 & echo CHILD $!")
    assert not result.is_error
    (child,) = pids_in(result.content, "CHILD")
    assert "still held its output open after it exited; they were stopped" in result.content
    assert not running(child)


async def test_detached_background_process_is_left_running(builtins, ctx):
    result = await run(builtins, ctx, "bash", command="sleep 30 >/dev/null 2>&1 & echo CHILD $!")
    (child,) = pids_in(result.content, "CHILD")
    try:
        assert result.content == f"CHILD {child}"
        assert running(child)
    finally:
        os.kill(child, signal.SIGKILL)


async def test_missing_working_folder_is_an_error(tmp_path):
    ctx = ToolContext(agent_uuid="a", cwd=tmp_path / "gone")
    result = await run(ToolRegistry(builtin_tools()), ctx, "bash", command="pwd")
    assert result.is_error
    assert result.content == f"the working folder {tmp_path / 'gone'} does not exist"


async def test_registry_backstop_is_longer_than_the_bash_limit():
    (bash,) = [s for s in builtin_tools(bash_timeout=30) if s.name == "bash"]
    assert bash.timeout > 30 + 2
