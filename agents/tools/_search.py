"""glob and grep."""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from pathlib import Path
from typing import Any

from ._api import ToolContext, ToolOutput, ToolSpec
from ._fs import SKIP_DIRS, ToolFailure, failures_as_errors, in_thread, looks_binary, resolve, show
from ._guard import Look, refusal
from ._text import plural

__all__ = ["glob_tool", "grep_tool"]

GLOB_LIMIT = 500  # paths listed
GREP_LIMIT = 250  # matching lines listed
GREP_LINE_CHARS = 300  # characters of a matching line shown
GREP_MAX_FILE = 10 * 1024 * 1024  # bigger files are skipped (and counted)


def _folder(ctx: ToolContext, path: str | None) -> tuple[Path, str]:
    base = resolve(ctx, path or ".")
    shown = show(ctx, base) if path else "."
    if not base.exists():
        raise ToolFailure(f"not found: {shown}")
    return base, shown


# ---------------------------------------------------------------- glob


def _left_out(ctx: ToolContext, refused: list[tuple[Path, str]]) -> list[str]:
    """Notes for the protected files a search passed over (named: the model
    should know why a file it expected is missing)."""
    notes = [
        f"[left out {show(ctx, p)}, which {why}; tools may not read it]" for p, why in refused[:5]
    ]
    if len(refused) > 5:
        notes.append(f"[and {len(refused) - 5} more such files]")
    return notes


def _protected(look: Look, path: Path, st: os.stat_result | None) -> str | None:
    """The reason ``path`` (found by a search; ``st`` its status through any
    link) is refused. Only links and /proc need the full path check: an
    ordinary file is known by its (device, inode)."""
    if st is not None:
        why = look.reason_of(st)
        if why is not None:
            return why
    if path.is_symlink() or path.parts[1:2] == ("proc",):
        return look.reason(path)
    return None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _glob(
    ctx: ToolContext, look: Look, base: Path, shown: str, pattern: str, stop: threading.Event
) -> str:
    look.check(base, shown)
    if not base.is_dir():
        raise ToolFailure(f"{shown} is not a folder")
    if Path(pattern).is_absolute():
        raise ToolFailure("pattern must be relative; give the folder to search as 'path'")
    # skipped folders are skipped unless the pattern names them
    skip = {d for d in SKIP_DIRS if d not in pattern}
    found: list[tuple[float, str, Path]] = []
    refused: list[tuple[Path, str]] = []
    try:
        for p in base.glob(pattern):
            if stop.is_set():
                break
            rel = p.relative_to(base).parts
            if any(part in skip for part in rel[:-1]) or (rel and rel[-1] in skip):
                continue
            try:
                mtime = p.lstat().st_mtime
            except OSError:
                continue
            try:
                st: os.stat_result | None = p.stat()
            except OSError:
                st = None
            why = _protected(look, p, st)
            if why is not None:
                refused.append((p, why))
                continue
            found.append((mtime, str(p), p))
    except ValueError as exc:  # e.g. "Invalid pattern: '**' can only be an entire path component"
        raise ToolFailure(f"invalid glob pattern {pattern!r}: {exc}") from None
    notes = _left_out(ctx, refused)
    if not found:
        return "\n".join([f"no paths match {pattern!r} in {shown}", *notes])
    found.sort(key=lambda t: (-t[0], t[1]))
    lines = [show(ctx, p) + ("/" if p.is_dir() else "") for _, _, p in found[:GLOB_LIMIT]]
    if len(found) > GLOB_LIMIT:
        lines.append(
            f"[showing the {GLOB_LIMIT} most recently modified of {len(found)} matches; "
            "narrow the pattern or the path]"
        )
    return "\n".join(lines + notes)


