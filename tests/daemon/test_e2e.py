"""The real ikigaid process, driven over its real socket, with the fake provider."""

from __future__ import annotations

import contextlib
import itertools
import signal
import stat

import trio

from store import Store
from tests._ready import READY_TIMEOUT, await_ready
from tests.daemon.conftest import KEY, DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect, turn_ended
from tests.fakes.script import Reply, ToolCall


async def test_create_prompt_stream_fork_switch_history_usage(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    status = await c.call("daemon.status")
    assert status["agents"] == {"running": 0, "dead": 0} and status["pid"] == daemon.proc.pid

    created = await c.call("agent.create", name="main", model="claude-sonnet-4-5/med")
    assert created["model"]["description"] == "Anthropic claude-sonnet-4-5 / Thinking: enabled (43,008 token budget - medium)"
    uuid = created["agent"]["uuid"]
    sub = await c.call("agent.subscribe", agent="main")
    fake_provider.push(Reply(thinking="let me think", thinking_signature="sig", text="Hello there", pieces=3))
    started = await c.call("agent.prompt", agent=uuid[:10], text="hi")
    assert started["position"] == 0
    events = await c.events_until(turn_ended(started["turn"]))
    kinds = [e["event"]["type"] for e in events]
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_ended"
    assert "thinking_delta" in kinds and kinds.count("text_delta") == 3
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[0]["seq"] + len(events)))
    assert all(e["subscription"] == sub["subscription"] and e["agent"] == uuid for e in events)
    assert "".join(e["event"]["text"] for e in events if e["event"]["type"] == "text_delta") == "Hello there"

    fork = await c.call("agent.fork", agent="main", name="gem", model="gemini-2.5-flash/low")
    assert (fork["agent"]["provider"], fork["agent"]["parent"]) == ("google", uuid)
    fake_provider.push(Reply(text="from gemini"))
    answer = await c.call("agent.prompt", agent="gem", text="and you?", wait=True)
    assert (answer["status"], answer["reply"]) == ("completed", "from gemini")
    assert fake_provider.requests[-1].path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"

    switched = await c.call("agent.set_model", agent="main", model="gpt-4o")
    assert switched["provider"] == "openai"
    assert switched["warnings"] == ["Thinking not supported by this model (ignored)"]
    fake_provider.push(Reply(text="from gpt"))
    answer = await c.call("agent.prompt", agent="main", text="again", wait=True)
    assert answer["reply"] == "from gpt" and answer["usage"]["input_tokens"] == 12

    history = await c.call("agent.history", agent="main")
    assert [m["kind"] for m in history["messages"]] == ["user", "assistant", "model_switch", "user", "assistant"]
    page = await c.call("agent.history", agent="main", limit=2)
    assert [m["kind"] for m in page["messages"]] == ["user", "assistant"] and page["more"] is True
    usage = await c.call("agent.usage", agent="main", descendants=True)
    assert usage["agents"] == 2 and usage["total"]["input_tokens"] == 36

    listing = await c.call("agent.list")
    assert [a["name"] for a in listing] == ["main", "gem"]
    killed = await c.call("agent.kill", agent="main")
    assert set(killed["killed"]) == {uuid, fork["agent"]["uuid"]}
    shown = await c.call("agent.show", agent="gem")
    assert shown["status"] == "dead"


async def test_cancel_over_the_socket(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="slow")
    await c.call("agent.subscribe", agent="slow")
    fake_provider.push(Reply(text="word " * 100, pieces=100, delay=0.05), Reply(text="next"))
    turn = (await c.call("agent.prompt", agent="slow", text="write a lot"))["turn"]
    await c.events_until(lambda e: e["event"]["type"] == "text_delta")
    assert (await c.call("agent.cancel", agent="slow")) == {"cancelled": True}
    events = await c.events_until(turn_ended(turn))
    assert events[-1]["event"]["status"] == "interrupted"
    assert (await c.call("agent.cancel", agent="slow")) == {"cancelled": False}
    answer = await c.call("agent.prompt", agent="slow", text="short", wait=True)
    assert answer["reply"] == "next"


