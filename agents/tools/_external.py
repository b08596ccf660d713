"""External tools: executables that describe themselves and speak JSON.

An external tool is any executable file in one of the tool folders. Asked
``<exe> --schema`` it prints one JSON object::

    {"name": "weather", "description": "...", "parameters": {JSON Schema},
     "timeout": 30}

``name`` defaults to the file name up to its first dot; ``parameters`` to
an object with no properties; ``timeout`` (seconds, optional) to the
discovery's ``timeout``. Run as a tool, it gets the arguments as a JSON object on
stdin, runs in the agent's working folder with IKIGAI_AGENT_UUID and the
agent's extra environment set, and prints one JSON value on stdout: either
``{"content": "...", "is_error": false}`` or any other JSON value, whose text
is then the content. A non-zero exit or output that is not JSON is an error
result carrying the tail of stderr.

Whatever a tool prints is hostile input: output that is not UTF-8, not JSON,
or nested deeper than 100 levels is an error result saying so; a lone
surrogate (``"\\ud800"``) becomes U+FFFD. Tools run, and answer --schema, with
the environment of ``ToolEnv`` (no API keys), never a copy of the daemon's.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import trio

from ._api import ToolContext, ToolOutput, ToolSpec
from ._env import ToolEnv
from ._process import Completed, run_captured
from ._sandbox import confine
from ._text import clean, clip, seconds

__all__ = ["discover_external_tools", "external_tool"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_STDERR_TAIL = 4096
_DISCOVERY_CONCURRENCY = 8
MAX_DEPTH = 100  # levels of JSON nesting accepted from a tool


class _Refused(Exception):
    pass


class _BadJson(Exception):
    """What is wrong with a tool's JSON, for a message naming the tool."""


