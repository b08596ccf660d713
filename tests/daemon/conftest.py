from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    def __init__(self, home: Path) -> None:
        self.home = home
        self.socket = home / "run" / "ikigai.sock"
        self.proc: subprocess.Popen | None = None

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("IKIGAI_")}
        env["IKIGAI_HOME"] = str(self.home)
        return env

    def spawn(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daemon", "run"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    async def start(self, limit: float = 20) -> None:
        self.spawn()
        deadline = time.monotonic() + limit
        import socket

        import trio

        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                out = self.proc.stdout.read().decode()
                raise AssertionError(f"ikigaid exited with {self.proc.returncode}:\n{out}")
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(str(self.socket))
                return
            except OSError:
                await trio.sleep(0.05)
            finally:
                s.close()
        raise AssertionError("ikigaid did not open its socket in time")

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 20) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def output(self) -> str:
        return self.proc.stdout.read().decode() if self.proc and self.proc.stdout else ""

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

    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def daemon(daemon_home: Path, fake_provider: FakeProvider):
    write_home(daemon_home, fake_provider)
    d = DaemonProcess(daemon_home)
    yield d
    d.stop()
