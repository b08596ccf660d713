"""``agent.prompt {attachments}`` over the real socket of a real ikigaid: a
picture reaches each wire API in its own form, a queued one survives a
daemon restart, and every bad attachment is refused by name with nothing
stored."""

from __future__ import annotations

import base64
import json
import signal

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from protocol import INVALID_PARAMS
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, Stall

# a 1x1 PNG
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()

MODELS = {
    "messages": "anthropic/claude-sonnet-4-5",
    "responses": "openai/gpt-5",
    "chat": "openai/gpt-4o",  # (deepseek's models take no pictures: refused, test_attach_refusals.py)
    "generate_content": "google/gemini-3-flash-preview",
}


@pytest.fixture
def home(daemon_home, fake_provider):
    write_home(
        daemon_home,
        fake_provider,
        providers={
            "anthropic": {"base_url": fake_provider.base_url},
            "openai": {"base_url": f"{fake_provider.base_url}/v1"},
            "google": {"base_url": f"{fake_provider.base_url}/v1beta"},
            "deepseek": {"base_url": f"{fake_provider.base_url}/v1"},
        },
    )
    creds = daemon_home / "credentials.json"
    keys = json.loads(creds.read_text())
    creds.write_text(json.dumps({**keys, "deepseek": "test-deepseek-key"}))
    return daemon_home


def _picture_in(api: str, body: dict) -> bool:
    """The user message of ``body`` holds the PNG in ``api``'s own form."""
    text = json.dumps(body)
    if api == "messages":
        source = {"type": "base64", "media_type": "image/png", "data": PNG}
        return any(
            b.get("type") == "image" and b.get("source") == source
            for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
        )
    if api == "chat":
        return f"data:image/png;base64,{PNG}" in text and '"image_url"' in text
    if api == "responses":
        return '"input_image"' in text and f"data:image/png;base64,{PNG}" in text
    return '"inlineData"' in text and PNG in text


@pytest.mark.parametrize("api", list(MODELS))
async def test_a_picture_reaches_each_wire_api_in_its_own_form(nursery, home, fake_provider, api):
    d = DaemonProcess(home)
    await d.start()
    try:
        fake_provider.push(Reply(text="a small square"))
        c = await connect(nursery, str(d.socket))
        created = await c.call("agent.create", model=MODELS[api])
        uuid = created["agent"]["uuid"]
        with trio.fail_after(30):
            done = await c.call(
                "agent.prompt",
                agent=uuid,
                text="what is this?",
                attachments=[{"media_type": "IMAGE/PNG", "data": PNG, "name": "dot.png"}],
                wait=True,
            )
        assert done["status"] == "completed" and done["reply"] == "a small square"
        body = fake_provider.requests[-1].json
        assert _picture_in(api, body), json.dumps(body)[:2000]
        history = await c.call("agent.history", agent=uuid, blocks=True)
        [user] = [m for m in history["messages"] if m.get("role") == "user"]
        kinds = [b["type"] for b in user["blocks"]]
        assert kinds == ["text", "image"] and user["blocks"][1]["media_type"] == "image/png"
        assert user["blocks"][1]["bytes"] == len(base64.b64decode(PNG))
    finally:
        d.stop()


async def test_a_queued_picture_survives_a_daemon_kill(nursery, home, fake_provider):
    """A prompt queued behind a running turn keeps its picture in the durable
    queue: after kill -9 the restarted daemon sends it."""
    d = DaemonProcess(home)
    await d.start()
    # the first turn's answer stalls until its client (the daemon) is gone
    fake_provider.push(Reply(text="slow", fault=Stall()), Reply(text="seen"))
    c = await connect(nursery, str(d.socket))
    uuid = (await c.call("agent.create"))["agent"]["uuid"]
    await c.call("agent.prompt", agent=uuid, text="first")
    with trio.fail_after(30):
        await fake_provider.wait_for_requests(1)
    queued = await c.call(
        "agent.prompt", agent=uuid, text="look", attachments=[{"media_type": "image/png", "data": PNG}]
    )
    assert queued["position"] == 1
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    await d.start()
    c2 = await connect(nursery, str(d.socket))
    with trio.fail_after(30):
        done = await c2.call("agent.wait", agent=uuid, turn=queued["turn"])
    assert done["status"] == "completed"
    assert _picture_in("messages", fake_provider.requests[-1].json)
    d.stop()


