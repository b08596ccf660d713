"""Tools run with an environment built from an allowlist: no provider key, no
IKIGAI_* variable of the daemon's, no secret-looking name, no configured key
value under any name; plus what the config passes or sets (issue 13, item 8).

Real processes throughout: bash and an external tool print their environment.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import trio

from agents.tools import (
    EnvRule,
    ToolContext,
    ToolEnv,
    ToolRegistry,
    builtin_tools,
    discover_external_tools,
)
from daemon.config import parse_config, tool_env
from providers.catalog import default_catalog
from tests.daemon.conftest import KEY, DaemonProcess, write_home
from tests.daemon.rpc import connect
from tests.fakes.script import Reply, ToolCall

from .helpers import run
from .test_external import script

# Every provider key variable the shipped catalog knows, and the ones the issue names.
KEY_NAMES = sorted(
    {v for p in default_catalog().providers.values() for v in p.key_env}
    | {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "XAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY",
        "GROQ_API_KEY",
        "MISTRAL_API_KEY",
    }
)
PROVIDER_KEYS = {name: f"sk-{name.lower().replace('_', '-')}-0123456789abcdef" for name in KEY_NAMES}
OURS = {
    "IKIGAI_HOME": "/srv/ikigai-home-dir",
    "IKIGAI_DB_URL": "postgresql://ikigai:dbpassword123@db/ikigai",
    "IKIGAI_CONFIG": "/srv/ikigai-config.json",
}
SECRET_LOOKING = {
    "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value-0123456789",
    "DB_PASSWORD": "hunter2hunter2",
    "MY_CREDENTIALS": "creds-value-0123456789",
    "SESSION_COOKIE": "cookie-value-0123456789",
}
PLAIN = {"HOME": "/home/tester", "LANG": "C.UTF-8", "LC_TIME": "C", "TZ": "UTC", "USER": "tester"}


async def bash_env(reg: ToolRegistry, ctx: ToolContext) -> dict[str, str]:
    """The environment bash sees (`env -0`, base64: values may hold newlines)."""
    result = await run(reg, ctx, "bash", command="env -0 | base64 -w0")
    assert not result.is_error, result.content
    out = {}
    for entry in base64.b64decode(result.content).decode().split("\0"):
        name, sep, value = entry.partition("=")
        if sep:
            out[name] = value
    return out


def assert_clean(env: dict[str, str], keys: dict[str, str]) -> None:
    for name, value in {**PROVIDER_KEYS, **OURS, **SECRET_LOOKING, **keys}.items():
        assert name not in env, name
        assert not any(value in v for v in env.values()), name


@pytest.fixture
def daemon_environ(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The daemon's environment (os.environ) holding every kind of secret."""
    for name, value in {**PROVIDER_KEYS, **OURS, **SECRET_LOOKING, **PLAIN}.items():
        monkeypatch.setenv(name, value)
    return dict(os.environ)


async def test_bash_sees_no_key_no_ikigai_variable_and_no_secret_name(daemon_environ, tmp_path):
    # the old code copied os.environ: `env` printed every key
    reg = ToolRegistry(builtin_tools())
    env = await bash_env(reg, ToolContext(agent_uuid="a-1", cwd=tmp_path))
    assert_clean(env, {})
    assert env["PATH"] == daemon_environ["PATH"]
    for name, value in PLAIN.items():
        assert env[name] == value
    assert env["IKIGAI_AGENT_UUID"] == "a-1"  # the tool's own, not the daemon's


async def test_the_daemons_environment_is_the_source(tmp_path):
    source = {
        "PATH": os.environ["PATH"],
        "HOME": "/home/src",
        "XDG_CONFIG_HOME": "/home/src/.config",
        "OPENAI_API_KEY": PROVIDER_KEYS["OPENAI_API_KEY"],
        "IKIGAI_HOME": "/x",
        "RANDOM_SETTING": "not on the allowlist",
    }
    reg = ToolRegistry(builtin_tools(), env=ToolEnv(source=source))
    env = await bash_env(reg, ToolContext(agent_uuid="a", cwd=tmp_path))
    assert {k: v for k, v in env.items() if k in source} == {
        "PATH": source["PATH"],
        "HOME": "/home/src",
        "XDG_CONFIG_HOME": "/home/src/.config",
    }


