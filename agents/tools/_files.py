"""file_read, file_write and file_edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._api import ToolContext, ToolOutput, ToolSpec
from ._fs import (
    ToolFailure,
    atomic_write,
    failures_as_errors,
    in_thread,
    in_thread_to_end,
    looks_binary,
    resolve,
    show,
)
from ._guard import Look
from ._text import plural

__all__ = ["file_edit_tool", "file_read_tool", "file_write_tool"]

DEFAULT_LINES = 2000
LINE_CHARS = 2000


def _check_file(path: Path, shown: str) -> None:
    if not path.exists():
        raise ToolFailure(f"file not found: {shown}")
    if path.is_dir():
        raise ToolFailure(f"{shown} is a folder, not a file (use glob to list it)")
    if not path.is_file():
        raise ToolFailure(f"{shown} is not a regular file (a device, socket or pipe)")


# ---------------------------------------------------------------- file_read


def _read_lines(
    look: Look, path: Path, shown: str, offset: int, limit: int, budget: int
) -> ToolOutput:
    look.check(path, shown)
    _check_file(path, shown)
    out: list[str] = []
    used = 0
    total = 0
    last = offset - 1  # the last line shown
    budget_hit = False
    with open(path, "rb") as f:
        look.check_opened(f.fileno(), shown)  # the path may have changed since the check
        head = f.read(8192)
        if looks_binary(head):
            size = path.stat().st_size
            raise ToolFailure(
                f"{shown} is a binary file ({size} bytes); file_read shows text files only"
            )
        f.seek(0)
        for raw in f:
            total += 1
            if total < offset or total >= offset + limit or budget_hit:
                continue
            line = raw.decode("utf-8", errors="replace").rstrip("\n").removesuffix("\r")
            if len(line) > LINE_CHARS:
                line = (
                    line[:LINE_CHARS] + f"... [line cut, {len(line) - LINE_CHARS} more characters]"
                )
            numbered = f"{total:6}\t{line}"
            if out and used + len(numbered) + 1 > budget:
                budget_hit = True
                continue
            out.append(numbered)
            used += len(numbered) + 1
            last = total
    if total == 0:
        return ToolOutput(f"({shown} is empty)")
    if offset > total:
        raise ToolFailure(
            f"offset {offset} is past the end of {shown}, which has {plural(total, 'line')}"
        )
    text = "\n".join(out)
    if last < total:
        why = "output limit reached; " if budget_hit else ""
        text += f"\n[{why}showed lines {offset}-{last} of {total}; read on with offset={last + 1}]"
    return ToolOutput(text)


def file_read_tool(*, max_output: int = 64 * 1024) -> ToolSpec:
    budget = max(1024, max_output - 256)

    @failures_as_errors
    async def file_read(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = resolve(ctx, args["path"])
        offset = int(args.get("offset", 1))
        limit = int(args.get("limit", DEFAULT_LINES))
        shown = show(ctx, path)
        guard = ctx.files
        return await in_thread(
            lambda _stop: _read_lines(guard.look(), path, shown, offset, limit, budget)
        )

    return ToolSpec(
        name="file_read",
        description=(
            "Read a text file. Lines come numbered like `cat -n` (number, tab, text); "
            f"at most {DEFAULT_LINES} lines unless 'limit' says otherwise, and a note tells "
            "where to read on. Relative paths are from the agent's working folder. "
            "Binary files are refused."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "The file to read."},
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The first line to show, counting from 1 (default 1).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": f"How many lines to show (default {DEFAULT_LINES}).",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        handler=file_read,
        timeout=60.0,
        max_output=max_output,
    )


# ---------------------------------------------------------------- file_write


def file_write_tool() -> ToolSpec:
    @failures_as_errors
    async def file_write(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = resolve(ctx, args["path"])
        data = args["content"].encode("utf-8")
        shown = show(ctx, path)
        guard = ctx.writable_files

        def write() -> bool:
            guard.check(path, shown, "write")
            return atomic_write(path, data, shown)

        existed = await in_thread_to_end(write)
        verb = "replaced" if existed else "created"
        return ToolOutput(f"wrote {plural(len(data), 'byte')} to {shown} ({verb})")

    return ToolSpec(
        name="file_write",
        description=(
            "Write a whole file (UTF-8), creating missing parent folders and replacing "
            "any existing file atomically. For a change inside an existing file, "
            "prefer file_edit."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "The file to write."},
                "content": {"type": "string", "description": "The complete new content."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        handler=file_write,
        timeout=60.0,
    )


# ---------------------------------------------------------------- file_edit


def _edit(look: Look, path: Path, shown: str, old: str, new: str, replace_all: bool) -> int:
    look.check(path, shown)
    _check_file(path, shown)
    with open(path, "rb") as f:
        look.check_opened(f.fileno(), shown)
        raw = f.read()
    if looks_binary(raw):
        raise ToolFailure(f"{shown} is a binary file; file_edit changes text files only")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolFailure(f"{shown} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    count = text.count(old)
    if count == 0:
        raise ToolFailure(
            f"old_string was not found in {shown}; it must match the file exactly, "
            "whitespace and indentation included (read the file first)"
        )
    if count > 1 and not replace_all:
        raise ToolFailure(
            f"old_string occurs {count} times in {shown}; add surrounding context to make "
            "it unique, or set replace_all to true to replace every occurrence"
        )
    atomic_write(path, text.replace(old, new).encode("utf-8"), shown)
    return count


def file_edit_tool() -> ToolSpec:
    @failures_as_errors
    async def file_edit(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = resolve(ctx, args["path"])
        old: str = args["old_string"]
        new: str = args["new_string"]
        replace_all = bool(args.get("replace_all", False))
        shown = show(ctx, path)
        if old == new:
            raise ToolFailure("old_string and new_string are the same; nothing to change")
        guard = ctx.writable_files
        count = await in_thread_to_end(
            lambda: _edit(guard.look(), path, shown, old, new, replace_all)
        )
        return ToolOutput(f"replaced {plural(count, 'occurrence')} in {shown}")

    return ToolSpec(
        name="file_edit",
        description=(
            "Replace an exact string in a text file. old_string must appear exactly once "
            "(include enough surrounding lines to make it unique) unless replace_all is "
            "true, which replaces every occurrence. Whitespace and indentation must match "
            "the file exactly; line numbers from file_read are not part of the file."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "The file to edit."},
                "old_string": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The exact text to replace.",
                },
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence (default false).",
                },
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": False,
        },
        handler=file_edit,
        timeout=60.0,
    )
