"""The sandbox of bash and external tools: real bubblewrap, real processes.

These tests need bubblewrap (Debian package ``bubblewrap``; .ci/run installs
it). Without it they fail, saying so: a sandbox that is never tested is not a
sandbox.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.tools import (
    Guard,
    Protected,
    ToolContext,
    ToolRegistry,
    _sandbox,
    builtin_tools,
    discover_external_tools,
    sandbox_available,
    sandbox_problem,
    wrap,
)
from protocol.paths import resolve_paths

from .helpers import call, run

SECRET = "sk-test-SANDBOX-SECRET-0123456789"


@pytest.fixture(autouse=True)
def bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.fail(
            "bubblewrap is not installed: the sandbox tests need it "
            "(apt-get install bubblewrap; .ci/run does it)"
        )
    assert sandbox_available(), f"bubblewrap cannot run here: {sandbox_problem()}"


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry(builtin_tools(bash_timeout=20.0, max_output=8000))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def outside() -> Iterator[Path]:
    # not under /tmp: the sandbox's /tmp is its own, so a folder there would
    # be missing rather than read-only (or hidden by the private /tmp rather
    # than by what is under test)
    path = Path(tempfile.mkdtemp(prefix="ikigai-sbx-", dir="/var/tmp"))
    (path / "readme.txt").write_text("readable\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def sandboxed(cwd: Path, mode: str = "workdir", **kw: object) -> ToolContext:
    return ToolContext(agent_uuid="sbx-1", cwd=cwd, sandbox=mode, **kw)  # type: ignore[arg-type]


def live_with(marker: str) -> list[int]:
    """Live processes (zombies excepted) whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rfind(")") + 2] not in "ZX":
            found.append(int(entry))
    return found


# ------------------------------------------------------------------ the filesystem


async def test_writes_only_in_the_working_directory(reg, work, outside):
    marker = f"ikigai-sbx-{uuid.uuid4().hex}"
    command = (
        "echo in > inside.txt; cat inside.txt; "
        f"cat {outside}/readme.txt; "
        f"echo out > {outside}/written.txt || echo REFUSED; "
        f"echo t > /tmp/{marker} && ls /tmp/{marker}"
    )
    result = await run(reg, sandboxed(work), "bash", command=command)
    assert not result.is_error, result.content
    assert (work / "inside.txt").read_text() == "in\n"
    assert not (outside / "written.txt").exists()
    assert "Read-only file system" in result.content and "REFUSED" in result.content
    assert "readable" in result.content  # read-only, not hidden
    # /tmp is private: the file was there for the command, not on the host
    assert result.content.rstrip().endswith(marker)
    assert not os.path.exists(f"/tmp/{marker}")  # noqa: ASYNC240


async def test_mode_none_runs_unconfined_as_before(reg, work, outside):
    result = await run(
        reg, ToolContext(agent_uuid="a", cwd=work), "bash", command=f"echo out > {outside}/w.txt"
    )
    assert (result.content, result.is_error) == ("(no output)", False)
    assert (outside / "w.txt").read_text() == "out\n"
    assert wrap(["bash", "-c", "x"], cwd=work, mode="none", network=False) == ["bash", "-c", "x"]


async def test_the_daemons_process_is_out_of_sight(reg, work):
    result = await run(
        reg, sandboxed(work), "bash", command=f"cat /proc/{os.getpid()}/environ || echo GONE"
    )
    assert "GONE" in result.content and "PATH=" not in result.content


async def test_strict_hides_home_and_run_but_not_the_work_in_it(reg, outside, monkeypatch):
    home = outside / "home"  # not under /tmp, which is private in any sandbox
    project = home / "project"
    project.mkdir(parents=True)
    (home / ".netrc").write_text(SECRET)
    (project / "main.c").write_text("int main;\n")
    monkeypatch.setenv("HOME", str(home))
    command = f'cat {home}/.netrc; cat main.c; echo x > out.txt; echo "run:$(ls -A /run | wc -l)"'
    result = await run(reg, sandboxed(project, "strict"), "bash", command=command)
    assert SECRET not in result.content
    assert "No such file or directory" in result.content
    assert "int main;" in result.content and "run:0" in result.content
    assert (project / "out.txt").read_text() == "x\n"
    # workdir mode leaves the home readable (only ikigai's own files are hidden)
    result = await run(reg, sandboxed(project), "bash", command=f"cat {home}/.netrc")
    assert result.content == SECRET