BAD = [
    ([{"media_type": "image/bmp", "data": PNG}], "attachments[0].media_type: image/bmp is not taken"),
    ([{"media_type": "image/png", "data": "not base64!"}], "attachments[0].data: not valid base64"),
    ([{"media_type": "image/png"}], "attachments[0].data: required"),
    ([{"data": PNG}], "attachments[0].media_type: required"),
    ([{"path": "etc/passwd"}], "attachments[0].path: etc/passwd is relative: give an absolute path"),
    ([{"url": "ftp://x/y.png"}], "attachments[0].url: ftp://x/y.png: only http and https URLs"),
    ([{"path": "/etc/passwd", "data": PNG}], "attachments[0].data: give one of path, url and data, not path and data"),
    ([{"media_type": "image/png", "data": PNG}] * 21, "attachments: at most 20"),
    ([{"media_type": "image/png", "data": PNG, "shape": 1}], "unknown field"),
    ([{"media_type": "image/png", "data": PNG, "name": "n" * 300}], "attachments[0].name"),
    ([{"media_type": "image/png" + " " * 300, "data": PNG}], "attachments[0].media_type"),
]


@pytest.mark.parametrize(("attachments", "said"), BAD)
async def test_bad_attachments_are_refused_by_name_with_nothing_stored(
    nursery, daemon, fake_provider, attachments, said
):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create"))["agent"]["uuid"]
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.prompt", agent=uuid, text="look", attachments=attachments)
    assert e.value.code == INVALID_PARAMS and said in e.value.error["message"]
    assert (await c.call("agent.history", agent=uuid))["messages"] == []
    assert fake_provider.requests == []


# media types the daemon takes, as a client may spell them (jpg: taken as jpeg;
# a picture is what its bytes are, so a PNG sent as one is taken as a PNG)
TAKEN = ("image/png", "image/webp", "IMAGE/JPG")
_wrong = st.integers() | st.none() | st.booleans() | st.lists(st.integers(), max_size=2)
_attachment = st.fixed_dictionaries(
    {},
    optional={
        "media_type": st.sampled_from([*TAKEN, "image/bmp", "", "text/plain", "image"]) | st.text(max_size=20) | _wrong,
        "data": st.sampled_from([PNG, "", "====", "abc", PNG + "\n", PNG[:-1], "é" * 4]) | st.text(max_size=30) | _wrong,
        "name": st.sampled_from(["dot.png", "\u00e9t\u00e9.png"]) | st.text(min_size=257, max_size=3000) | _wrong,
        "path": st.text(max_size=10),
        "url": st.text(max_size=10),
        "shape": st.integers(),
    },
)
_many = st.lists(st.just({"media_type": "image/png", "data": PNG}), min_size=19, max_size=23)


def _taken(attachments: object) -> bool:
    """Would the daemon take these (as docs/protocol.md, "Attachments", says)?
    A path or a url here is never one that can be read: a few characters of
    any text (the files and URLs themselves: test_attach_files.py)."""
    if not isinstance(attachments, list) or len(attachments) > 20:
        return False
    for a in attachments:
        name = a.get("name")
        if set(a) - {"media_type", "data", "name"} or a.get("data") != PNG:
            return False
        if a.get("media_type") not in TAKEN or not (name is None or (isinstance(name, str) and len(name) <= 256)):
            return False
    return True


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(attachments=[{"media_type": "image/png", "data": PNG, "name": "n" * 5000}])
@example(attachments=[{"media_type": "IMAGE/JPG", "data": PNG, "name": "dot.png"}] * 20)
@given(attachments=st.lists(_attachment, max_size=4) | _many | st.text(max_size=5) | st.integers() | st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
async def test_any_attachments_are_taken_whole_or_refused_naming_the_field(nursery, daemon, fake_provider, attachments):
    """Against an agent whose turn runs on (so a prompt it takes is queued,
    its pictures in the durable queue): each list is queued whole, or refused
    -32602 naming ``attachments`` with nothing queued and history unchanged."""
    fake_provider.default = Reply(text="held", fault=Stall())  # every turn runs until the daemon leaves
    if daemon.proc is None:
        await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", prompt="hold on"))["agent"]["uuid"]
    before = await c.call("agent.show", agent=uuid)
    rows = (await c.call("agent.history", agent=uuid))["messages"]
    assert before["current_turn"] is not None
    try:
        queued = await c.call("agent.prompt", agent=uuid, text="look", attachments=attachments)
    except RpcFailure as e:
        assert not _taken(attachments), e.error
        assert e.code == INVALID_PARAMS and "attachments" in e.error["message"], e.error
        assert len(e.error["message"]) < 1000  # a huge name or type is never quoted whole
        assert (await c.call("agent.show", agent=uuid))["queued"] == before["queued"]
        assert (await c.call("agent.history", agent=uuid))["messages"] == rows
    else:
        assert _taken(attachments), attachments
        assert queued["position"] == before["queued"] + 1
    assert (await c.call("daemon.status"))["agents"]["running"] >= 1
    await c.call("agent.kill", agent=uuid)  # its queue goes with it
