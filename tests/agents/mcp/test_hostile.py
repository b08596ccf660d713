"""A hostile or broken MCP server disturbs nothing else: schemas it cannot
be trusted with are refused, huge answers are cut, junk on stdout is
skipped, an endless line ends the session (not the daemon's memory), and
it never sees the daemon's keys."""

from __future__ import annotations

import json
import os
import resource

import trio
from structlog.testing import capture_logs

from agents.tools.mcp import McpServerSpec
from agents.tools.mcp._results import MAX_TEXT
from providers.secrets import _forget_secrets, register_secret

from .conftest import alive, fake_spec, python_spec


async def test_hostile_schemas_huge_text_junk_and_endless_line(start_hub):
    box = await start_hub({"fake": fake_spec()})
    hub = box.hub
    with trio.fail_after(40):
        tools = {t.name: t for t in await hub.tools("fake")}
        assert "nested more than 32 deep" in (tools["deep"].rejected or "")
        assert "over the 64 KB limit" in (tools["huge"].rejected or "")
        assert tools["echo"].rejected is None
        offered = {s.name for s in await hub.tool_specs(["fake"])}
        assert "fake__echo" in offered
        assert not {"fake__deep", "fake__huge"} & offered

        out = await hub.call("fake", "big", {"size": 10_000_000})
        assert not out.is_error
        assert len(out.content) <= MAX_TEXT + 100 and "characters cut" in out.content

        pid = hub.state("fake").pid
        out = await hub.call("fake", "garbage", {})  # junk lines, then the answer
        assert (out.content, out.is_error) == ("still here", False)
        assert (await hub.call("fake", "echo", {"text": "ok"})).content == "ok"
        assert hub.state("fake").pid == pid

        # 100 MB on one line: read at most 32 MB of it, then drop the session
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = await hub.call("fake", "flood", {"megabytes": 100})
        assert out.is_error and "stopped during the call" in out.content
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
        assert grown_mb < 80, f"reading the long line took {grown_mb:.0f} MB"
        state = await box.wait_for("fake", lambda s: s.state == "ready" and s.pid != pid)
        assert state.restarts == 1 and not alive(pid)
        down = [s for s in box.seen if s.state == "restarting"]
        assert "longer than 32 MB" in (down[0].last_error or "")
        assert (await hub.call("fake", "echo", {"text": "back"})).content == "back"


async def test_server_env_has_no_daemon_keys(start_hub, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak-1234")
    monkeypatch.setenv("IKIGAI_SOMETHING", "daemon-only")
    hub = (await start_hub({"fake": fake_spec(env={"GIVEN": "to-the-server"})})).hub
    with trio.fail_after(20):
        out = await hub.call("fake", "env", {})
    env = json.loads(out.content)
    assert "ANTHROPIC_API_KEY" not in env and "IKIGAI_SOMETHING" not in env
    assert env["GIVEN"] == "to-the-server"
    assert env.get("PATH") == os.environ.get("PATH")
    assert set(env) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "GIVEN"} | {
        k for k in env if k.startswith(("LC_", "PYTHON"))  # set by the interpreter itself
    }


async def test_secrets_stay_out_of_states_and_errors(start_hub):
    secret = "tok-very-secret-value-42"
    register_secret(secret)
    try:
        code = "import os, sys; sys.stderr.write('token=' + os.environ['TOKEN'] + '\\n'); sys.exit(2)"
        box = await start_hub(
            {
                "leaky": python_spec("leaky", code, env={"TOKEN": secret}),
                "web": McpServerSpec(
                    "web",
                    url=f"http://user:{secret}@127.0.0.1:9/mcp?key={secret}",
                    headers={"Authorization": f"Bearer {secret}"},
                ),
            }
        )
        with trio.fail_after(10), capture_logs() as logs:
            out = await box.hub.call("leaky", "x", {})
            assert out.is_error and "token=[REDACTED]" in out.content
        lines = [e["line"] for e in logs if e["event"] == "mcp.stderr" and e["server"] == "leaky"]
        assert lines and set(lines) == {"token=[REDACTED]"}  # its stderr reached the log, scrubbed
        with trio.fail_after(10):
            out = await box.hub.call("web", "x", {})
            assert out.is_error
        texts = [repr(s) for s in box.seen] + [repr(box.hub.states()), out.content]
        assert not any(secret in t or secret[:8] in t for t in texts)
        assert box.hub.state("web").target == "http://127.0.0.1:9/mcp?..."
        # a value of its env, not registered as a secret, is not shown either
        plain = "plain-config-value-77"
        code = "import os, sys; sys.stderr.write(os.environ['V'] + '\\n'); sys.exit(2)"
        box2 = await start_hub({"plain": python_spec("plain", code, env={"V": plain})})
        with trio.fail_after(10):
            out = await box2.hub.call("plain", "x", {})
        assert out.is_error and "[REDACTED]" in out.content and plain[:8] not in out.content
    finally:
        _forget_secrets()