# ------------------------------------------------------------------ the daemon's secrets


def xdg_home(base: Path) -> tuple[Path, Guard]:
    """A user home laid out as the daemon finds it (no IKIGAI_HOME): the
    credentials in ~/.config/ikigai, guarded as the daemon guards them."""
    home = base / "user"
    paths = resolve_paths({"HOME": str(home)})
    paths.credentials_file.parent.mkdir(parents=True)
    paths.credentials_file.write_text(f'{{"openai": "{SECRET}"}}')
    (paths.credentials_file.parent / "config.json").write_text("{}")
    return home, Guard([Protected(paths.credentials_file)])


@pytest.mark.parametrize("mode", ["workdir", "strict"])
async def test_credentials_cannot_be_read_from_a_project_in_the_home(reg, outside, mode):
    home, guard = xdg_home(outside)
    project = home / "project"
    project.mkdir()
    ctx = sandboxed(project, mode, guard=guard)
    # umount: root in the sandbox (the daemon run as root) has no capability to undo the hiding
    command = (
        "umount ~/.config/ikigai/credentials.json ~/.config/ikigai 2>/dev/null; "
        "cat ~/.config/ikigai/credentials.json; ls -A ~/.config/ikigai; echo END"
    )
    result = await run(reg, ctx, "bash", command=command.replace("~", str(home)))
    assert SECRET not in result.content
    assert "config.json" not in result.content  # ikigai's folder is empty in there
    assert result.content.endswith("END")


async def test_credentials_hidden_when_the_agent_works_in_or_above_ikigais_folder(reg, outside):
    home, guard = xdg_home(outside)
    folder = home / ".config" / "ikigai"
    (folder / "notes.txt").write_text("mine\n")
    # working in the home: ikigai's folder inside the working directory stays hidden
    result = await run(
        reg,
        sandboxed(home, guard=guard),
        "bash",
        command="cat .config/ikigai/credentials.json; ls -A .config/ikigai; echo x > w.txt",
    )
    assert SECRET not in result.content and "notes.txt" not in result.content
    assert (home / "w.txt").exists()
    # working in ikigai's folder itself: the folder is the agent's, the key file is not
    result = await run(
        reg,
        sandboxed(folder, guard=guard),
        "bash",
        command="cat credentials.json; cat notes.txt; echo x > credentials.json; echo rc=$?",
    )
    assert SECRET not in result.content
    assert "mine" in result.content and "rc=1" in result.content
    assert SECRET in (folder / "credentials.json").read_text()


async def test_an_external_tool_runs_from_a_hidden_folder_and_sees_no_key(tmp_path, outside):
    home, guard = xdg_home(outside)
    tools = home / ".config" / "ikigai" / "tools"
    tools.mkdir()
    exe = tools / "peek"
    exe.write_text(
        "#!/bin/bash\n"
        'if [ "$1" = --schema ]; then echo \'{"name": "peek"}\'; exit; fi\n'
        f"key=$(cat {guard.files[0].path} 2>/dev/null)\n"
        'echo "{\\"content\\": \\"key=[$key]\\"}"\n'
    )
    exe.chmod(0o755)
    specs, warnings = await discover_external_tools([tools])
    assert warnings == []
    reg = ToolRegistry(specs, guard=guard)
    project = tmp_path / "project"
    project.mkdir()
    result = await reg.run(call("peek"), sandboxed(project, "strict"))
    assert (result.content, result.is_error) == ("key=[]", False)
    # unconfined, the same tool reads the key: the sandbox made the difference
    result = await reg.run(call("peek"), ToolContext(agent_uuid="a", cwd=project))
    assert SECRET in result.content


# ------------------------------------------------------------------ the network


@pytest.mark.parametrize("network", [False, True])
async def test_network_only_when_granted(reg, work, nursery, network):
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listener.socket.getsockname()[1]
    accepted: list[bool] = []

    async def serve() -> None:
        async with listener:
            while True:
                stream = await listener.accept()
                accepted.append(True)
                await stream.aclose()

    nursery.start_soon(serve)
    command = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo REFUSED"
    with trio.fail_after(15):
        result = await run(reg, sandboxed(work, network=network), "bash", command=command)
        if network:
            while not accepted:  # noqa: ASYNC110 - the server's accept may come a moment later
                await trio.sleep(0.01)
    assert result.content == ("CONNECTED" if network else "REFUSED")
    assert bool(accepted) == network
    nursery.cancel_scope.cancel()