def glob_tool() -> ToolSpec:
    @failures_as_errors
    async def glob(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        base, shown = _folder(ctx, args.get("path"))
        pattern: str = args["pattern"]
        guard = ctx.files
        return ToolOutput(
            await in_thread(lambda stop: _glob(ctx, guard.look(), base, shown, pattern, stop))
        )

    return ToolSpec(
        name="glob",
        description=(
            "Find files and folders by name with a glob pattern ('*.py', 'src/**/*.ts': "
            "'**' spans folders). Results are sorted by modification time, newest first "
            f"(folders end with '/'), at most {GLOB_LIMIT}. .git, node_modules, .venv and "
            "cache folders are left out unless the pattern names them."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "The glob pattern."},
                "path": {
                    "type": "string",
                    "description": "The folder to search (default: the working folder).",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        handler=glob,
        timeout=60.0,
    )


# ---------------------------------------------------------------- grep


def expand_braces(pattern: str) -> list[str]:
    """'*.{py,md}' -> ['*.py', '*.md'] (nested braces work; unbalanced ones are literal)."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    parts: list[str] = []
    last = start + 1
    for i in range(start, len(pattern)):
        c = pattern[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(pattern[last:i])
                head, tail = pattern[:start], pattern[i + 1 :]
                out: list[str] = []
                for part in parts:
                    out.extend(expand_braces(head + part + tail))
                return out
        elif c == "," and depth == 1:
            parts.append(pattern[last:i])
            last = i + 1
    return [pattern]


def _file_filter(glob: str | None) -> Any:
    if not glob:
        return lambda rel, name: True
    patterns = expand_braces(glob)

    def matches(rel: str, name: str) -> bool:
        for pat in patterns:
            if "/" in pat:
                if fnmatch.fnmatchcase(rel, pat) or (
                    pat.startswith("**/") and fnmatch.fnmatchcase(rel, pat[3:])
                ):
                    return True
            elif fnmatch.fnmatchcase(name, pat):
                return True
        return False

    return matches


def _grep(
    ctx: ToolContext,
    look: Look,
    base: Path,
    shown: str,
    regex: re.Pattern[str],
    glob: str | None,
    stop: threading.Event,
) -> str:
    look.check(base, shown)
    wanted = _file_filter(glob)
    lines: list[str] = []
    more = False
    big = 0
    refused: list[tuple[Path, str]] = []
    # a search of a folder stays in it: a link inside that points out of it is
    # not followed, or a grep the policy allows inside the working directory
    # would read ~/.ssh through `link -> ~/.ssh/id_rsa`
    root = os.path.realpath(base) if base.is_dir() else None
    escaped: list[Path] = []

    def files() -> Any:
        if base.is_file():
            yield base
            return
        for root, dirs, names in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                path = Path(root, name)
                if wanted(path.relative_to(base).as_posix(), name):
                    yield path

    for path in files():
        if stop.is_set() or more:
            break
        try:
            if not path.is_file():
                continue
            if root is not None and path.is_symlink() and not _under(os.path.realpath(path), root):
                escaped.append(path)
                continue
            if path.stat().st_size > GREP_MAX_FILE:
                big += 1
                continue
            with open(path, "rb") as f:
                why = _protected(look, path, os.fstat(f.fileno()))
                if why is not None:
                    if path == base:
                        raise ToolFailure(refusal(shown, why))
                    refused.append((path, why))
                    continue
                if looks_binary(f.read(8192)):
                    continue
                f.seek(0)
                shown_file = show(ctx, path)
                for n, raw in enumerate(f, 1):
                    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                    if regex.search(text):
                        if len(lines) >= GREP_LIMIT:
                            more = True
                            break
                        if len(text) > GREP_LINE_CHARS:
                            text = text[:GREP_LINE_CHARS] + "..."
                        lines.append(f"{shown_file}:{n}:{text}")
        except OSError:
            continue
    notes = _left_out(ctx, refused)
    if escaped:
        links = ", ".join(show(ctx, p) for p in escaped[:5])
        more_links = f" and {len(escaped) - 5} more" if len(escaped) > 5 else ""
        notes.append(f"[not followed: {links}{more_links}, links out of {shown}]")
    if more:
        notes.append(f"[showing the first {GREP_LIMIT} matching lines; narrow the search]")
    if big:
        notes.append(f"[skipped {plural(big, 'file')} over {GREP_MAX_FILE // (1024 * 1024)} MiB]")
    if not lines:
        among = f" (files matching {glob!r})" if glob else ""
        return "\n".join([f"no matches for {regex.pattern!r} in {shown}{among}", *notes])
    return "\n".join(lines + notes)


def grep_tool() -> ToolSpec:
    @failures_as_errors
    async def grep(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern: str = args["pattern"]
        flags = re.IGNORECASE if args.get("ignore_case") else 0
        try:
            regex = re.compile(pattern, flags)
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            raise ToolFailure(f"invalid regex {pattern!r}: {exc.msg}{where}") from None
        base, shown = _folder(ctx, args.get("path"))
        glob = args.get("glob")
        guard = ctx.files
        return ToolOutput(
            await in_thread(lambda stop: _grep(ctx, guard.look(), base, shown, regex, glob, stop))
        )

    return ToolSpec(
        name="grep",
        description=(
            "Search file contents with a Python regular expression, line by line. Prints "
            "'path:line:text' for each matching line, at most "
            f"{GREP_LIMIT}. 'path' is a folder (searched recursively) or a file; 'glob' "
            "keeps only files whose name matches it ('*.py', '*.{ts,tsx}', 'src/**/*.c'). "
            ".git, node_modules, .venv, cache folders and binary files are skipped."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A Python regular expression (re module syntax).",
                },
                "path": {
                    "type": "string",
                    "description": "Folder or file to search (default: the working folder).",
                },
                "glob": {"type": "string", "description": "Only search files matching this glob."},
                "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        handler=grep,
        timeout=60.0,
    )
