"""Without bubblewrap, the error a new user sees names how to get it, for
their system, in the one line ikictl shows for a tool result. These tests do
not need bubblewrap: they take it off PATH, or name the system outright."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.tools import ToolContext, ToolRegistry, _sandbox, builtin_tools, install_command
from ikictl.stream import EventPrinter

from .helpers import run

DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nID=debian\n'
UBUNTU = 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n'
MINT = 'NAME="Linux Mint"\nID=linuxmint\nID_LIKE="ubuntu debian"\n'
FEDORA = "NAME=\"Fedora Linux\"\nID=fedora\nVERSION_ID=40\n"
ROCKY = 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
ARCH = 'NAME="Arch Linux"\nID=arch\n'
MANJARO = 'NAME="Manjaro Linux"\nID="manjaro"\nID_LIKE=arch\n'
ALPINE = 'NAME="Alpine Linux"\nID=alpine\n'

COMMANDS = {"apt-get install bubblewrap", "dnf install bubblewrap", "pacman -S bubblewrap"}


@pytest.mark.parametrize(
    ("os_release", "command"),
    [
        (DEBIAN, "apt-get install bubblewrap"),
        (UBUNTU, "apt-get install bubblewrap"),
        (MINT, "apt-get install bubblewrap"),
        (FEDORA, "dnf install bubblewrap"),
        (ROCKY, "dnf install bubblewrap"),
        (ARCH, "pacman -S bubblewrap"),
        (MANJARO, "pacman -S bubblewrap"),
    ],
)
def test_the_install_command_fits_the_system(os_release: str, command: str) -> None:
    assert install_command(os_release, platform="linux", root=False) == f"sudo {command}"
    assert install_command(os_release, platform="linux", root=True) == command


def test_no_command_where_none_is_known() -> None:
    assert install_command(ALPINE, platform="linux", root=False) is None
    assert install_command("", platform="linux", root=False) is None
    # bubblewrap is Linux-only: a Mac has no package to install, whatever it says
    assert install_command(DEBIAN, platform="darwin", root=False) is None


@settings(max_examples=300, deadline=None)
@given(text=st.text(), root=st.booleans())
def test_any_os_release_text_gives_a_known_command_or_none(text: str, root: bool) -> None:
    got = install_command(text, platform="linux", root=root)
    assert got is None or got.removeprefix("sudo ") in COMMANDS
    assert got is None or got.startswith("sudo ") is not root


def rendered(content: str) -> str:
    """The line ``ikictl send`` prints for a failed tool call of this text."""
    out = io.StringIO()
    EventPrinter(out).event({"event": {"type": "tool_finished", "name": "bash", "content": content, "is_error": True}})
    return out.getvalue().strip()


@pytest.mark.parametrize(
    ("os_release", "platform", "root", "fix"),
    [
        (DEBIAN, "linux", False, "sudo apt-get install bubblewrap"),
        (DEBIAN, "linux", True, "apt-get install bubblewrap"),
        (FEDORA, "linux", False, "sudo dnf install bubblewrap"),
        (ARCH, "linux", False, "sudo pacman -S bubblewrap"),
        (ALPINE, "linux", False, "install the bubblewrap package"),
        ("", "darwin", False, "bubblewrap is Linux-only: no sandbox on macOS"),
    ],
)
def test_ikictls_line_for_a_missing_bwrap_names_the_fix_whole(
    os_release: str, platform: str, root: bool, fix: str
) -> None:
    problem = _sandbox._not_installed(os_release, platform=platform, root=root)
    line = rendered(f"the sandbox is not available ({problem}): not run")
    assert line == f"[tool bash error] the sandbox is not available ({problem}): not run"
    assert fix in line  # not cut off: ikictl shows one line, of 100 characters at most


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This machine with an empty PATH: no bwrap to be found."""
    monkeypatch.setenv("PATH", str(tmp_path))
    _sandbox._forget()
    yield
    monkeypatch.undo()
    _sandbox._forget()


async def test_the_tool_error_without_bwrap_says_how_to_install_it_here(tmp_path: Path, no_bwrap: None) -> None:
    registry = ToolRegistry(builtin_tools(bash_timeout=10.0, max_output=4000))
    ctx = ToolContext(agent_uuid="a", cwd=tmp_path, sandbox="workdir")
    result = await run(registry, ctx, "bash", command="touch ran.txt")
    assert result.is_error and not (tmp_path / "ran.txt").exists()
    problem = _sandbox._not_installed()  # for this machine
    assert result.content == f"the sandbox is not available ({problem}): not run"
    here = install_command()
    assert problem == (f"bwrap is not on PATH; run: {here}" if here else _sandbox._not_installed("", platform=sys.platform))
    assert rendered(result.content) == f"[tool bash error] {result.content}"
