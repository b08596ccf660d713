"""The ``mcp_servers`` section of config.json (issue 17): every fault named by
its field, hostile values refused cleanly, ``$NAME`` taken from
credentials.json then the environment, and the secrets it brings in never in
the daemon's log, its errors or ``mcp.list``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from daemon.config import Config, ConfigError, parse_config
from daemon.config.mcp import mcp_specs
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect


def _cfg(**servers: object) -> str:
    return json.dumps({"mcp_servers": servers})


@pytest.mark.parametrize(
    ("servers", "says"),
    [
        ({"git": {"command": "uvx", "bogus": 1}}, "mcp_servers.git.bogus: unknown key (known keys: command, args, env, cwd, url, headers, default, start, call_timeout, connect_timeout, mode)"),
        ({"git": {}}, "mcp_servers.git: give exactly one of command"),
        ({"git": {"command": "uvx", "url": "http://h/mcp"}}, "mcp_servers.git: give exactly one of command"),
        ({"git": {"command": " "}}, "mcp_servers.git.command: must not be empty"),
        ({"git": {"command": 3}}, "mcp_servers.git.command: Expected str | null, got integer"),
        ({"git": {"command": "a", "args": "x"}}, "mcp_servers.git.args: Expected list, got str"),
        ({"git": {"command": "a", "args": [1]}}, "mcp_servers.git.args[0]: Expected str, got integer"),
        ({"git": {"command": "a", "env": {"A": 1}}}, "mcp_servers.git.env.A: Expected str, got number"),
        ({"git": {"command": "a", "env": {"1A": "x"}}}, "mcp_servers.git.env.1A: not a variable name"),
        ({"git": {"command": "a", "headers": {"A": "x"}}}, "mcp_servers.git.headers: only a url server takes headers"),
        ({"git": {"url": "http://h/mcp", "args": ["x"]}}, "mcp_servers.git.args: only a command server takes args"),
        ({"git": {"url": "http://h/mcp", "env": {"A": "x"}}}, "mcp_servers.git.env: only a command server takes env"),
        ({"git": {"url": "ftp://h/mcp"}}, "mcp_servers.git.url: must start with http:// or https://"),
        ({"git": {"url": "http://h:99999/mcp"}}, "mcp_servers.git.url: not a URL (Port out of range"),
        ({"git": {"url": "http:///mcp"}}, "mcp_servers.git.url: not a URL"),
        ({"git": {"url": "http://h/mcp", "headers": {"a b": "x"}}}, "mcp_servers.git.headers: 'a b' is not a header name"),
        ({"git": {"command": "a", "start": "now"}}, "mcp_servers.git.start: must be one of lazy, eager, not 'now'"),
        ({"git": {"command": "a", "mode": "2026"}}, "mcp_servers.git.mode: must be one of legacy, auto, not '2026'"),
        ({"git": {"command": "a", "call_timeout": 0}}, "mcp_servers.git.call_timeout: Expected number > 0.0"),
        ({"git": {"command": "a", "call_timeout": 3601}}, "mcp_servers.git.call_timeout: Expected number <= 3600.0"),
        ({"git": {"command": "a", "connect_timeout": 601}}, "mcp_servers.git.connect_timeout: Expected number <= 600.0"),
        ({"git": {"command": "a", "default": "yes"}}, "mcp_servers.git.default: Expected bool, got str"),
        ({"git": {"command": "a", "cwd": "/nonexistent-ikigai"}}, "mcp_servers.git.cwd: /nonexistent-ikigai is not a folder"),
        ({"git": {"command": "a", "args": ["5$"]}}, "mcp_servers.git.args[0]: a '$' at character 1 names no variable"),
        ({"git": {"command": "a", "args": ["a\x00b"]}}, "mcp_servers.git.args[0]: may not hold a NUL character"),
        ({"Git": {"command": "a"}}, "mcp_servers: 'Git' is not a server name"),
        ({"a__b": {"command": "a"}}, "mcp_servers: 'a__b' is not a server name"),
        ({"x" * 32: {"command": "a"}}, "is not a server name"),
        ({"git": 3}, "mcp_servers.git: Expected object, got integer"),
    ],
)
def test_each_fault_names_its_field(servers: dict, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(_cfg(**servers), "/x/config.json")
    assert f"/x/config.json: {says}" in str(e.value) or (
        says.startswith("is not") and says in str(e.value)
    ), str(e.value)


def test_not_an_object_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"config.json: mcp_servers: Expected object, got list"):
        parse_config('{"mcp_servers": []}')


def test_a_good_section_parses_with_defaults_and_cwd_expanded(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    config = parse_config(
        _cfg(
            git={"command": "uvx", "args": ["mcp-server-git"], "cwd": "src", "default": True},
            home={"command": "x", "cwd": "~"},
            docs={"url": "https://h.example/mcp", "headers": {"Authorization": "Bearer $T"}},
        ),
        tmp_path / "config.json",
    )
    git, home, docs = (config.mcp_servers[n] for n in ("git", "home", "docs"))
    assert git.cwd == str(tmp_path / "src")  # relative to the config file's folder
    assert home.cwd == str(Path.home())
    assert (git.default, git.start, git.mode, git.call_timeout, git.connect_timeout) == (
        True, "lazy", "legacy", 120.0, 30.0,
    )
    assert docs.url == "https://h.example/mcp" and docs.default is False
    assert Config().mcp_servers == {}


def _specs(servers: dict, creds: dict | None = None, env: dict | None = None):
    config = parse_config(_cfg(**servers))
    return mcp_specs(config.mcp_servers, creds or {}, env or {}, "/x/config.json", error=ConfigError)


def test_names_come_from_credentials_then_the_environment() -> None:
    specs, secrets = _specs(
        {
            "git": {
                "command": "run",
                "args": ["--token=$GIT_TOKEN", "$$HOME", "${WHERE}/sub"],
                "env": {"GIT_TOKEN": "$GIT_TOKEN", "PATH": "$PATH", "PLAIN": "no $$ here"},
            },
            "docs": {"url": "$DOCS_URL", "headers": {"Authorization": "Bearer ${DOCS}x"}},
        },
        creds={"GIT_TOKEN": "from-credentials-0123", "DOCS": "docs-secret-4567"},
        env={"GIT_TOKEN": "from-env-loses", "PATH": "/usr/bin:/bin", "WHERE": "/srv", "DOCS_URL": "http://127.0.0.1:9/mcp"},
    )
    git, docs = specs["git"], specs["docs"]
    assert git.args == ("--token=from-credentials-0123", "$HOME", "/srv/sub")
    assert dict(git.env) == {"GIT_TOKEN": "from-credentials-0123", "PATH": "/usr/bin:/bin", "PLAIN": "no $ here"}
    assert docs.url == "http://127.0.0.1:9/mcp"
    assert dict(docs.headers) == {"Authorization": "Bearer docs-secret-4567x"}
    # credentials' values are secrets; PATH and a URL from plain variables are not
    assert sorted(secrets) == ["docs-secret-4567", "from-credentials-0123"]


def test_an_environment_value_is_a_secret_when_named_like_one() -> None:
    _, secrets = _specs(
        {
            "a": {"command": "run", "env": {"X": "$BRAVE_API_KEY", "Y": "$GH_TOKEN", "Z": "$LANG"}},
            "b": {"url": "http://h/mcp", "headers": {"X-Api-Key": "$PLAIN_VALUE"}},
        },
        env={"BRAVE_API_KEY": "brave-0123456789", "GH_TOKEN": "ghtok-0123456789", "LANG": "en_US.UTF-8", "PLAIN_VALUE": "header-secret-01"},
    )
    assert sorted(secrets) == ["brave-0123456789", "ghtok-0123456789", "header-secret-01"]


@pytest.mark.parametrize(
    ("servers", "says"),
    [
        ({"git": {"command": "a", "env": {"T": "$NOPE"}}}, "/x/config.json: mcp_servers.git.env.T: $NOPE is not set: add 'NOPE' to credentials.json or set it in the daemon's environment"),
        ({"git": {"command": "a", "args": ["x", "${NOPE}"]}}, "mcp_servers.git.args[1]: $NOPE is not set"),
        ({"d": {"url": "http://h/$NOPE"}}, "mcp_servers.d.url: $NOPE is not set"),
        ({"d": {"url": "$U"}}, "mcp_servers.d.url: must start with http:// or https:// once $ names are replaced"),
        ({"d": {"url": "http://h/", "headers": {"A": "$NL"}}}, "mcp_servers.d.headers.A: a header value is one line"),
    ],
)
def test_a_name_set_nowhere_is_named_with_its_field(servers: dict, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        _specs(servers, env={"U": "ftp://x", "NL": "a\r\nInjected: yes"})
    assert says in str(e.value)


_HOSTILE = st.one_of(
    st.text(max_size=50),
    st.text(alphabet="$\x00\n{}\\/~ aZ_", max_size=40),
    st.just("x" * 100_000),
    st.integers(),
    st.floats(allow_nan=False),
    st.none(),
    st.booleans(),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
_FIELDS = ["command", "args", "env", "cwd", "url", "headers", "default", "start", "call_timeout", "connect_timeout", "mode", "other"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(name="git", fields={"command": "a", "cwd": "x" * 10_000})  # a missing folder, cut
@given(
    name=st.one_of(st.text(max_size=40), st.just("n" * 10_000), st.just("git")),
    fields=st.dictionaries(st.sampled_from(_FIELDS), _HOSTILE, max_size=5),
)
def test_hostile_values_are_refused_with_a_short_message_or_taken(name: str, fields: dict) -> None:
    try:
        config = parse_config(json.dumps({"mcp_servers": {name: fields}}))
    except ConfigError as e:
        text = str(e)
        assert text.startswith("config.json: mcp_servers")
        # a message quotes a field, never a whole hostile value
        assert len(text) < 600 + len(name), text[:300]
        return
    specs_error = None
    try:
        specs, _ = mcp_specs(config.mcp_servers, {}, {}, "config.json", error=ConfigError)
    except ConfigError as e:
        specs_error = str(e)
    if specs_error is not None:
        assert specs_error.startswith(f"config.json: mcp_servers.{name}")
        return
    spec = specs[name]
    assert (spec.command is None) != (spec.url is None)
    assert not any("\x00" in a for a in spec.args)


# ------------------------------------------------------------------ over the socket

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
SECRET = "mcp-leak-SECRET-0123456789abcdef"


async def test_a_bad_section_stops_the_daemon_naming_the_field(daemon_home, fake_provider) -> None:
    write_home(daemon_home, fake_provider, mcp_servers={"git": {"command": "a", "env": {"T": "$NOT_SET_ANYWHERE"}}})
    d = DaemonProcess(daemon_home)
    with pytest.raises(AssertionError) as e:
        await d.start()
    assert "mcp_servers.git.env.T: $NOT_SET_ANYWHERE is not set" in str(e.value)


@pytest.mark.parametrize("source", ["credentials", "environment"])
async def test_a_secret_never_reaches_the_log_nor_the_client(
    daemon_home, fake_provider, nursery, monkeypatch, source
) -> None:
    # the server prints its token on stderr and dies: its command line and its
    # error both hold the secret, and both reach the log and mcp.list
    leak = "import os, sys; sys.stderr.write('token is ' + os.environ['LEAK_TOKEN'] + '\\n'); sys.exit(3)"
    write_home(
        daemon_home,
        fake_provider,
        mcp_servers={
            "leaky": {"command": sys.executable, "args": ["-c", leak, "--token=$LEAK_TOKEN"], "env": {"LEAK_TOKEN": "$LEAK_TOKEN"}, "start": "eager", "connect_timeout": 5},
        },
    )
    if source == "credentials":
        creds = daemon_home / "credentials.json"
        creds.write_text(json.dumps({**json.loads(creds.read_text()), "LEAK_TOKEN": SECRET}))
    else:  # the daemon's environment (DaemonProcess passes ours on)
        monkeypatch.setenv("LEAK_TOKEN", SECRET)
    d = DaemonProcess(daemon_home)
    try:
        await d.start()
        c = await connect(nursery, str(d.socket))
        with trio.fail_after(20):
            while True:
                (state,) = (await c.call("mcp.list"))["servers"]
                if state["last_error"] is not None:
                    break
                await trio.sleep(0.1)
        assert "--token=[REDACTED]" in state["target"], state
        with pytest.raises(RpcFailure) as failed:
            await c.call("mcp.tools", server="leaky")
        assert failed.value.error["data"] == {"server": "leaky"}
        answers = json.dumps([state, failed.value.error])
        assert SECRET not in answers and SECRET[:12] not in answers
    finally:
        d.stop()
    logged = "".join(p.read_text(errors="replace") for p in (daemon_home / "logs").glob("*"))
    logged += d.output()
    assert "leaky" in logged  # the server's trouble was logged...
    assert SECRET not in logged and SECRET[:12] not in logged  # ...without the secret