def _parse_json(raw: bytes) -> Any:
    """A tool's JSON output, with every lone surrogate replaced by U+FFFD.
    Raises _BadJson naming what is wrong."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadJson(f"output that is not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise _BadJson(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise _BadJson(f"invalid JSON ({clip(str(exc), 300)})") from None
    return _cleaned(value, 0)


def _cleaned(value: Any, depth: int) -> Any:
    """``depth``: the arrays and objects around ``value``. Recursion is bounded:
    it stops at MAX_DEPTH, far below Python's limit."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list | dict) and depth >= MAX_DEPTH:
        raise _BadJson(f"JSON nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, list):
        return [_cleaned(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {clean(k): _cleaned(v, depth + 1) for k, v in value.items()}
    return value


def _list_executables(folders: Sequence[Path]) -> tuple[list[Path], list[str]]:
    found: list[Path] = []
    warnings: list[str] = []
    for folder in folders:
        folder = Path(folder).expanduser()
        if not folder.exists():
            continue  # a tool folder that was never created is no news
        if not folder.is_dir():
            warnings.append(f"{folder}: not a folder; skipped")
            continue
        try:
            entries = sorted(folder.iterdir(), key=lambda p: p.name)
        except OSError as exc:
            warnings.append(f"{folder}: cannot list it: {exc.strerror or exc}")
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.name.endswith("~"):
                continue
            if entry.is_file() and os.access(entry, os.X_OK):
                found.append(entry)
    return found, warnings


def _exit_text(done: Completed) -> str:
    code = done.returncode
    if code is not None and code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _stderr_tail(done: Completed) -> str:
    if done.stderr is None:
        return ""
    text = done.stderr.text().strip()
    if not text:
        return ""
    cut = "[...]\n" if done.stderr.overflowed else ""
    return f"\nstderr:\n{cut}{text}"


async def _describe(
    exe: Path,
    *,
    tool_timeout: float,
    schema_timeout: float,
    schema_limit: int,
    tool_env: ToolEnv | None = None,
) -> dict[str, Any]:
    """Ask ``exe --schema``; return the fields of a ToolSpec or raise _Refused."""
    default_name = exe.name.split(".", 1)[0] or exe.name
    try:
        done = await run_captured(
            [str(exe), "--schema"],
            cwd=exe.parent,
            env=(tool_env or ToolEnv()).build(default_name),
            merge_stderr=False,
            limit=schema_limit,
            stderr_limit=1024,
            time_limit=schema_timeout,
            grace=1.0,
        )
    except OSError as exc:
        raise _Refused(f"cannot run it: {exc.strerror or exc}") from None
    if done.timed_out:
        raise _Refused(f"--schema did not answer within {seconds(schema_timeout)} s")
    if done.returncode != 0:
        raise _Refused(f"--schema {_exit_text(done)}{_stderr_tail(done)}")
    if done.stdout.overflowed:
        raise _Refused(f"--schema printed more than {schema_limit} bytes")
    try:
        schema = _parse_json(done.stdout.bytes())
    except _BadJson as exc:
        what = str(exc)
        if what.startswith("invalid JSON "):
            raise _Refused(
                f"--schema did not print JSON {what.removeprefix('invalid JSON ')}"
            ) from None
        raise _Refused(f"--schema printed {what}") from None
    if not isinstance(schema, dict):
        raise _Refused("--schema must print a JSON object")

    name = schema.get("name", default_name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise _Refused(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
    description = schema.get("description", "")
    if not isinstance(description, str):
        raise _Refused("'description' must be a string")
    params = schema.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, dict) or params.get("type", "object") != "object":
        raise _Refused("'parameters' must be a JSON Schema of type object")
    params = {"type": "object", **params}
    limit = schema.get("timeout", tool_timeout)
    if not isinstance(limit, int | float) or isinstance(limit, bool) or limit <= 0:
        raise _Refused("'timeout' must be a positive number of seconds")
    return {"name": name, "description": description, "parameters": params, "timeout": limit}


def external_tool(
    exe: Path,
    *,
    name: str,
    description: str,
    parameters: dict[str, Any],
    timeout: float = 120.0,
    max_output: int = 64 * 1024,
) -> ToolSpec:
    """The ToolSpec running executable ``exe`` with JSON on stdin and stdout."""
    stdout_limit = 4 * max_output + 64 * 1024  # JSON escaping makes text longer

    async def run_external(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        env = ctx.process_env(name)
        # the tool's own folder stays readable in a sandbox that hides what
        # holds it (a home in "strict")
        argv = await confine([str(exe)], ctx, expose=[exe])
        if isinstance(argv, ToolOutput):
            return argv
        # the registry applies the timeout; a cancel ends the process group
        done = await run_captured(
            argv,
            cwd=ctx.cwd,
            env=env,
            # the model's arguments may hold lone surrogates; the tool gets UTF-8
            stdin=clean(json.dumps(args, ensure_ascii=False)).encode("utf-8"),
            merge_stderr=False,
            limit=stdout_limit,
            stderr_limit=_STDERR_TAIL,
        )
        if done.returncode != 0:
            text = f"tool {name} {_exit_text(done)}{_stderr_tail(done)}"
            if done.stderr is not None and not done.stderr.total:
                out = done.stdout.text().strip()
                if out:
                    text += f"\nstdout:\n{clip(out, 2000)}"
            return ToolOutput(text, is_error=True)
        if done.stdout.overflowed:
            return ToolOutput(
                f"tool {name} printed more than {stdout_limit} bytes; it must print one JSON value",
                is_error=True,
            )
        raw = done.stdout.bytes()
        try:
            value = _parse_json(raw)
        except _BadJson as exc:
            shown = clip(raw.decode("utf-8", errors="replace").strip(), 500)
            what = f"{exc}: {shown!r}" if shown else "nothing"
            return ToolOutput(f"tool {name} printed {what}{_stderr_tail(done)}", is_error=True)
        return _as_output(value)

    return ToolSpec(
        name=name,
        description=description,
        parameters=parameters,
        handler=run_external,
        timeout=timeout,
        max_output=max_output,
    )


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _as_output(value: Any) -> ToolOutput:
    if isinstance(value, dict) and "content" in value:
        return ToolOutput(_text_of(value["content"]), is_error=bool(value.get("is_error", False)))
    return ToolOutput(_text_of(value))


async def discover_external_tools(
    folders: Iterable[Path],
    *,
    timeout: float = 120.0,  # noqa: ASYNC109 - the tools' run time limit, not this call's
    max_output: int = 64 * 1024,
    schema_timeout: float = 5.0,
    schema_limit: int = 256 * 1024,
    reserved: Iterable[str] = (),
    env: ToolEnv | None = None,
) -> tuple[list[ToolSpec], list[str]]:
    """Find the external tools in ``folders``: every executable file (hidden
    files excepted) is asked ``--schema``, all at once, each within
    ``schema_timeout`` seconds and ``schema_limit`` bytes. A tool may run for
    ``timeout`` seconds unless its schema gives its own ``timeout``.

    Returns the specs (in folder order, then by file name) and warnings, one
    per file that could not describe itself or whose name is taken - by an
    earlier file or by one of ``reserved`` (e.g. the built-in tools). A bad
    tool is skipped; it never breaks discovery. Folders that do not exist are
    skipped quietly. ``env`` builds the environment of ``--schema`` (the
    running tools get theirs from the ToolContext, as every tool does).
    """
    exes, warnings = await trio.to_thread.run_sync(_list_executables, [Path(f) for f in folders])
    described: list[dict[str, Any] | str | None] = [None] * len(exes)
    limiter = trio.CapacityLimiter(_DISCOVERY_CONCURRENCY)

    async def ask(i: int, exe: Path) -> None:
        async with limiter:
            try:
                described[i] = await _describe(
                    exe,
                    tool_timeout=timeout,
                    schema_timeout=schema_timeout,
                    schema_limit=schema_limit,
                    tool_env=env,
                )
            except _Refused as exc:
                described[i] = f"{exe}: {exc}; skipped"
            except Exception as exc:
                described[i] = f"{exe}: {type(exc).__name__}: {exc}; skipped"

    async with trio.open_nursery() as nursery:
        for i, exe in enumerate(exes):
            nursery.start_soon(ask, i, exe)

    specs: list[ToolSpec] = []
    taken: dict[str, str] = {name: "a built-in tool" for name in reserved}
    for exe, info in zip(exes, described, strict=True):
        if isinstance(info, str) or info is None:
            warnings.append(info or f"{exe}: not described; skipped")
            continue
        name = info["name"]
        if name in taken:
            warnings.append(f"{exe}: the name {name!r} is taken by {taken[name]}; skipped")
            continue
        taken[name] = str(exe)
        specs.append(external_tool(exe, max_output=max_output, **info))
    return specs, warnings