# ------------------------------------------------------------------ ending the processes


async def _cancel_while_running(reg: ToolRegistry, work: Path, delay: float | None) -> None:
    """Start a command that leaves a child behind, cancel it ``delay`` s later
    (None: once the child runs), and check nothing it started survives."""
    marker = f"ikigai{uuid.uuid4().hex}"
    command = f"bash -c 'sleep 300; : {marker}' & sleep 300"
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(run, reg, sandboxed(work), "bash", command=command))
            if delay is None:
                # bwrap, the shell and its child all carry the marker
                while len(live_with(marker)) < 3:  # noqa: ASYNC110 - polling /proc
                    await trio.sleep(0.01)
            else:
                await trio.sleep(delay)
            nursery.cancel_scope.cancel()
    for _ in range(100):  # the kill is immediate; /proc may lag a little
        if not live_with(marker):
            break
        await trio.sleep(0.02)
    survivors = live_with(marker)
    for pid in survivors:  # a failing run leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    assert survivors == [], "processes of the cancelled command survived"


async def test_background_children_die_on_cancel(reg, work):
    await _cancel_while_running(reg, work, None)


async def test_a_cancel_while_bwrap_starts_leaves_nothing_behind(reg, work):
    # the first milliseconds are when bwrap is setting the sandbox up
    for i in range(12):
        await _cancel_while_running(reg, work, i * 0.004)


async def test_background_children_die_on_timeout(reg, work):
    marker = f"ikigai{uuid.uuid4().hex}"
    command = f"bash -c 'sleep 300; : {marker}' & echo started; sleep 300"
    with trio.fail_after(15):
        result = await run(reg, sandboxed(work), "bash", command=command, timeout=0.5)
    for _ in range(100):
        if not live_with(marker):
            break
        await trio.sleep(0.02)
    assert result.is_error and result.content.startswith("started")
    assert "timed out after 0.5 s" in result.content
    assert live_with(marker) == []


# ------------------------------------------------------------------ no bubblewrap


@pytest.fixture
def broken_bwrap(tmp_path, monkeypatch) -> Iterator[None]:
    """A bwrap that cannot create namespaces, first on PATH (bash still found)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    _sandbox._forget()
    yield
    monkeypatch.undo()
    _sandbox._forget()


async def test_without_a_working_sandbox_the_command_is_not_run(reg, work, broken_bwrap):
    result = await run(reg, sandboxed(work), "bash", command="touch ran.txt")
    assert result.is_error
    assert result.content.startswith("the sandbox is not available (")
    assert "No permissions to create new namespace" in result.content
    assert result.content.endswith("): not run")
    assert not (work / "ran.txt").exists()
    # the same command without a sandbox runs: the refusal is the sandbox's
    await run(reg, ToolContext(agent_uuid="a", cwd=work), "bash", command="touch ran.txt")
    assert (work / "ran.txt").exists()


def test_missing_bwrap_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    _sandbox._forget()
    try:
        assert sandbox_available() is False
        assert "bwrap is not on PATH" in (sandbox_problem() or "")
        assert "bubblewrap" in (sandbox_problem() or "")
    finally:
        monkeypatch.undo()
        _sandbox._forget()
    assert sandbox_available() is True


# ------------------------------------------------------------------ hostile input


@settings(max_examples=200, deadline=None)
@given(
    argv=st.lists(st.text(st.characters(blacklist_characters="\0")), min_size=1, max_size=6),
    mode=st.sampled_from(["workdir", "strict"]),
    network=st.booleans(),
)
def test_the_command_is_never_read_as_bwrap_options(argv, mode, network):
    wrapped = wrap(argv, cwd=Path("/var/tmp"), mode=mode, network=network)
    assert wrapped[-len(argv) :] == argv
    assert wrapped[-len(argv) - 1] == "--"
    assert ("--unshare-net" in wrapped[: -len(argv)]) is not network
    assert wrapped[1:3] == ["--die-with-parent", "--unshare-pid"]
