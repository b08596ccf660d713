"""The README's demo command, run exactly as written: ``./scripts/demo``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.tools import install_command, sandbox_available

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_scripts_demo_runs_offline_and_cleans_up() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IKIGAI_", "ANTHROPIC_", "OPENAI_", "GEMINI_"))}
    r = subprocess.run(["./scripts/demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "the OFFLINE STAND-IN for a real provider" in out
    home = re.search(r"^IKIGAI_HOME=(\S+)", out, re.M).group(1)  # type: ignore[union-attr]
    for line in (
        "$ ikictl daemon start",
        "$ ikictl new --name demo --model claude-sonnet-4-5/med 'What is ikigai, in two sentences?'",
        "thinking: The user asks: What is ikigai, in two sentences?. A short, friendly answer fits.",
        "$ ikictl send demo 'Please run a tool to say hello' &",
        "[tool bash] $ echo hello from a tool",
        "[tool bash ok] hello from a tool",
        "The tool ran and printed: hello from a tool",
        "So far we talked about ikigai, ran a tool that said hello, and I summarised it.",
        "demo: OpenAI gpt-4o / Thinking: none",
        "demo: cancelled the running turn",
        "$ ikictl usage demo --tree",
    ):
        assert line in out.splitlines(), line
    assert re.search(r"^#\d+\s+\S+  interrupted$", out, re.M)
    assert re.search(r"^ikigaid stopped \(pid \d+\)$", out, re.M)
    assert not Path(home).exists()  # cleaned up
    if sandbox_available():  # the tool ran in its sandbox, as for a real user
        assert "unsandboxed" not in out


# ------------------------------------------------------------------ no bubblewrap

# An apt-get that cannot install: it notes its arguments and fails as apt-get does.
_FAILING_APT = '#!/bin/sh\necho "$@" >> "{log}"\necho "E: Unable to locate package bubblewrap" >&2\nexit 100\n'
# An apt-get whose install works: it puts the machine's real bwrap on the PATH.
_WORKING_APT = '#!/bin/sh\necho "$@" >> "{log}"\nln -sf "{bwrap}" "{bin}/bwrap"\n'


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    # not under /tmp: the sandbox has a /tmp of its own, where a PATH folder
    # of the host's /tmp would be missing
    path = Path(tempfile.mkdtemp(prefix="ikigai-demo-bin-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _machine_without_bubblewrap(bin_dir: Path, apt_get: str) -> tuple[dict[str, str], Path]:
    """The demo's environment on this machine as if bubblewrap were not
    installed: PATH is ``bin_dir`` holding a link to every program of the real
    PATH but bwrap (on merged-/usr systems /bin and /usr/bin both hold it, so
    no folder can simply be left out), and ``apt_get`` as apt-get. Returns the
    environment and the file apt-get writes its arguments to."""
    real_bwrap = shutil.which("bwrap")
    assert real_bwrap, "these tests hide bubblewrap, so they need it installed (apt-get install bubblewrap)"
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = bin_dir / entry.name
            if entry.name in ("bwrap", "apt-get") or os.path.lexists(link) or entry.is_dir():
                continue
            if os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    log = bin_dir / "apt-get.log"
    apt = bin_dir / "apt-get"
    apt.write_text(apt_get.format(log=log, bwrap=real_bwrap, bin=bin_dir))
    apt.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IKIGAI_", "ANTHROPIC_", "OPENAI_", "GEMINI_"))}
    env["PATH"] = str(bin_dir)
    assert shutil.which("bwrap", path=env["PATH"]) is None
    return env, log


@pytest.mark.slow
def test_without_bubblewrap_the_demos_tool_still_runs_and_says_why(bin_dir: Path) -> None:
    env, apt_log = _machine_without_bubblewrap(bin_dir, _FAILING_APT)
    r = subprocess.run(["./scripts/demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    for line in (
        "[tool bash] $ echo hello from a tool",
        "[tool bash ok] hello from a tool",
        "The tool ran and printed: hello from a tool",
    ):
        assert line in lines, line + "\n" + r.stdout
    assert "sandbox is not available" not in r.stdout
    why = [line for line in lines if "so this demo runs its tool unsandboxed" in line]
    fix = install_command()  # "sudo apt-get install bubblewrap" on Debian (tests/agents/tools/test_sandbox_install.py)
    assert why == [
        "bubblewrap is not installed, so this demo runs its tool unsandboxed"
        + (f"; install it with: {fix}" if fix else "")
    ]
    if os.geteuid() == 0:  # as root with apt-get, the demo tried to install it first
        assert "install -y" in apt_log.read_text() and "bubblewrap" in apt_log.read_text()
        assert "installing bubblewrap" in r.stderr
    else:
        assert not apt_log.exists()


@pytest.mark.slow
def test_as_root_with_apt_the_demo_installs_bubblewrap_and_runs_sandboxed(bin_dir: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the demo installs bubblewrap only as root (elsewhere it runs unsandboxed, tested above)")
    env, apt_log = _machine_without_bubblewrap(bin_dir, _WORKING_APT)
    r = subprocess.run(["./scripts/demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "install -y" in apt_log.read_text() and "bubblewrap" in apt_log.read_text()
    assert "installing bubblewrap" in r.stderr
    assert "[tool bash ok] hello from a tool" in r.stdout.splitlines(), r.stdout
    assert "unsandboxed" not in r.stdout