async def test_errors_name_the_problem(daemon, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="a1")
    await c.call("agent.create", name="a2")
    for method, params, code, text in [
        ("agent.show", {"agent": "nobody"}, -32001, "no agent has the id or name 'nobody'"),
        ("agent.create", {"model": "gpt-4o/ultra"}, -32003, "'ultra' is not a thinking level"),
        ("agent.create", {"name": "a1"}, -32003, "a1"),
        ("agent.prompt", {"agent": "a1"}, -32602, "missing required field `text`"),
        ("agent.prompt", {"agent": 5, "text": "x"}, -32602, "agent: Expected `str`, got `int`"),
        ("agent.rewind", {"agent": "a1", "label": "nope"}, -32003, "nope"),
        ("no.such", {}, -32601, "unknown method 'no.such'"),
    ]:
        try:
            await c.call(method, **params)
        except RpcFailure as e:
            assert e.code == code, (method, e.error)
            assert text in e.error["message"], (method, e.error)
        else:
            raise AssertionError(f"{method} {params} was accepted")
    # a uuid prefix that matches both agents is ambiguous and lists them
    uuids = [a["uuid"] for a in await c.call("agent.list")]
    common = "".join(c[0] for c in itertools.takewhile(lambda c: len(set(c)) == 1, zip(*uuids, strict=False)))
    if common:
        try:
            await c.call("agent.show", agent=common)
        except RpcFailure as e:
            assert e.code == -32002 and {x["name"] for x in e.error["data"]["candidates"]} == {"a1", "a2"}


