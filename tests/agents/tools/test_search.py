from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.tools._search import expand_braces

from .helpers import run


def touch(path: Path, text: str = "", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    touch(tmp_path / "old.py", "import os\nprint('Hello')\n", mtime=1_000_000)
    touch(tmp_path / "src/new.py", "def hello():\n    return 'hello world'\n", mtime=3_000_000)
    touch(tmp_path / "src/mid.txt", "hello text\n", mtime=2_000_000)
    touch(tmp_path / "src/deep/x.ts", "const hello = 1;\n", mtime=1_500_000)
    touch(tmp_path / ".git/config.py", "hello = 'git'\n")
    touch(tmp_path / "node_modules/m/index.py", "hello = 'npm'\n")
    touch(tmp_path / ".venv/lib/site.py", "hello = 'venv'\n")
    (tmp_path / "src/blob.bin").write_bytes(b"hello\x00binary")
    return tmp_path


# ---------------------------------------------------------------- glob


async def test_glob_recursive_newest_first_skipping_vendored_folders(builtins, ctx, tree):
    result = await run(builtins, ctx, "glob", pattern="**/*.py")
    assert not result.is_error
    assert result.content == "src/new.py\nold.py"


async def test_glob_in_a_subfolder_marks_folders(builtins, ctx, tree):
    result = await run(builtins, ctx, "glob", pattern="*", path="src")
    assert result.content.splitlines() == sorted(
        ["src/new.py", "src/mid.txt", "src/deep/", "src/blob.bin"],
        key=lambda p: -(tree / p).lstat().st_mtime,
    )
    assert "src/deep/" in result.content.splitlines()


async def test_glob_enters_a_skipped_folder_when_the_pattern_names_it(builtins, ctx, tree):
    result = await run(builtins, ctx, "glob", pattern="node_modules/**/*.py")
    assert result.content == "node_modules/m/index.py"


async def test_glob_no_match_missing_folder_and_absolute_pattern(builtins, ctx, tree):
    result = await run(builtins, ctx, "glob", pattern="*.rs")
    assert (result.content, result.is_error) == ("no paths match '*.rs' in .", False)
    result = await run(builtins, ctx, "glob", pattern="*", path="nope")
    assert (result.content, result.is_error) == ("not found: nope", True)
    result = await run(builtins, ctx, "glob", pattern="/etc/*")
    assert result.is_error
    assert result.content == "pattern must be relative; give the folder to search as 'path'"


async def test_glob_caps_the_count(builtins, ctx, tmp_path):
    for i in range(503):
        touch(tmp_path / f"f{i:03}.txt", mtime=1_000_000 + i)
    result = await run(builtins, ctx, "glob", pattern="*.txt")
    lines = result.content.splitlines()
    assert len(lines) == 501
    assert lines[0] == "f502.txt"
    assert lines[499] == "f003.txt"
    assert lines[500] == (
        "[showing the 500 most recently modified of 503 matches; narrow the pattern or the path]"
    )


# ---------------------------------------------------------------- grep


async def test_grep_prints_path_line_text_skipping_binary_and_vendored(builtins, ctx, tree):
    result = await run(builtins, ctx, "grep", pattern=r"hello\b")
    assert not result.is_error
    # a folder's files by name, then its subfolders
    assert result.content == (
        "src/mid.txt:1:hello text\n"
        "src/new.py:1:def hello():\n"
        "src/new.py:2:    return 'hello world'\n"
        "src/deep/x.ts:1:const hello = 1;"
    )


async def test_grep_ignore_case(builtins, ctx, tree):
    result = await run(builtins, ctx, "grep", pattern="^print\\('hello", ignore_case=True)
    assert result.content == "old.py:2:print('Hello')"


async def test_grep_glob_filter_with_braces_and_folders(builtins, ctx, tree):
    result = await run(builtins, ctx, "grep", pattern="hello", glob="*.{ts,txt}")
    assert result.content == "src/mid.txt:1:hello text\nsrc/deep/x.ts:1:const hello = 1;"
    result = await run(builtins, ctx, "grep", pattern="hello", glob="src/**/*.ts")
    assert result.content == "src/deep/x.ts:1:const hello = 1;"


async def test_grep_in_one_file_and_in_a_subfolder(builtins, ctx, tree):
    result = await run(builtins, ctx, "grep", pattern="return", path="src/new.py")
    assert result.content == "src/new.py:2:    return 'hello world'"
    result = await run(builtins, ctx, "grep", pattern="hello", path="src/deep")
    assert result.content == "src/deep/x.ts:1:const hello = 1;"


async def test_grep_invalid_regex_names_the_error(builtins, ctx, tree):
    result = await run(builtins, ctx, "grep", pattern="foo(bar")
    assert result.is_error
    assert (
        result.content
        == "invalid regex 'foo(bar': missing ), unterminated subpattern at position 3"
    )


async def test_grep_no_match_and_missing_path(builtins, ctx, tree):
    result = await run(builtins, ctx, "grep", pattern="zebra", glob="*.py")
    assert (result.content, result.is_error) == (
        "no matches for 'zebra' in . (files matching '*.py')",
        False,
    )
    result = await run(builtins, ctx, "grep", pattern="x", path="gone")
    assert (result.content, result.is_error) == ("not found: gone", True)


async def test_grep_caps_matches_and_long_lines(builtins, ctx, tmp_path):
    touch(tmp_path / "many.txt", "".join(f"match {i}\n" for i in range(1, 301)))
    touch(tmp_path / "wide.txt", "match " + "w" * 400 + "\n")
    result = await run(builtins, ctx, "grep", pattern="match", path="many.txt")
    lines = result.content.splitlines()
    assert len(lines) == 251
    assert lines[0] == "many.txt:1:match 1"
    assert lines[249] == "many.txt:250:match 250"
    assert lines[250] == "[showing the first 250 matching lines; narrow the search]"
    result = await run(builtins, ctx, "grep", pattern="match", path="wide.txt")
    assert result.content == "wide.txt:1:match " + "w" * 294 + "..."


def test_expand_braces():
    assert expand_braces("*.py") == ["*.py"]
    assert expand_braces("*.{py,md}") == ["*.py", "*.md"]
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    assert expand_braces("x{a,{b,c}}") == ["xa", "xb", "xc"]
    assert expand_braces("odd{") == ["odd{"]


async def test_grep_does_not_follow_a_link_out_of_the_folder(builtins, tmp_path):
    from agents.tools import ToolContext

    work, outside = tmp_path / "work", tmp_path / "outside"
    touch(work / "a.txt", "secret-word inside\n")
    touch(outside / "id_rsa", "secret-word outside\n")
    (work / "key").symlink_to(outside / "id_rsa")
    (work / "same").symlink_to(work / "a.txt")  # a link that stays inside is followed
    ctx = ToolContext(agent_uuid="agent-1", cwd=work)
    result = await run(builtins, ctx, "grep", pattern="secret-word")
    assert not result.is_error
    assert "secret-word outside" not in result.content
    lines = result.content.splitlines()
    assert "a.txt:1:secret-word inside" in lines and "same:1:secret-word inside" in lines
    assert "[not followed: key, links out of .]" in lines
