"""The file tools refuse the daemon's credentials file, whatever path leads to
it: the file itself, a symbolic link, a hard link, a ``../`` path,
/proc/self/root/..., /proc/self/fd/N; and the daemon's own /proc entries
(issue 13, item 8). The real registry and the real built-in tools."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents.tools import Guard, Protected, ToolContext, ToolRegistry, builtin_tools

from .helpers import run

KEY = "sk-ant-secret-file-key-0123456789abcdef"
REFUSED = "holds ikigai's API keys; tools may not read it"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home" / ".config" / "ikigai"
    home.mkdir(parents=True)
    creds = home / "credentials.json"
    creds.write_text(json.dumps({"anthropic": KEY}) + "\n")
    creds.chmod(0o600)
    (home / "config.json").write_text('{"default_model": "gpt-4o"}\n')
    return home


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def reg(home: Path) -> ToolRegistry:
    # what the daemon does: the registry gets the credentials path from it
    return ToolRegistry(builtin_tools(), guard=Guard([Protected(home / "credentials.json")]))


@pytest.fixture
def ctx(work: Path) -> ToolContext:
    return ToolContext(agent_uuid="a", cwd=work)


def paths_to_the_file(home: Path, work: Path) -> dict[str, str]:
    """Every way of naming the credentials file (links are made in ``work``)."""
    creds = home / "credentials.json"
    (work / "link.json").symlink_to(creds)
    (work / "link-to-link").symlink_to(work / "link.json")
    os.link(creds, work / "hard.json")
    (work / "dirlink").symlink_to(home)
    rel = os.path.relpath(creds, work)
    assert rel.startswith("../")
    return {
        "absolute": str(creds),
        "symlink": "link.json",
        "symlink to a symlink": "link-to-link",
        "hard link": "hard.json",
        "folder symlink": "dirlink/credentials.json",
        "../ path": rel,
        "dotted absolute": f"{home}/../ikigai/./credentials.json",
        "/proc/self/root": f"/proc/self/root{creds}",
        "/proc/self/cwd": f"/proc/self/cwd/{os.path.relpath(creds)}",  # this process's cwd
    }


def shown(work: Path, path: str) -> str:
    """The path as the tools name it: normalized, relative to the working folder when inside."""
    full = os.path.normpath(work / path)
    return os.path.relpath(full, work) if full.startswith(f"{work}/") else full


async def assert_refused(reg: ToolRegistry, ctx: ToolContext, tool: str, **args: object) -> str:
    result = await run(reg, ctx, tool, **args)
    assert result.is_error, (tool, args, result.content)
    assert KEY not in result.content
    return result.content


async def test_file_read_refuses_every_path_to_the_credentials(reg, ctx, home, work):
    for how, path in paths_to_the_file(home, work).items():
        content = await assert_refused(reg, ctx, "file_read", path=path)
        assert content == f"{shown(work, path)} {REFUSED}", how


async def test_file_read_of_an_open_descriptor_is_refused(reg, ctx, home):
    fd = os.open(home / "credentials.json", os.O_RDONLY)
    try:
        path = f"/proc/self/fd/{fd}"
        assert await assert_refused(reg, ctx, "file_read", path=path) == f"{path} {REFUSED}"
    finally:
        os.close(fd)


async def test_file_edit_and_file_write_refuse_it_and_leave_it_alone(reg, ctx, home, work):
    before = (home / "credentials.json").read_bytes()
    for how, path in paths_to_the_file(home, work).items():
        content = await assert_refused(
            reg, ctx, "file_edit", path=path, old_string="anthropic", new_string="x"
        )
        assert content == f"{shown(work, path)} {REFUSED}", how
        content = await assert_refused(reg, ctx, "file_write", path=path, content="{}")
        assert content == f"{shown(work, path)} holds ikigai's API keys; tools may not write it"
    assert (home / "credentials.json").read_bytes() == before
    assert (work / "link.json").is_symlink()


async def test_grep_refuses_the_file_and_leaves_it_out_of_folders(reg, ctx, home, work):
    paths = paths_to_the_file(home, work)
    for how, path in paths.items():
        content = await assert_refused(reg, ctx, "grep", pattern="sk-", path=path)
        assert content == f"{shown(work, path)} {REFUSED}", how
    # searching the folders that hold it (and the links to it) never shows the key
    for folder in (str(home), str(work), str(home.parent.parent)):
        result = await run(reg, ctx, "grep", pattern="anthropic|sk-|gpt", path=folder)
        assert not result.is_error
        assert KEY not in result.content
        assert "config.json:1:" in result.content or folder == str(work)
        assert "which holds ikigai's API keys; tools may not read it]" in result.content


async def test_glob_leaves_it_out_and_refuses_it_as_a_base(reg, ctx, home, work):
    paths_to_the_file(home, work)
    result = await run(reg, ctx, "glob", pattern="*.json", path=str(home))
    assert result.content.splitlines() == [
        str(home / "config.json"),
        f"[left out {home / 'credentials.json'}, which {REFUSED}]",
    ]
    listed = await run(reg, ctx, "glob", pattern="*")
    assert "hard.json" not in listed.content.split("\n")
    assert "[left out hard.json, which" in listed.content
    content = await assert_refused(reg, ctx, "glob", pattern="*", path="link.json")
    assert content == f"link.json {REFUSED}"


async def test_other_files_next_to_it_stay_readable(reg, ctx, home):
    result = await run(reg, ctx, "file_read", path=str(home / "config.json"))
    assert (result.content, result.is_error) == ('     1\t{"default_model": "gpt-4o"}', False)
    edited = await run(
        reg, ctx, "file_edit", path=str(home / "config.json"), old_string="gpt-4o", new_string="o3"
    )
    assert not edited.is_error


async def test_a_credentials_file_created_after_start_is_refused(tmp_path, ctx):
    later = tmp_path / "later" / "credentials.json"
    reg = ToolRegistry(builtin_tools(), guard=Guard([Protected(later)]))
    created = await run(reg, ctx, "file_write", path=str(later), content="{}")
    assert created.is_error and not later.exists()
    later.parent.mkdir()
    later.write_text(json.dumps({"openai": KEY}))
    (ctx.cwd / "hard").unlink(missing_ok=True)
    os.link(later, ctx.cwd / "hard")
    assert await assert_refused(reg, ctx, "file_read", path="hard") == f"hard {REFUSED}"


async def test_the_daemons_own_proc_entries_are_refused(ctx):
    # the daemon's environment and memory hold the keys; the file tools run in it
    reg = ToolRegistry(builtin_tools())
    own = "belongs to the daemon's own process, whose memory and environment hold ikigai's API keys"
    tid = os.listdir(f"/proc/{os.getpid()}/task")[-1]
    for path in (
        "/proc/self/environ",
        f"/proc/{os.getpid()}/environ",
        "/proc/thread-self/environ",
        f"/proc/{tid}/environ",
        "/proc/self/root/proc/self/mem",
    ):
        content = await assert_refused(reg, ctx, "file_read", path=path)
        assert content == f"{path} {own}; tools may not read it"
    assert (await assert_refused(reg, ctx, "grep", pattern="KEY", path="/proc/self")).startswith(
        "/proc/self belongs to the daemon's own process"
    )
    # another process's /proc entries are not the daemon's
    other = await run(reg, ctx, "file_read", path="/proc/1/comm")
    assert "daemon's own process" not in other.content
