"""A config reload (``daemon.reload`` / SIGHUP) rebuilds the catalog: a
provider added to config.json is usable without a restart, everywhere the
catalog is read; running agents keep running; a bad config is refused, with
the reason answered to the client, and the running one kept."""

from __future__ import annotations

import json
import signal

import pytest
import trio

from tests.daemon.rpc import RpcFailure, connect, turn_ended
from tests.fakes.script import Reply


def _add_provider(daemon, fake_provider, name: str = "lchat") -> None:
    path = daemon.home / "config.json"
    cfg = json.loads(path.read_text())
    cfg["providers"][name] = {
        "base_url": f"{fake_provider.base_url}/v1",
        "api": "chat",
        "key_env": None,
        "default_model": "served.gguf",
    }
    path.write_text(json.dumps(cfg))


async def test_a_provider_added_to_config_works_after_reload(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    with pytest.raises(RpcFailure, match="lchat"):
        await c.call("agent.create", name="early", model="lchat/served.gguf")

    # a turn is running on a catalog provider while the config is reloaded
    await c.call("agent.create", name="busy", model="claude-sonnet-4-5")
    await c.call("agent.subscribe", agent="busy")
    fake_provider.push(Reply(text="slow " * 20, pieces=20, delay=0.05))
    running = (await c.call("agent.prompt", agent="busy", text="go"))["turn"]
    await c.events_until(lambda e: e["event"]["type"] == "text_delta")

    _add_provider(daemon, fake_provider)
    assert await c.call("daemon.reload") == {"ok": True}

    ended = await c.events_until(turn_ended(running))
    assert ended[-1]["event"]["status"] == "completed"

    # the model text, the provider pool and the Api all see the new provider
    created = await c.call("agent.create", name="local", model="lchat/served.gguf")
    assert (created["agent"]["provider"], created["agent"]["model"]) == ("lchat", "served.gguf")
    fake_provider.push(Reply(text="hello from lchat"))
    answer = await c.call("agent.prompt", agent="local", text="hi", wait=True)
    assert (answer["status"], answer["reply"]) == ("completed", "hello from lchat")
    assert fake_provider.requests[-1].path == "/v1/chat/completions"
    assert "authorization" not in fake_provider.requests[-1].headers  # key_env null: no key
    providers = {p["name"]: p for p in await c.call("providers.list")}
    assert providers["lchat"]["api"] == "chat"
    rows = await c.call("models.list", provider="lchat")
    assert [r["model"] for r in rows] == ["served.gguf"]


async def test_a_bad_config_is_refused_with_the_reason_and_the_old_one_kept(
    daemon, fake_provider, nursery
):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    path = daemon.home / "config.json"
    cfg = json.loads(path.read_text())
    cfg["providers"]["broken"] = {"base_url": "ftp://nowhere", "api": "chat"}
    path.write_text(json.dumps(cfg))
    with pytest.raises(RpcFailure) as refused:
        await c.call("daemon.reload")
    assert "providers.broken.base_url" in str(refused.value)
    assert "running config is kept" in str(refused.value)
    # SIGHUP with the same file: logged, the daemon keeps running as before
    daemon.signal(signal.SIGHUP)
    await trio.sleep(0.2)
    assert (await c.call("daemon.status"))["default_model"] == "claude-sonnet-4-5/low"
    fake_provider.push(Reply(text="still fine"))
    await c.call("agent.create", name="after", model="claude-sonnet-4-5")
    answer = await c.call("agent.prompt", agent="after", text="hi", wait=True)
    assert answer["reply"] == "still fine"
