"""What answers on the socket may not be an ikigai daemon: a line that is not a
JSON object is a clear error (exit 3), never a traceback or a hang."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ikictl._errors import DaemonUnreachable
from ikictl.client import Client, _message

from .conftest import Daemon, clean_env


@given(st.binary(max_size=200).filter(lambda b: b"\n" not in b))
def test_any_line_is_a_message_or_a_clear_error(line: bytes) -> None:
    try:
        msg = _message(line)
    except DaemonUnreachable as e:
        assert "not a JSON object" in str(e)
    else:
        assert isinstance(msg, dict) and msg == json.loads(line)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=3),
    )
)
def test_json_that_is_not_an_object_is_refused(value: object) -> None:
    with pytest.raises(DaemonUnreachable, match="not an ikigai daemon"):
        _message(json.dumps(value).encode())


class Impostor:
    """A Unix socket server that answers every request line with ``reply``."""

    def __init__(self, path: Path, reply: bytes) -> None:
        self.reply = reply
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                with conn:
                    f = conn.makefile("rb")
                    while f.readline():
                        conn.sendall(self.reply)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ikimp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize(
    "reply", [b"not json\n", b"[1, 2]\n", b"42\n", b'"text"\n', b"\xff\xfe{}\n", b"null\n"]
)
def test_an_impostor_on_the_socket_is_exit_3(sock_dir: Path, reply: bytes) -> None:
    path = sock_dir / "s.sock"
    imp = Impostor(path, reply)
    try:
        d = Daemon(sock_dir, clean_env(sock_dir))
        r = d.ikictl("--no-autostart", "--socket", str(path), "status", code=3, timeout=10)
        assert r.err == (
            "ikictl: what answers on the socket is not an ikigai daemon: it sent a line of "
            f"{len(reply) - 1} bytes that is not a JSON object\n"
        )
        with Client.open(str(path), timeout=5) as c, pytest.raises(DaemonUnreachable):
            c.call("daemon.status")
    finally:
        imp.close()