async def test_sigterm_mid_turn_then_restart(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    created = await c.call("agent.create", name="t")
    fake_provider.push(Reply(text="done"))
    await c.call("agent.prompt", agent="t", text="first", wait=True)
    await c.call("agent.subscribe", agent="t")
    fake_provider.push(Reply(text="slow " * 200, pieces=200, delay=0.05))
    turn = (await c.call("agent.prompt", agent="t", text="second"))["turn"]
    await c.events_until(lambda e: e["event"]["type"] == "text_delta")
    daemon.signal(signal.SIGTERM)
    await c.events_until(turn_ended(turn))
    assert await trio.to_thread.run_sync(daemon.wait) == 0
    assert not daemon.socket.exists()

    with Store(f"sqlite:///{daemon.home / 'ikigai.db'}") as store:
        kinds = [r.kind for r in store.history(created["agent"]["uuid"])]
        assert kinds == ["user", "assistant", "user", "interrupted"]
    await daemon.start()
    c2 = await connect(nursery, str(daemon.socket))
    fake_provider.push(Reply(text="back"))
    answer = await c2.call("agent.prompt", agent="t", text="third", wait=True)
    assert answer["reply"] == "back"
    sent = fake_provider.requests[-1].json["messages"]
    assert [m["content"][0]["text"] if isinstance(m["content"], list) else m["content"] for m in sent] == ["first", "done", "third"]


async def test_kill_9_mid_turn_keeps_every_acknowledged_message(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    created = await c.call("agent.create", name="k")
    acknowledged = []
    for i in range(5):
        fake_provider.push(Reply(text=f"answer {i}"))
        answer = await c.call("agent.prompt", agent="k", text=f"q{i}", wait=True)
        acknowledged.append(answer["reply"])
    fake_provider.push(Reply(tool_calls=[ToolCall("bash", {"command": "sleep 4"}, id="b1")]))
    await c.call("agent.subscribe", agent="k")
    await c.call("agent.prompt", agent="k", text="run it")
    await c.events_until(lambda e: e["event"]["type"] == "tool_started")
    daemon.signal(signal.SIGKILL)
    await trio.to_thread.run_sync(daemon.wait)
    with Store(f"sqlite:///{daemon.home / 'ikigai.db'}") as store:
        texts = [m.text for m in store.replay(created["agent"]["uuid"])]
        assert [t for t in texts if t.startswith("answer")] == acknowledged
    # the restarted daemon marks the cut turn interrupted and carries on
    daemon.socket.unlink()
    await daemon.start()
    c2 = await connect(nursery, str(daemon.socket))
    fake_provider.push(Reply(text="recovered"))
    answer = await c2.call("agent.prompt", agent="k", text="still there?", wait=True)
    assert answer["reply"] == "recovered"
    sent = fake_provider.requests[-1].json["messages"]
    assert "run it" not in str(sent) and "answer 4" in str(sent)


async def test_a_second_daemon_on_the_same_socket_refuses(daemon):
    await daemon.start()
    second = DaemonProcess(daemon.home)
    second.proc = None
    import subprocess
    import sys

    out = await trio.to_thread.run_sync(
        lambda: subprocess.run([sys.executable, "-m", "daemon", "run"], env=second.env, capture_output=True, text=True, timeout=READY_TIMEOUT)
    )
    assert out.returncode == 1
    assert f"another ikigaid is already running on {daemon.socket}" in out.stderr


async def test_socket_and_folder_modes_and_no_key_in_logs(daemon, fake_provider, nursery):
    await daemon.start()
    assert stat.S_IMODE(daemon.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(daemon.socket.parent.stat().st_mode) == 0o700
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="x")
    fake_provider.push(Reply(fault=__import__("tests.fakes.script", fromlist=["HttpError"]).HttpError(401, f"invalid x-api-key {KEY}", code="authentication_error")))
    try:
        await c.call("agent.prompt", agent="x", text="hi", wait=True)
    except RpcFailure as e:
        assert e.code == -32005 and KEY not in str(e.error)
    assert fake_provider.requests[-1].headers["x-api-key"] == KEY  # the key was used
    daemon.stop()
    logs = "".join(p.read_text(errors="replace") for p in (daemon.home / "logs").glob("*") if p.is_file())
    logs += daemon.output()
    assert logs, "the daemon wrote no log"
    assert KEY not in logs and "SECRET-0123456789" not in logs


async def test_credentials_readable_by_others_are_refused(daemon_home, fake_provider):
    write_home(daemon_home, fake_provider)
    (daemon_home / "credentials.json").chmod(0o644)
    d = DaemonProcess(daemon_home)
    import subprocess
    import sys

    out = await trio.to_thread.run_sync(
        lambda: subprocess.run([sys.executable, "-m", "daemon", "run"], env=d.env, capture_output=True, text=True, timeout=READY_TIMEOUT)
    )
    assert out.returncode == 1
    assert "chmod 600" in out.stderr and str(daemon_home / "credentials.json") in out.stderr


async def test_sighup_reloads_the_config(daemon, fake_provider, nursery):
    import json

    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    assert (await c.call("daemon.status"))["default_model"] == "claude-sonnet-4-5/low"
    cfg = json.loads((daemon.home / "config.json").read_text())
    cfg["default_model"] = "gpt-4o"
    (daemon.home / "config.json").write_text(json.dumps(cfg))
    daemon.signal(signal.SIGHUP)
    for _ in range(200):
        if (await c.call("daemon.status"))["default_model"] == "gpt-4o":
            break
        await trio.sleep(0.02)
    created = await c.call("agent.create", name="after-reload")
    assert created["agent"]["model"] == "gpt-4o"
    # a broken config is refused on reload and the running one kept
    (daemon.home / "config.json").write_text("{broken")
    daemon.signal(signal.SIGHUP)
    await trio.sleep(0.3)
    assert (await c.call("daemon.status"))["default_model"] == "gpt-4o"


async def test_readiness_is_notified_to_systemd(daemon_home, fake_provider):
    import socket as pysocket

    write_home(daemon_home, fake_provider)
    listener = pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_DGRAM)
    notify = daemon_home / "notify.sock"
    listener.bind(str(notify))
    listener.settimeout(READY_TIMEOUT)
    d = DaemonProcess(daemon_home)
    d.spawn(env=d.env | {"NOTIFY_SOCKET": str(notify)})
    assert d.proc is not None
    got: list[bytes] = []

    def notified() -> bool:
        with contextlib.suppress(BlockingIOError):
            got.append(listener.recv(1024, pysocket.MSG_DONTWAIT))
        return bool(got)

    try:
        await await_ready(d.proc, notified, "ikigaid (its READY=1)", output=d.outputs)
        assert got == [b"READY=1"]
        assert d.socket.exists()  # ready means the socket is listening
        d.signal(signal.SIGTERM)
        assert await trio.to_thread.run_sync(listener.recv, 1024) == b"STOPPING=1"
    finally:
        d.stop()
        listener.close()


async def test_socket_activation_uses_the_passed_listener(daemon_home, fake_provider, nursery):
    import socket as pysocket
    import sys

    write_home(daemon_home, fake_provider)
    path = daemon_home / "activated.sock"
    sock = pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(16)
    d = DaemonProcess(daemon_home)
    env = d.env | {"LISTEN_FDS": "1"}
    # as systemd does: the listener on fd 3, LISTEN_PID the daemon's own pid
    # (the wrapper execs the daemon, so its pid is the daemon's)
    wrapper = (
        "import os, sys; os.dup2(int(sys.argv[1]), 3); os.environ['LISTEN_PID'] = str(os.getpid()); "
        "os.execv(sys.executable, [sys.executable, '-m', 'daemon', 'run'])"
    )
    d.spawn(env=env, command=[sys.executable, "-c", wrapper, str(sock.fileno())], pass_fds=(sock.fileno(),))
    assert d.proc is not None
    try:
        await d.wait_ready(path)
        c = await connect(nursery, str(path))
        status = await c.call("daemon.status")
        assert status["pid"] == d.proc.pid
        assert not d.socket.exists()  # it did not bind a socket of its own
    finally:
        d.stop()
        sock.close()