async def test_a_key_value_under_an_innocent_name_is_dropped(tmp_path):
    key = "sk-ant-credentials-file-key-0123456789"
    source = {
        "PATH": os.environ["PATH"],
        "HOME": "/home/me",
        "LC_PAPER": key,  # on the allowlist by name
        "EDITOR": f"vim --token={key}",  # the key inside a longer value
        "MY_SETTING": key,  # passed by the config
        "LANG": "C.UTF-8",
    }
    tool_env_ = ToolEnv(
        rule=EnvRule(passed=("MY_SETTING",), values={"SET_BY_CONFIG": key}),
        secrets=lambda: [key, "short"],  # "short": under 8 characters, never matched
        source=source,
    )
    ctx = ToolContext(agent_uuid="a", cwd=tmp_path, env={"FROM_CTX": key})
    env = await bash_env(ToolRegistry(builtin_tools(), env=tool_env_), ctx)
    assert not any(key in v for v in env.values())
    for name in ("LC_PAPER", "EDITOR", "MY_SETTING", "SET_BY_CONFIG", "FROM_CTX"):
        assert name not in env
    assert env["LANG"] == "C.UTF-8" and env["HOME"] == "/home/me"


async def test_the_secrets_are_asked_at_every_process_start(tmp_path):
    keys: list[str] = []
    source = {"PATH": os.environ["PATH"], "LC_NAME": "rotated-key-0123456789"}
    reg = ToolRegistry(builtin_tools(), env=ToolEnv(secrets=lambda: keys, source=source))
    ctx = ToolContext(agent_uuid="a", cwd=tmp_path)
    assert (await bash_env(reg, ctx))["LC_NAME"] == "rotated-key-0123456789"
    keys.append("rotated-key-0123456789")  # a reload registered it as a key
    assert "LC_NAME" not in await bash_env(reg, ctx)


async def test_config_pass_and_set_for_every_tool_and_per_tool(daemon_environ, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "dev")
    monkeypatch.setenv("WEATHER_API_KEY", "weather-key-0123456789")
    config = parse_config(
        json.dumps(
            {
                "tools": {
                    "env": {
                        "pass": ["AWS_PROFILE", "NOT_SET_ANYWHERE"],
                        "set": {"PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"},
                        "per_tool": {
                            "bash": {"set": {"PAGER": "less", "ONLY_BASH": "1"}},
                            "weather": {"pass": ["WEATHER_API_KEY"]},
                        },
                    }
                }
            }
        )
    )
    reg = ToolRegistry(builtin_tools(), env=tool_env(config, dict(os.environ)))
    env = await bash_env(reg, ToolContext(agent_uuid="a", cwd=tmp_path))
    assert env["AWS_PROFILE"] == "dev"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert (env["PAGER"], env["ONLY_BASH"]) == ("less", "1")  # per_tool after the common rule
    assert "NOT_SET_ANYWHERE" not in env
    assert "WEATHER_API_KEY" not in env  # passed to the weather tool only
    assert_clean(env, {})


def test_passing_a_provider_key_or_ikigai_variable_by_hand_still_drops_it(daemon_environ):
    rule = EnvRule(passed=("OPENAI_API_KEY", "IKIGAI_HOME", "GITHUB_TOKEN"))
    env = ToolEnv(rule=rule, key_names=frozenset({"MYBOX_KEY"})).build(
        "bash", {"MYBOX_KEY": "custom-provider-key-123"}
    )
    assert "OPENAI_API_KEY" not in env and "IKIGAI_HOME" not in env and "MYBOX_KEY" not in env
    # a secret-looking name passed on purpose is the user's decision
    assert env["GITHUB_TOKEN"] == SECRET_LOOKING["GITHUB_TOKEN"]


