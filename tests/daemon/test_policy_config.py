"""Tool-permission policies in config.json and on agents (issue 15, policies):
config faults named by field, ``agent.create``/``agent.fork`` with a policy,
forks that add to their parent's chain, unknown names refused, the chain and
yolo shown by create/list/show and kept across a restart and a reload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.config import ConfigError, build_permissions, parse_config
from protocol import INVALID_PARAMS, REFUSED
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect

POLICIES = {
    "careful": {
        "rules": [
            {"tool": "bash", "command": "git status*", "action": "allow"},
            {"tool": "bash", "command": "*rm -rf*", "action": "deny"},
            {"tool": "file_*", "path": "inside", "action": "allow"},
        ],
        "sandbox": "strict",
    },
    "online": {"rules": [{"tool": "*", "action": "allow"}], "network": True},
}


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"policy": "nope"}, "policy: no policy is named 'nope' (known: default, yolo)"),
        (
            {"policies": {"x": {"rules": [{"tool": "bash", "action": "maybe"}]}}},
            "policies.x.rules[0].action: must be one of allow, ask, deny, not 'maybe'",
        ),
        (
            {"policies": {"x": {"rules": [{"tool": "bash"}]}}},
            "policies.x.rules[0]: Object missing required field action",
        ),
        (
            {"policies": {"x": {"rules": [{"tool": "bash", "action": "allow", "cmd": "ls"}]}}},
            "policies.x.rules[0].cmd: unknown key (known keys: tool, action, command, path)",
        ),
        (
            {
                "policies": {
                    "x": {"rules": [{"tool": "file_read", "command": "ls", "action": "allow"}]}
                }
            },
            "policies.x.rules[0].command: only bash calls have a command",
        ),
        (
            {"policies": {"x": {"rules": [{"tool": "bash", "path": "inside", "action": "allow"}]}}},
            "policies.x.rules[0].path: tool 'bash' matches no tool with a path argument",
        ),
        (
            {
                "policies": {
                    "x": {"rules": [{"tool": "file_read", "path": "under", "action": "allow"}]}
                }
            },
            "policies.x.rules[0].path: must be one of inside, outside, not 'under'",
        ),
        (
            {"policies": {"x": {"rules": [{"tool": "", "action": "allow"}]}}},
            "policies.x.rules[0].tool: a tool name",
        ),
        (
            {"policies": {"x": {"sandbox": "full"}}},
            "policies.x.sandbox: must be one of none, workdir, strict",
        ),
        ({"policies": {"x": {"network": "yes"}}}, "policies.x.network: Expected bool, got str"),
        ({"policies": {"x": {"rules": "bash"}}}, "policies.x.rules: Expected list, got str"),
        (
            {"policies": {"x": {"yolo": True, "rules": [{"tool": "*", "action": "deny"}]}}},
            "policies.x.rules: a yolo policy allows everything; it takes no rules",
        ),
        ({"policies": {"yolo": {}}}, "policies.yolo: 'yolo' is a built-in policy"),
        ({"policies": {"default": {}}}, "policies.default: 'default' is a built-in policy"),
        ({"policies": {"two words": {}}}, "policies.two words: a policy name is 1-64 letters"),
        ({"policies": ["careful"]}, "policies: Expected object, got list"),
        ({"approval_timeout": 0}, "approval_timeout: Expected number > 0.0"),
        ({"approval_timeout": "1m"}, "approval_timeout: Expected number | null, got str"),
    ],
)
def test_a_bad_policy_config_is_refused_naming_the_field(config: dict, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(json.dumps(config), "/cfg/config.json")
    assert str(e.value).startswith("/cfg/config.json: ")
    assert says in str(e.value)


def test_a_good_policy_config_builds_its_permissions() -> None:
    config = parse_config(
        json.dumps({"policy": "careful", "policies": POLICIES, "approval_timeout": 90})
    )
    assert config.approval_timeout == 90
    perms = build_permissions(config, sandbox_available=True)
    assert perms.default == "careful" and perms.known() == ["careful", "default", "online", "yolo"]
    careful = perms.policies["careful"]
    assert [r.label for r in careful.rules] == [
        "allow bash command=git status*",
        "deny bash command=*rm -rf*",
        "allow file_* path=inside",
    ]
    assert (careful.sandbox, careful.network) == ("strict", False)
    assert perms.sandbox_of(["online"]) == ("workdir", True)
    assert perms.sandbox_of(["online", "careful"]) == ("strict", False)
    assert parse_config("{}").approval_timeout is None


async def test_agents_get_their_policy_chain_and_forks_only_add_to_it(
    daemon, fake_provider, nursery
) -> None:
    write_home(daemon.home, fake_provider, policy="default", policies=POLICIES)
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))

    plain = (await c.call("agent.create", name="plain"))["agent"]
    assert (plain["policy"], plain["yolo"]) == (["default"], False)
    wild = (await c.call("agent.create", name="wild", policy="yolo"))["agent"]
    assert (wild["policy"], wild["yolo"]) == (["yolo"], True)
    careful = (await c.call("agent.create", name="careful", policy="careful"))["agent"]
    assert (careful["policy"], careful["yolo"]) == (["careful"], False)

    # a fork keeps its parent's chain, and a policy given is added after it
    tamed = (await c.call("agent.fork", agent="wild", name="tamed", policy="careful"))["agent"]
    assert (tamed["policy"], tamed["yolo"]) == (["yolo", "careful"], False)
    child = (await c.call("agent.fork", agent="tamed", name="child"))["agent"]
    assert child["policy"] == ["yolo", "careful"]
    pup = (await c.call("agent.fork", agent="wild", name="pup"))["agent"]
    assert (pup["policy"], pup["yolo"]) == (["yolo"], True)
    narrowed = (await c.call("agent.fork", agent="plain", name="narrowed", policy="online"))[
        "agent"
    ]
    assert narrowed["policy"] == ["default", "online"]

    # unknown names are refused, naming the known ones; nothing is created
    for method, params in (
        ("agent.create", {"name": "x"}),
        ("agent.fork", {"agent": "plain", "name": "x"}),
    ):
        with pytest.raises(RpcFailure) as e:
            await c.call(method, policy="reckless", **params)
        assert e.value.code == REFUSED
        assert (
            "unknown policy 'reckless' (known: careful, default, online, yolo)"
            in e.value.error["message"]
        )
    assert "x" not in {a["name"] for a in await c.call("agent.list")}

    listed = {a["name"]: (a["policy"], a["yolo"]) for a in await c.call("agent.list")}
    assert listed["wild"] == (["yolo"], True) and listed["tamed"] == (["yolo", "careful"], False)
    shown = await c.call("agent.show", agent="child")
    assert (shown["policy"], shown["yolo"]) == (["yolo", "careful"], False)

    # the chains are stored: a restarted daemon has them
    daemon.stop()
    await daemon.start()
    c2 = await connect(nursery, str(daemon.socket))
    after = {a["name"]: a["policy"] for a in await c2.call("agent.list")}
    assert after == {
        "plain": ["default"],
        "wild": ["yolo"],
        "careful": ["careful"],
        "tamed": ["yolo", "careful"],
        "child": ["yolo", "careful"],
        "pup": ["yolo"],
        "narrowed": ["default", "online"],
    }


@pytest.mark.parametrize("policy", [7, ["yolo"], None, "x" * 5000])
async def test_a_malformed_policy_param_is_invalid(daemon, fake_provider, nursery, policy) -> None:
    write_home(daemon.home, fake_provider, policy="default")
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    if policy is None:  # null: the default, as when absent
        assert (await c.call("agent.create", name="n", policy=None))["agent"]["policy"] == [
            "default"
        ]
        return
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.create", name="n", policy=policy)
    assert e.value.code == INVALID_PARAMS
    assert "policy" in e.value.error["message"]


async def test_the_configured_default_follows_a_reload(daemon, fake_provider, nursery) -> None:
    write_home(daemon.home, fake_provider, policy="careful", policies=POLICIES)
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    assert (await c.call("agent.create", name="a"))["agent"]["policy"] == ["careful"]
    with pytest.raises(RpcFailure, match="unknown policy 'later'"):
        await c.call("agent.create", name="b", policy="later")

    write_home(daemon.home, fake_provider, policy="default", policies={**POLICIES, "later": {}})
    assert await c.call("daemon.reload") == {"ok": True}
    # an agent created without a policy has the configured default, whatever it now is
    assert (await c.call("agent.show", agent="a"))["policy"] == ["default"]
    assert (await c.call("agent.create", name="b", policy="later"))["agent"]["policy"] == ["later"]
    # a reload with a bad policy is refused and the running one kept
    write_home(daemon.home, fake_provider, policy="gone")
    with pytest.raises(RpcFailure, match="policy: no policy is named 'gone'"):
        await c.call("daemon.reload")
    assert (await c.call("agent.create", name="c", policy="later"))["agent"]["policy"] == ["later"]


class _NoBwrap(DaemonProcess):
    """A daemon whose PATH has no bubblewrap (nor anything else)."""

    def __init__(self, home: Path, path: Path) -> None:
        super().__init__(home)
        self.path = path

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, "PATH": str(self.path)}


async def test_a_missing_bubblewrap_is_said_once_at_start(daemon, nursery, tmp_path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    d = _NoBwrap(daemon.home, empty)
    try:
        await d.start()
        c = await connect(nursery, str(d.socket))
        assert (await c.call("daemon.reload")) == {"ok": True}
    finally:
        d.stop()
    out = d.output() + "".join(
        f.read_text(errors="replace") for f in (d.home / "logs").glob("*") if f.is_file()
    )
    assert out.count("bubblewrap not found: shell commands will be asked before they run") == 1, (
        out[-3000:]
    )
    assert "apt install bubblewrap" in out
