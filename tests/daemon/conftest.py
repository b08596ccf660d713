from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests._ready import await_ready, daemon_answers, wait_ready
from tests.fakes.server import FakeProvider

KEY = "sk-ant-test-SECRET-0123456789abcdef"


def write_home(home: Path, fake: FakeProvider, **config) -> None:
    home.mkdir(parents=True, exist_ok=True)
    cfg = {
        "default_model": "claude-sonnet-4-5/low",
        "policy": "yolo",  # tool calls run unasked; the permission tests set their own
        "providers": {
            "anthropic": {"base_url": fake.base_url, "read_timeout": 10},
            "openai": {"base_url": f"{fake.base_url}/v1", "read_timeout": 10},
            "google": {"base_url": f"{fake.base_url}/v1beta", "read_timeout": 10},
        },
        **config,
    }
    (home / "config.json").write_text(json.dumps(cfg))
    creds = home / "credentials.json"
    creds.write_text(json.dumps({"anthropic": KEY, "openai": "sk-openai-test-KEY", "google": "AIzaTestGoogleKey000"}))
    creds.chmod(0o600)


class DaemonProcess:
    command: list[str] = [sys.executable, "-m", "daemon", "run"]

    def __init__(self, home: Path) -> None:
        self.home = home
        self.socket = home / "run" / "ikigai.sock"
        self.proc: subprocess.Popen | None = None
        # its stdout and stderr, all starts appended: a file, so that neither a
        # full pipe can stall it nor a failed start hide what it printed
        self.out_file = home / "ikigaid.out"
        self._out_from = 0  # where the current start's output begins

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("IKIGAI_")}
        env["IKIGAI_HOME"] = str(self.home)
        return env

    def spawn(self, *, env: dict[str, str] | None = None, command: list[str] | None = None, **popen: object) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        with self.out_file.open("ab") as out:
            self._out_from = out.tell()
            self.proc = subprocess.Popen(  # type: ignore[call-overload]
                command or self.command,
                env=self.env if env is None else env,
                stdout=out,
                stderr=subprocess.STDOUT,
                **popen,
            )

    async def restart(self) -> None:
        """Start it again after a stop or a kill -9 (which leaves the socket file behind)."""
        self.socket.unlink(missing_ok=True)
        await self.start()

    async def start(self) -> None:
        """Spawn it and wait until its socket answers ``daemon.status``
        (tests/_ready.py: the suite's one bound, a failure shows its output)."""
        self.spawn()
        await self.wait_ready()

    def start_blocking(self) -> None:
        """``start`` for a test or fixture outside trio."""
        self.spawn()
        assert self.proc is not None
        wait_ready(self.proc, daemon_answers(self.socket), "ikigaid", output=self.outputs)

    async def wait_ready(self, socket: Path | None = None) -> None:
        assert self.proc is not None
        await await_ready(self.proc, daemon_answers(socket or self.socket), "ikigaid", output=self.outputs)

    @property
    def outputs(self) -> list[Path | Callable[[], str]]:
        """What a failed start shows: this start's output, and its log's end."""
        return [self.start_output, self.home / "logs" / "ikigaid.log"]

    def start_output(self) -> str:
        """What it printed since it was last spawned."""
        with self.out_file.open("rb") as f:
            f.seek(self._out_from)
            return f.read().decode(errors="replace")

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 20) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def output(self) -> str:
        """Everything it printed, every start."""
        return self.out_file.read_text(errors="replace") if self.out_file.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def daemon_home(tmp_path: Path) -> Path:
    # short path: Unix socket paths are limited to 107 bytes
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="ikd-", dir="/tmp"))
    yield home
    import shutil

    if not os.environ.get("IKIGAI_KEEP_HOME"):
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def daemon(daemon_home: Path, fake_provider: FakeProvider):
    write_home(daemon_home, fake_provider)
    d = DaemonProcess(daemon_home)
    yield d
    d.stop()
