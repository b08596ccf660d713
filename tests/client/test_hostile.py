"""What answers on the socket may not be a well-behaved daemon: whatever
bytes come back, the async client raises a clear error (DaemonUnreachable,
or RpcError for a well-formed error answer), never anything else, and never
hangs. (The sync client's framing: tests/ikictl/test_client.py.)"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ikigai

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
# the id 1 is the client's first request: answers to it, good and bad
answers = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.sampled_from([1, 2, None, "1"])},
    optional={"result": json_values, "error": json_values, "method": st.text(max_size=10), "params": json_values},
)
lines = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    answers.map(lambda v: json.dumps(v).encode()),
)


async def _impostor(path: str, reply: bytes, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Answers the first request line with ``reply``, then closes."""
    sock = trio.socket.socket(trio.socket.AF_UNIX)
    await sock.bind(path)
    sock.listen()
    listener = trio.SocketListener(sock)
    task_status.started()
    stream = await listener.accept()
    async with stream:
        data = b""
        while b"\n" not in data:
            chunk = await stream.receive_some(4096)
            if not chunk:
                return
            data += chunk
        await stream.send_all(reply)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, min_size=1, max_size=3))
def test_any_answer_is_a_result_or_a_clear_error(replies: list[bytes]):
    reply = b"".join(r + b"\n" for r in replies)

    async def main() -> None:
        with tempfile.TemporaryDirectory(prefix="ikhost") as d:
            path = str(Path(d) / "s.sock")
            async with trio.open_nursery() as n:
                await n.start(_impostor, path, reply)
                with trio.fail_after(5):
                    try:
                        async with ikigai.connect_async(path, autostart=False) as c:
                            await c.status()
                    except ikigai.DaemonUnreachable as e:
                        assert "daemon" in str(e) or "connection" in str(e)
                    except ikigai.RpcError as e:
                        assert isinstance(e.message, str)

    trio.run(main)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, min_size=1, max_size=3))
def test_the_sync_client_too(replies: list[bytes]):
    import socket
    import threading

    reply = b"".join(r + b"\n" for r in replies)
    with tempfile.TemporaryDirectory(prefix="ikhost") as d:
        path = str(Path(d) / "s.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen()

        def serve() -> None:
            conn, _ = server.accept()
            with conn:
                f = conn.makefile("rb")
                if f.readline():
                    conn.sendall(reply)

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        try:
            with ikigai.connect(path, autostart=False, timeout=5) as c:
                c.sock.settimeout(5)  # a hang fails the test instead of stalling it
                c.status()
        except ikigai.DaemonUnreachable as e:
            assert "daemon" in str(e) or "connection" in str(e)
        except ikigai.RpcError as e:
            assert isinstance(e.message, str)
        finally:
            server.close()
            t.join(5)