ENV_TOOL = """
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:] == ["--schema"]:
        with open(os.path.join(here, "schema-env.json"), "w") as f:
            json.dump(dict(os.environ), f)
        print(json.dumps({"name": "printenv", "description": "Its environment."}))
        sys.exit(0)
    sys.stdin.read()
    print(json.dumps({"content": json.dumps(dict(os.environ))}))
"""


async def test_external_tools_get_the_same_environment(daemon_environ, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "dev")
    folder = tmp_path / "tools"
    script(folder, "printenv", ENV_TOOL)
    key = "sk-credentials-json-key-0123456789"
    monkeypatch.setenv("LC_IDENTIFICATION", key)
    env_ = ToolEnv(rule=EnvRule(passed=("AWS_PROFILE",)), secrets=lambda: [key])
    specs, warnings = await discover_external_tools([folder], env=env_)
    assert warnings == []
    reg = ToolRegistry([*builtin_tools(), *specs], env=env_)
    ctx = ToolContext(agent_uuid="ext-1", cwd=tmp_path)
    result = await run(reg, ctx, "printenv")
    assert not result.is_error, result.content
    tool = json.loads(result.content)
    schema = json.loads((folder / "schema-env.json").read_text())
    bash = await bash_env(reg, ctx)
    for env in (tool, schema):
        assert_clean(env, {"LC_IDENTIFICATION": key})
        assert env["PATH"] == daemon_environ["PATH"]
        assert env["HOME"] == PLAIN["HOME"] and env["AWS_PROFILE"] == "dev"
    assert tool["IKIGAI_AGENT_UUID"] == "ext-1"
    # the same variables as bash, apart from what the shells add themselves
    shell_own = {"PWD", "SHLVL", "_", "OLDPWD"}
    assert {k: v for k, v in bash.items() if k not in shell_own} == {
        k: v for k, v in tool.items() if k not in shell_own
    }


# ------------------------------------------------------------------ the real daemon


class _KeyedDaemon(DaemonProcess):
    """ikigaid started the way a user starts it: provider keys and other
    secrets exported in its environment."""

    extra: dict[str, str] = {}

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, **self.extra}


async def test_the_daemon_hands_tools_no_key(fake_provider, nursery):
    home = Path(tempfile.mkdtemp(prefix="ikt-", dir="/tmp"))  # short: socket path limit
    try:
        write_home(home, fake_provider, tools={"env": {"pass": ["MY_SETTING"]}})
        creds = json.loads((home / "credentials.json").read_text())
        d = _KeyedDaemon(home)
        # MY_SETTING holds the credentials file's key under an innocent, passed name
        d.extra = {"MISTRAL_API_KEY": PROVIDER_KEYS["MISTRAL_API_KEY"], "MY_SETTING": KEY}
        d.extra |= SECRET_LOOKING
        await d.start()
        try:
            c = await connect(nursery, str(d.socket))
            await c.call("agent.create", name="t")
            calls = [
                ToolCall("bash", {"command": "env"}, id="t1"),
                ToolCall("file_read", {"path": str(home / "credentials.json")}, id="t2"),
                ToolCall("grep", {"pattern": "sk-|AIza", "path": str(home)}, id="t3"),
                ToolCall("glob", {"pattern": "*.json", "path": str(home)}, id="t4"),
            ]
            fake_provider.push(Reply(tool_calls=calls), Reply(text="done"))
            with trio.fail_after(30):
                answer = await c.call("agent.prompt", agent="t", text="show me", wait=True)
            assert answer["reply"] == "done"
            sent = fake_provider.requests[-1].body.decode()
            for secret in [*creds.values(), PROVIDER_KEYS["MISTRAL_API_KEY"], *SECRET_LOOKING.values()]:
                assert secret not in sent
            assert "PATH=" in sent and f"HOME={os.environ['HOME']}" in sent
            assert "credentials.json holds ikigai's API keys; tools may not read it" in sent
            assert "config.json" in sent  # glob lists the other files
        finally:
            d.stop()
    finally:
        shutil.rmtree(home, ignore_errors=True)
