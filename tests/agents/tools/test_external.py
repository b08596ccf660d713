from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from agents.tools import ToolContext, ToolRegistry, discover_external_tools
from providers.types import Tool

from .helpers import call, run
from .test_bash import group_members, running

PY = f"#!{sys.executable}\n"


def script(folder: Path, name: str, body: str, *, python: bool = True, mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    head = PY + "import json, os, sys, time\n" if python else "#!/bin/bash\n"
    path.write_text(head + textwrap.dedent(body))
    path.chmod(mode)
    return path


WEATHER = """
    if sys.argv[1:] == ["--schema"]:
        print(json.dumps({
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }))
        sys.exit(0)
    args = json.load(sys.stdin)
    print(json.dumps({
        "content": f"sunny in {args['city']}; cwd={os.getcwd()}; "
                   f"agent={os.environ['IKIGAI_AGENT_UUID']}; x={os.environ.get('X_EXTRA')}",
        "is_error": False,
    }))
"""

ADD = """
    if sys.argv[1:] == ["--schema"]:
        print(json.dumps({"name": "add", "description": "Add numbers.",
                          "parameters": {"properties": {"n": {"type": "array"}}}}))
        sys.exit(0)
    args = json.load(sys.stdin)
    print(json.dumps({"sum": sum(args["n"]), "count": len(args["n"])}))
"""

SAY = """
    if sys.argv[1:] == ["--schema"]:
        print(json.dumps({"name": "say", "description": "A string result, or a refusal."}))
        sys.exit(0)
    args = json.load(sys.stdin)
    if args.get("refuse"):
        print(json.dumps({"content": "I refuse", "is_error": True}))
    else:
        print(json.dumps("just text"))
"""

FAILER = """
    if sys.argv[1:] == ["--schema"]:
        print(json.dumps({"name": "failer", "description": "Fails."}))
        sys.exit(0)
    sys.stdin.read()
    print("some output")
    print("kaput: the reason", file=sys.stderr)
    sys.exit(4)
"""

BADJSON = """
    if sys.argv[1:] == ["--schema"]:
        print(json.dumps({"name": "badjson", "description": "Prints junk."}))
        sys.exit(0)
    print("oops, not json")
    print("a warning", file=sys.stderr)
"""

# bash, not Python: it starts in milliseconds, so even a loaded machine has written the
# pid file long before the 2 s timeout
HANG = """
    if [ "$1" = --schema ]; then
        echo '{"name": "hang", "description": "Never answers.", "timeout": 2}'
        exit 0
    fi
    sleep 60 &
    echo "$$ $!" > "$PID_FILE"
    wait
"""


@pytest.fixture
async def tools(tmp_path: Path) -> tuple[ToolRegistry, list[str]]:
    folder = tmp_path / "tools"
    script(folder, "weather.py", WEATHER)
    script(folder, "add", ADD)
    script(folder, "say", SAY)
    script(folder, "failer", FAILER)
    script(folder, "badjson", BADJSON)
    script(folder, "hang", HANG, python=False)
    specs, warnings = await discover_external_tools([folder], timeout=10.0)
    return ToolRegistry(specs), warnings


async def test_discovery_finds_the_good_tools(tools):
    reg, warnings = tools
    assert warnings == []
    assert reg.names() == ["add", "badjson", "failer", "hang", "say", "weather"]
    assert reg.definitions()[-1] == Tool(
        name="weather",
        description="The weather in a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    # "type": "object" is filled in; the schema's own timeout wins over the default
    assert reg.get("add").parameters == {"type": "object", "properties": {"n": {"type": "array"}}}
    assert reg.get("hang").timeout == 2.0
    assert reg.get("add").timeout == 10.0


async def test_running_passes_json_on_stdin_in_cwd_with_env(tools, tmp_path):
    reg, _ = tools
    work = tmp_path / "work"
    work.mkdir()
    ctx = ToolContext(agent_uuid="ag-9", cwd=work, env={"X_EXTRA": "yes"})
    result = await run(reg, ctx, "weather", city="Oslo")
    assert (result.content, result.is_error) == (
        f"sunny in Oslo; cwd={work}; agent=ag-9; x=yes",
        False,
    )


async def test_any_json_value_is_the_content(tools, ctx):
    reg, _ = tools
    result = await run(reg, ctx, "add", n=[1, 2, 3])
    assert (result.content, result.is_error) == ('{"sum": 6, "count": 3}', False)
    result = await run(reg, ctx, "say")
    assert (result.content, result.is_error) == ("just text", False)
    result = await run(reg, ctx, "say", refuse=True)
    assert (result.content, result.is_error) == ("I refuse", True)


async def test_arguments_are_validated_before_running(tools, ctx):
    reg, _ = tools
    result = await run(reg, ctx, "weather", city=3)
    assert result.content == (
        "invalid arguments for tool 'weather': argument 'city': expected string, got integer"
    )


async def test_non_zero_exit_is_an_error_with_stderr(tools, ctx):
    reg, _ = tools
    result = await run(reg, ctx, "failer")
    assert result.is_error
    assert result.content == "tool failer exited with code 4\nstderr:\nkaput: the reason"


async def test_invalid_json_is_an_error_with_stderr(tools, ctx):
    reg, _ = tools
    result = await run(reg, ctx, "badjson")
    assert result.is_error
    assert result.content == (
        "tool badjson printed invalid JSON (Expecting value: line 1 column 1 (char 0)): "
        "'oops, not json'\nstderr:\na warning"
    )


async def test_timeout_kills_the_tool_and_its_children(tools, tmp_path):
    reg, _ = tools
    pid_file = tmp_path / "pids"
    ctx = ToolContext(agent_uuid="a", cwd=tmp_path, env={"PID_FILE": str(pid_file)})
    with trio.fail_after(30):
        result = await run(reg, ctx, "hang")
    assert (result.content, result.is_error) == ("tool hang timed out after 2 s", True)
    pid, child = map(int, pid_file.read_text().split())
    assert not running(pid)
    assert not running(child)
    assert group_members(pid) == []


async def test_cancelling_the_caller_kills_the_tool(tools, tmp_path):
    reg, _ = tools
    pid_file = tmp_path / "pids"
    ctx = ToolContext(agent_uuid="a", cwd=tmp_path, env={"PID_FILE": str(pid_file)})

    async def cancel_once_started(scope: trio.CancelScope) -> None:
        # a file appearing has no event to wait on
        while not pid_file.exists() or len(pid_file.read_text().split()) < 2:  # noqa: ASYNC110
            await trio.sleep(0.01)
        scope.cancel()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_once_started, nursery.cancel_scope)
            await reg.run(call("hang"), ctx)
            pytest.fail("not cancelled")
    assert nursery.cancel_scope.cancelled_caught
    pid, child = map(int, pid_file.read_text().split())
    assert not running(pid)
    assert not running(child)


async def test_bad_tools_are_skipped_with_warnings(tmp_path):
    folder = tmp_path / "tools"
    good = script(folder, "good", WEATHER)
    junk = script(folder, "junk", 'echo "not json at all"', python=False)
    fails = script(folder, "fails", "echo broken >&2; exit 2", python=False)
    hangs = script(folder, "hangs", "sleep 60", python=False)
    array = script(folder, "array", "echo '[1, 2]'", python=False)
    badname = script(folder, "badname", """echo '{"name": "has space"}'""", python=False)
    badparams = script(
        folder, "badparams", """echo '{"parameters": {"type": "array"}}'""", python=False
    )
    shadow = script(folder, "shadow", """echo '{"name": "good"}'""", python=False)
    builtin = script(folder, "bash", """echo '{"description": "mine"}'""", python=False)
    script(folder, "plain.txt", "not executable", python=False, mode=0o644)
    script(folder, ".hidden", "exit 1", python=False)
    (folder / "subfolder").mkdir()
    missing = tmp_path / "does-not-exist"

    with trio.fail_after(10):
        specs, warnings = await discover_external_tools(
            [missing, folder], schema_timeout=0.5, reserved=["bash", "file_read"]
        )
    assert [s.name for s in specs] == ["good"]
    assert sorted(warnings) == sorted(
        [
            f"{array}: --schema must print a JSON object; skipped",
            f"{badname}: tool name 'has space' must be 1-64 letters, digits, '_' or '-'; skipped",
            f"{badparams}: 'parameters' must be a JSON Schema of type object; skipped",
            f"{builtin}: the name 'bash' is taken by a built-in tool; skipped",
            f"{fails}: --schema exited with code 2\nstderr:\nbroken; skipped",
            f"{hangs}: --schema did not answer within 0.5 s; skipped",
            f"{junk}: --schema did not print JSON (Expecting value: line 1 column 1 (char 0)); skipped",
            f"{shadow}: the name 'good' is taken by {good}; skipped",
        ]
    )


async def test_schema_output_is_size_limited(tmp_path):
    folder = tmp_path / "tools"
    big = script(folder, "big", "head -c 100000 /dev/zero | tr '\\0' ' '; echo '{}'", python=False)
    specs, warnings = await discover_external_tools([folder], schema_limit=1000)
    assert specs == []
    assert warnings == [f"{big}: --schema printed more than 1000 bytes; skipped"]


async def test_a_file_that_cannot_run_is_a_warning(tmp_path):
    folder = tmp_path / "tools"
    folder.mkdir()
    broken = folder / "broken"
    broken.write_text("#!/no/such/interpreter\n")
    broken.chmod(0o755)
    specs, warnings = await discover_external_tools([folder])
    assert specs == []
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{broken}: cannot run it: ")


async def test_a_file_given_as_folder_is_a_warning(tmp_path):
    not_folder = tmp_path / "file"
    not_folder.write_text("")
    specs, warnings = await discover_external_tools([not_folder])
    assert (specs, warnings) == ([], [f"{not_folder}: not a folder; skipped"])


def test_scripts_use_this_interpreter():
    assert os.access(sys.executable, os.X_OK)
