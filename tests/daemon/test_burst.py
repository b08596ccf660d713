"""One network read holding thousands of deltas: a waiting prompt and
``ikictl send`` both get the whole answer, exactly once."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

from tests.daemon.rpc import connect
from tests.fakes.script import Reply
from tests.ikictl.conftest import IKICTL, clean_env

# 3,000 deltas of ~17 characters (52,890 characters in all), written at once
TEXT = "".join(f"<{i:05d}|{'x' * 10}>" for i in range(3000))[:52_890]


def burst() -> Reply:
    return Reply(text=TEXT, pieces=3000, chunk_size=1 << 24)


async def test_wait_gets_the_whole_answer_while_a_subscriber_stalls(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="b")
    watcher = await connect(nursery, str(daemon.socket))
    await watcher.call("agent.subscribe", agent="b")  # subscribed, reading as fast as it can
    fake_provider.push(burst())
    with trio.fail_after(30):
        answer = await c.call("agent.prompt", agent="b", text="go", wait=True)
    assert answer["status"] == "completed"
    assert answer["reply"] == TEXT
    # the subscriber saw every delta, in order, or was told where to resume
    seen = []
    with trio.fail_after(30):
        async for note in watcher.notes:
            ev = note["params"].get("event", {})
            if ev.get("type") == "lagged":
                seen.append(None)
            elif ev.get("type") == "text_delta":
                seen.append(ev["text"])
            elif ev.get("type") == "turn_ended":
                break
    assert None in seen or "".join(seen) == TEXT


async def test_ikictl_send_prints_a_burst_whole_and_once(daemon, fake_provider, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="s")
    fake_provider.push(burst())
    env = clean_env(Path(daemon.home))
    result = await trio.run_process(
        [*IKICTL, "--no-autostart", "send", "s", "go"], env=env, capture_stdout=True, capture_stderr=True, check=False
    )
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert out.count(TEXT) == 1, (len(out), out[-300:])
    assert out.count(TEXT[-17:]) == 1 and out.count("<00000|") == 1
    # and --json gives every delta once
    fake_provider.push(burst())
    result = await trio.run_process(
        [*IKICTL, "--no-autostart", "send", "s", "again", "--json"], env=env, capture_stdout=True, capture_stderr=True, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    events = [json.loads(line) for line in result.stdout.decode().splitlines() if line.strip()]
    text = "".join(e["event"]["text"] for e in events if e.get("event", {}).get("type") == "text_delta")
    assert text == TEXT, (len(text), sys.version)


async def test_a_client_that_stops_reading_is_told_to_resume_not_dropped(daemon, fake_provider, nursery) -> None:
    """10,000 deltas to a subscriber that reads nothing meanwhile: its
    subscription ends with where to resume; its connection still answers."""
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="flood")
    stream = await trio.open_unix_socket(str(daemon.socket))
    sub = b'{"jsonrpc":"2.0","id":1,"method":"agent.subscribe","params":{"agent":"flood"}}\n'
    await stream.send_all(sub)
    text = "".join(f"[{i:05d}]" for i in range(10_000))
    fake_provider.push(Reply(text=text, pieces=10_000, chunk_size=1 << 24))
    with trio.fail_after(30):
        answer = await c.call("agent.prompt", agent="flood", text="go", wait=True)
    assert answer["reply"] == text
    # now read what the silent client was sent, then ask it something
    await stream.send_all(b'{"jsonrpc":"2.0","id":2,"method":"daemon.status"}\n')
    buf = b""
    lines: list[dict] = []
    with trio.fail_after(30):
        while not any(m.get("id") == 2 for m in lines):
            data = await stream.receive_some(1 << 20)
            assert data, "the daemon dropped the client"
            buf += data
            *done, buf = buf.split(b"\n")
            lines += [json.loads(line) for line in done]
    events = [m["params"] for m in lines if m.get("method") == "agent.event"]
    lagged = [e["event"] for e in events if e["event"]["type"] == "lagged"]
    assert len(lagged) == 1
    ends = [m["params"] for m in lines if m.get("method") == "agent.subscription_end"]
    assert ends == [{"subscription": 1, "reason": "lagged"}]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # nothing skipped before the notice
    assert lagged[0]["resume_from"] == seqs[-1]
    assert next(m for m in lines if m.get("id") == 2)["result"]["pid"] > 0
    await stream.aclose()
