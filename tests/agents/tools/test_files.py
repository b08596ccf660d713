from __future__ import annotations

import os
import stat

from agents.tools import ToolContext, ToolRegistry, builtin_tools

from .helpers import run


def numbered(first: int, lines: list[str]) -> str:
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, first))


# ---------------------------------------------------------------- file_read


async def test_read_numbers_lines_like_cat_n(builtins, ctx, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\r\nthree")
    result = await run(builtins, ctx, "file_read", path="a.txt")
    assert not result.is_error
    assert result.content == numbered(1, ["one", "two", "three"])


async def test_read_absolute_path(builtins, ctx, tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    result = await run(builtins, ctx, "file_read", path=str(tmp_path / "a.txt"))
    assert result.content == numbered(1, ["x"])


async def test_read_offset_and_limit(builtins, ctx, tmp_path):
    (tmp_path / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await run(builtins, ctx, "file_read", path="a.txt", offset=4, limit=3)
    assert result.content == (
        numbered(4, ["line 4", "line 5", "line 6"])
        + "\n[showed lines 4-6 of 10; read on with offset=7]"
    )
    tail = await run(builtins, ctx, "file_read", path="a.txt", offset=9)
    assert tail.content == numbered(9, ["line 9", "line 10"])


async def test_read_offset_past_the_end(builtins, ctx, tmp_path):
    (tmp_path / "a.txt").write_text("1\n2\n")
    result = await run(builtins, ctx, "file_read", path="a.txt", offset=5)
    assert result.is_error
    assert result.content == "offset 5 is past the end of a.txt, which has 2 lines"


async def test_read_default_limit_and_output_budget(ctx, tmp_path):
    (tmp_path / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 3001)))
    reg = ToolRegistry(builtin_tools())
    result = await run(reg, ctx, "file_read", path="big.txt")
    assert result.content.endswith("\n[showed lines 1-2000 of 3000; read on with offset=2001]")
    small = ToolRegistry(builtin_tools(max_output=2000))
    result = await run(small, ctx, "file_read", path="big.txt")
    assert len(result.content) <= 2000
    last = int(result.content.splitlines()[-2].split("\t")[0])
    assert result.content.endswith(
        f"\n[output limit reached; showed lines 1-{last} of 3000; read on with offset={last + 1}]"
    )


async def test_read_cuts_very_long_lines(builtins, ctx, tmp_path):
    (tmp_path / "long.txt").write_text("x" * 2500 + "\n")
    result = await run(builtins, ctx, "file_read", path="long.txt")
    assert result.content == f"     1\t{'x' * 2000}... [line cut, 500 more characters]"


async def test_read_missing_file_names_the_path(builtins, ctx):
    result = await run(builtins, ctx, "file_read", path="nope/missing.txt")
    assert result.is_error
    assert result.content == "file not found: nope/missing.txt"


async def test_read_folder_and_empty_file(builtins, ctx, tmp_path):
    (tmp_path / "d").mkdir()
    result = await run(builtins, ctx, "file_read", path="d")
    assert result.is_error
    assert result.content == "d is a folder, not a file (use glob to list it)"
    (tmp_path / "empty").write_bytes(b"")
    result = await run(builtins, ctx, "file_read", path="empty")
    assert (result.content, result.is_error) == ("(empty is empty)", False)


async def test_read_refuses_pipes_and_devices(builtins, ctx, tmp_path):
    os.mkfifo(tmp_path / "fifo")
    result = await run(builtins, ctx, "file_read", path="fifo")
    assert (result.content, result.is_error) == (
        "fifo is not a regular file (a device, socket or pipe)",
        True,
    )
    result = await run(builtins, ctx, "file_edit", path="/dev/null", old_string="a", new_string="b")
    assert result.content == "/dev/null is not a regular file (a device, socket or pipe)"


async def test_read_refuses_binary_files(builtins, ctx, tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = await run(builtins, ctx, "file_read", path="blob.bin")
    assert result.is_error
    assert result.content == "blob.bin is a binary file (16 bytes); file_read shows text files only"


async def test_read_shows_invalid_utf8_with_replacement(builtins, ctx, tmp_path):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    result = await run(builtins, ctx, "file_read", path="latin.txt")
    assert result.content == numbered(1, ["caf\ufffd"])


async def test_read_validates_offset(builtins, ctx, tmp_path):
    result = await run(builtins, ctx, "file_read", path="a", offset=0)
    assert result.is_error
    assert result.content == (
        "invalid arguments for tool 'file_read': argument 'offset': must be at least 1, got 0"
    )


# ---------------------------------------------------------------- file_write


async def test_write_creates_parents_and_reports_bytes(builtins, ctx, tmp_path):
    result = await run(builtins, ctx, "file_write", path="a/b/c.txt", content="héllo\n")
    assert not result.is_error
    assert result.content == "wrote 7 bytes to a/b/c.txt (created)"
    assert (tmp_path / "a/b/c.txt").read_text(encoding="utf-8") == "héllo\n"
    assert [p.name for p in (tmp_path / "a/b").iterdir()] == ["c.txt"]  # no temp file left
    mode = stat.S_IMODE((tmp_path / "a/b/c.txt").stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


async def test_write_replaces_keeping_mode_and_symlinks(builtins, ctx, tmp_path):
    target = tmp_path / "script.sh"
    target.write_text("old")
    target.chmod(0o755)
    (tmp_path / "link.sh").symlink_to(target)
    result = await run(builtins, ctx, "file_write", path="link.sh", content="new")
    assert result.content == "wrote 3 bytes to link.sh (replaced)"
    assert (tmp_path / "link.sh").is_symlink()
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


async def test_write_to_a_folder_is_an_error(builtins, ctx, tmp_path):
    (tmp_path / "d").mkdir()
    result = await run(builtins, ctx, "file_write", path="d", content="x")
    assert result.is_error
    assert result.content == "d is a folder, not a file"


async def test_write_empty_content(builtins, ctx, tmp_path):
    result = await run(builtins, ctx, "file_write", path="e", content="")
    assert result.content == "wrote 0 bytes to e (created)"
    assert (tmp_path / "e").read_bytes() == b""


# ---------------------------------------------------------------- file_edit


async def test_edit_replaces_a_unique_string(builtins, ctx, tmp_path):
    (tmp_path / "f.py").write_bytes(b"def f():\r\n    return 1\r\n")
    result = await run(
        builtins, ctx, "file_edit", path="f.py", old_string="return 1", new_string="return 2"
    )
    assert (result.content, result.is_error) == ("replaced 1 occurrence in f.py", False)
    assert (tmp_path / "f.py").read_bytes() == b"def f():\r\n    return 2\r\n"


async def test_edit_not_found(builtins, ctx, tmp_path):
    (tmp_path / "f.py").write_text("abc")
    result = await run(builtins, ctx, "file_edit", path="f.py", old_string="xyz", new_string="q")
    assert result.is_error
    assert result.content.startswith("old_string was not found in f.py;")
    assert (tmp_path / "f.py").read_text() == "abc"


async def test_edit_ambiguous_needs_context_or_replace_all(builtins, ctx, tmp_path):
    (tmp_path / "f.txt").write_text("a x b x c x")
    result = await run(builtins, ctx, "file_edit", path="f.txt", old_string="x", new_string="y")
    assert result.is_error
    assert result.content == (
        "old_string occurs 3 times in f.txt; add surrounding context to make it unique, "
        "or set replace_all to true to replace every occurrence"
    )
    assert (tmp_path / "f.txt").read_text() == "a x b x c x"
    result = await run(
        builtins, ctx, "file_edit", path="f.txt", old_string="x", new_string="y", replace_all=True
    )
    assert (result.content, result.is_error) == ("replaced 3 occurrences in f.txt", False)
    assert (tmp_path / "f.txt").read_text() == "a y b y c y"


async def test_edit_missing_file_binary_file_and_no_op(builtins, ctx, tmp_path):
    result = await run(builtins, ctx, "file_edit", path="nope", old_string="a", new_string="b")
    assert (result.content, result.is_error) == ("file not found: nope", True)
    (tmp_path / "b.bin").write_bytes(b"a\x00b")
    result = await run(builtins, ctx, "file_edit", path="b.bin", old_string="a", new_string="b")
    assert (result.content, result.is_error) == (
        "b.bin is a binary file; file_edit changes text files only",
        True,
    )
    result = await run(builtins, ctx, "file_edit", path="b.bin", old_string="a", new_string="a")
    assert result.content == "old_string and new_string are the same; nothing to change"


async def test_edit_rejects_empty_old_string_and_bad_types(builtins, ctx):
    result = await run(builtins, ctx, "file_edit", path="f", old_string="", new_string="x")
    assert result.content == (
        "invalid arguments for tool 'file_edit': argument 'old_string': must not be empty"
    )
    result = await run(
        builtins, ctx, "file_edit", path="f", old_string="a", new_string="b", replace_all="yes"
    )
    assert result.content == (
        "invalid arguments for tool 'file_edit': argument 'replace_all': expected boolean, got string"
    )


async def test_paths_outside_cwd_are_shown_absolute(builtins, tmp_path):
    inner = tmp_path / "work"
    inner.mkdir()
    ctx = ToolContext(agent_uuid="a", cwd=inner)
    result = await run(builtins, ctx, "file_write", path="../out.txt", content="z")
    assert result.content == f"wrote 1 byte to {tmp_path}/out.txt (created)"
    assert (tmp_path / "out.txt").read_text() == "z"
