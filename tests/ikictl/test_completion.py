"""Shell completion: generated from the parser; the contrib copies are current."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import IKICTL, ROOT, Daemon

CONTRIB = ROOT / "contrib" / "completions"


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_contrib_files_match_the_generator(shell: str) -> None:
    out = subprocess.run([*IKICTL, "completion", shell], capture_output=True, text=True, check=True).stdout
    assert (CONTRIB / f"ikictl.{shell}").read_text() == out, f"regenerate: ikictl completion {shell} > contrib/completions/ikictl.{shell}"


def _complete(words: list[str], env: dict[str, str]) -> list[str]:
    script = (
        f"source {CONTRIB / 'ikictl.bash'}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        '_ikictl; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, check=True)
    return r.stdout.split()


def test_bash_completes_commands_options_and_agents(daemon: Daemon) -> None:
    env = {**daemon.env, "PATH": f"{Path(IKICTL[0]).parent}{os.pathsep}{os.environ['PATH']}"}
    assert _complete(["ikictl", "hi"], env) == ["history"]
    assert set(_complete(["ikictl", "daemon", ""], env)) >= {"start", "stop", "logs"}
    assert "--no-thinking" in _complete(["ikictl", "send", "--no-t"], env)
    daemon.ikictl("new", "--name", "completable")
    assert "completable" in _complete(["ikictl", "send", "comp"], env)
    assert _complete(["ikictl", "completion", "z"], env) == ["zsh"]


def test_zsh_script_parses() -> None:
    # scripts/test and .ci/run install zsh (Debian package); a missing zsh fails
    # here rather than skipping, unless IKIGAI_TEST_ZSH=skip says so explicitly
    if shutil.which("zsh") is None:
        if os.environ.get("IKIGAI_TEST_ZSH") == "skip":
            pytest.skip("zsh is not installed and IKIGAI_TEST_ZSH=skip")
        pytest.fail("zsh is not installed: apt-get install zsh, or set IKIGAI_TEST_ZSH=skip")
    subprocess.run(["zsh", "-n", str(CONTRIB / "ikictl.zsh")], check=True)
