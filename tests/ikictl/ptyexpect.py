"""A tiny pexpect: run a program on a pseudo-terminal (standard library pty)
and wait for regular expressions in what it prints."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import time

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][AB012]|\x1b[=>]|\r")


class Timeout(AssertionError):
    pass


class PtyProcess:
    def __init__(self, argv: list[str], env: dict[str, str], cols: int = 200) -> None:
        import fcntl
        import struct
        import termios

        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.fd = master
        self.raw = b""  # everything read
        self.pos = 0  # expect() searches from here (in the cleaned text)

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.raw).decode("utf-8", "replace")

    def _read(self, timeout: float) -> bool:
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            raise EOFError
        self.raw += data
        return True

    def expect(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.text, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout(f"no {pattern!r} within {timeout} s; output after pos {self.pos}:\n{self.text[self.pos:]}")
            try:
                self._read(min(left, 0.2))
            except EOFError:
                m = rx.search(self.text, self.pos)
                if m:
                    self.pos = m.end()
                    return m
                raise Timeout(f"program ended without {pattern!r}; output:\n{self.text[self.pos:]}") from None

    def send(self, data: str) -> None:
        os.write(self.fd, data.encode())

    def sendline(self, line: str) -> None:
        self.send(line + "\r")

    def ctrl_c(self) -> None:
        self.send("\x03")

    def ctrl_d(self) -> None:
        self.send("\x04")

    def wait(self, timeout: float = 15.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            try:
                self._read(0.1)
            except EOFError:
                break
        return self.proc.wait(max(1.0, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        with contextlib.suppress(OSError):
            os.close(self.fd)
