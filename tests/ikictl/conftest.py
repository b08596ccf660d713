"""End-to-end fixtures: the real ``ikigaid`` in a temp IKIGAI_HOME, pointed at
the fake provider (``python -m tests.fakes``, a separate process), and the
real ``ikictl`` run as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._ready import READY_TIMEOUT, daemon_answers, wait_ready

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
IKICTL = [str(BIN / "ikictl")] if (BIN / "ikictl").exists() else [sys.executable, "-m", "ikictl"]
IKIGAID = [str(BIN / "ikigaid")] if (BIN / "ikigaid").exists() else [sys.executable, "-m", "daemon"]
_SCRUB = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "IKIGAI_", "XAI_", "DEEPSEEK_", "OPENROUTER_", "GROQ_", "OTEL_")


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.pop("NO_COLOR", None)
    env["IKIGAI_HOME"] = str(home)
    env["PYTHONPATH"] = str(ROOT)
    return env


def write_config(home: Path, url: str, **extra: object) -> None:
    config = {
        "policy": "yolo",  # tool calls run unasked; test_approvals.py sets its own
        "providers": {
            "anthropic": {"base_url": url},
            "openai": {"base_url": url + "/v1"},
            "google": {"base_url": url + "/v1beta"},
        },
        **extra,
    }
    (home / "config.json").write_text(json.dumps(config, indent=2))
    creds = home / "credentials.json"
    creds.write_text(json.dumps({p: "offline-demo-key" for p in ("anthropic", "openai", "google")}))
    creds.chmod(0o600)


def wait_for(pred: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout} s")
        time.sleep(0.03)


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="session")
def fake_url() -> Iterator[str]:
    """The fake provider server as its own process (the demo responder)."""
    d = Path(tempfile.mkdtemp(prefix="ikfake"))
    url_file = d / "url"
    out = d / "fake.out"
    with out.open("wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes", "--quiet", "--port", "0", "--url-file", str(url_file)],
            cwd=ROOT, env=clean_env(d), stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
        )
    try:
        # it writes the file once it listens (and atomically: never half a URL)
        wait_ready(proc, url_file.exists, "the fake provider (python -m tests.fakes)", output=[out])
        yield url_file.read_text().strip()
    finally:
        stop_process(proc)
        shutil.rmtree(d, ignore_errors=True)


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    def json(self) -> object:
        return json.loads(self.out)


@dataclass
class Daemon:
    home: Path
    env: dict[str, str]
    proc: subprocess.Popen | None = None

    def ikictl(
        self, *args: str, input: str | None = None, code: int | None = 0, timeout: float = READY_TIMEOUT
    ) -> Result:
        """Run ikictl to its end; bounded by the suite's start-up bound (any
        command may autostart a daemon), a command still running is shown."""
        try:
            r = subprocess.run(
                [*IKICTL, *args], input=input, capture_output=True, text=True, env=self.env, timeout=timeout,
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as e:
            raise AssertionError(
                f"ikictl {' '.join(args)} still running after {timeout:g} s\n"
                f"stdout:\n{_text(e.stdout)}\nstderr:\n{_text(e.stderr)}"
            ) from None
        res = Result(r.returncode, r.stdout, r.stderr)
        if code is not None:
            assert r.returncode == code, f"ikictl {' '.join(args)} -> {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        return res

    def popen(self, *args: str, **kw: object) -> subprocess.Popen:
        return subprocess.Popen([*IKICTL, *args], env=self.env, text=True, **kw)  # type: ignore[call-overload]

    @property
    def socket(self) -> Path:
        return self.home / "run" / "ikigai.sock"


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def start_daemon(home: Path, extra_env: dict[str, str] | None = None) -> Daemon:
    """``ikigaid run`` in ``home``, once its socket answers (tests/_ready.py);
    ``extra_env`` added to its clean environment."""
    env = {**clean_env(home), **(extra_env or {})}
    out = home / "ikigaid.stderr"
    with out.open("wb") as f:
        proc = subprocess.Popen([*IKIGAID, "run"], env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    d = Daemon(home, env, proc)
    try:
        wait_ready(proc, daemon_answers(d.socket), "ikigaid", output=[out, home / "logs" / "ikigaid.log"])
    except BaseException:
        stop_process(proc)
        raise
    return d


def stop_daemon(d: Daemon) -> None:
    if d.proc is not None:
        stop_process(d.proc)


@pytest.fixture(scope="module")
def daemon(fake_url: str) -> Iterator[Daemon]:
    """One real daemon for a test module (stopped at its end)."""
    home = Path(tempfile.mkdtemp(prefix="ikt"))
    write_config(home, fake_url, default_model="claude-sonnet-4-5/med")
    d = start_daemon(home)
    try:
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def home(fake_url: str) -> Iterator[Path]:
    """A fresh IKIGAI_HOME (config pointing at the fake) and no daemon yet."""
    h = Path(tempfile.mkdtemp(prefix="ikh"))
    write_config(h, fake_url)
    try:
        yield h
    finally:
        _stop_any_daemon(h)
        shutil.rmtree(h, ignore_errors=True)


def _stop_any_daemon(home: Path) -> None:
    """A daemon a test autostarted in ``home`` must not outlive it."""
    if not (home / "run" / "ikigai.sock").exists():
        return
    d = Daemon(home, clean_env(home))
    r = d.ikictl("--no-autostart", "status", "--json", code=None)
    if r.code != 0:
        return
    pid = json.loads(r.out)["pid"]
    d.ikictl("daemon", "stop", code=None)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    os.kill(pid, signal.SIGKILL)
