"""A provider's ``api`` pin wins for every one of its models; a custom provider
speaks any wire API with that API's auth header and paths; ``ikictl models
--offline`` lists custom providers. Real daemon, real fake provider server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import connect
from tests.fakes.script import Reply

# (model, pin, the path the fake server must see); gpt-5 is "responses" in the
# catalog, gpt-4o is the provider's default ("chat"): each pin goes against it
PINS = [
    ("gpt-5", "chat", "/v1/chat/completions"),
    ("gpt-4o", "responses", "/v1/responses"),
]


@pytest.mark.parametrize(("model", "pin", "path"), PINS)
async def test_an_api_pin_wins_for_every_model_of_the_provider(
    daemon_home, fake_provider, nursery, model, pin, path
):
    write_home(daemon_home, fake_provider)
    cfg = json.loads((daemon_home / "config.json").read_text())
    cfg["providers"]["openai"]["api"] = pin
    (daemon_home / "config.json").write_text(json.dumps(cfg))
    d = DaemonProcess(daemon_home)
    try:
        await d.start()
        c = await connect(nursery, str(d.socket))
        await c.call("agent.create", name="pinned", model=f"openai/{model}")
        fake_provider.push(Reply(text="pinned"))
        answer = await c.call("agent.prompt", agent="pinned", text="hi", wait=True)
        assert (answer["status"], answer["reply"]) == ("completed", "pinned")
        assert fake_provider.requests[-1].path == path
        rows = {r["model"]: r for r in await c.call("models.list", provider="openai")}
        assert {r["api"] for r in rows.values()} == {pin}  # listed as it is called
    finally:
        d.stop()


# custom provider -> (api, base_url suffix, expected path, header checks)
CUSTOM = {
    "cchat": ("chat", "/v1", "/v1/chat/completions"),
    "cresp": ("responses", "/v1", "/v1/responses"),
    "canth": ("messages", "", "/v1/messages"),
    "cgem": ("generate_content", "/v1beta", "/v1beta/models/m-1:streamGenerateContent"),
}


def _auth(name: str, headers: dict[str, str]) -> None:
    key = f"key-of-{name}"
    api = CUSTOM[name][0]
    if api in ("chat", "responses"):
        assert headers["authorization"] == f"Bearer {key}"
    elif api == "messages":
        assert headers["x-api-key"] == key and headers.get("anthropic-version")
        assert "authorization" not in headers
    else:
        assert headers["x-goog-api-key"] == key and "authorization" not in headers


async def test_a_custom_provider_on_each_wire_api(daemon_home, fake_provider, nursery):
    write_home(daemon_home, fake_provider)
    cfg = json.loads((daemon_home / "config.json").read_text())
    for name, (api, suffix, _) in CUSTOM.items():
        cfg["providers"][name] = {
            "base_url": fake_provider.base_url + suffix,
            "api": api,
            "key_env": f"{name.upper()}_KEY",
        }
    (daemon_home / "config.json").write_text(json.dumps(cfg))
    creds = daemon_home / "credentials.json"
    creds.write_text(json.dumps({name: f"key-of-{name}" for name in CUSTOM}))
    creds.chmod(0o600)
    d = DaemonProcess(daemon_home)
    try:
        await d.start()
        c = await connect(nursery, str(d.socket))
        for name, (_, _, path) in CUSTOM.items():
            await c.call("agent.create", name=f"on-{name}", model=f"{name}/m-1")
            fake_provider.push(Reply(text=f"hi from {name}"))
            answer = await c.call("agent.prompt", agent=f"on-{name}", text="hi", wait=True)
            assert (answer["status"], answer["reply"]) == ("completed", f"hi from {name}"), name
            request = fake_provider.requests[-1]
            assert request.path == path, name
            _auth(name, request.headers)
    finally:
        d.stop()


def _ikictl_models(home, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IKIGAI_")}
    env["IKIGAI_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "ikictl", "models", "--offline", "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_models_offline_lists_custom_providers_and_their_models(daemon_home):
    daemon_home.mkdir(parents=True, exist_ok=True)
    (daemon_home / "config.json").write_text(
        json.dumps(
            {
                "providers": {
                    "lanth": {
                        "base_url": "http://127.0.0.1:9/",
                        "api": "messages",
                        "default_model": "local-model",
                    },
                    "openai": {"api": "chat"},
                }
            }
        )
    )
    done = _ikictl_models(daemon_home, "lanth")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["provider"], r["model"], r["api"]) for r in rows] == [
        ("lanth", "local-model", "messages")
    ]
    done = _ikictl_models(daemon_home, "openai")
    assert done.returncode == 0, done.stderr
    assert {r["api"] for r in json.loads(done.stdout)} == {"chat"}  # the pin, as the daemon
