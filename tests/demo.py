"""The README's main job, offline: ``./scripts/demo``.

In a temporary IKIGAI_HOME it starts the fake provider server (the offline
stand-in for Anthropic, OpenAI and Gemini), points the daemon at it, and runs
real ``ikictl`` commands — each printed before its output, so you see what to
type: the daemon on the embedded SQLite default, an agent, a streamed answer
with thinking, a tool call the default policy asks about (answered by
`ikictl approve`), a fork to another provider, a model switch, a
cancel, and the history and usage views. Everything it started is stopped and
the folder removed at the end, even on failure or Ctrl+C.

The tool runs in bubblewrap's sandbox, as the default policy wants. On a
machine where bubblewrap cannot run (scripts/demo installs it as root with
apt), the demo's config gives its agents a policy with the default's rules
and no sandbox, and says so: the walk-through still shows a tool at work.
A real user's default is untouched; the config lives in the temporary folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from agents.permissions import DEFAULT_POLICY
from agents.tools import install_command, sandbox_available, sandbox_problem
from tests._ready import READY_TIMEOUT, NotReady, wait_ready

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
IKICTL = [str(BIN / "ikictl")] if (BIN / "ikictl").exists() else [sys.executable, "-m", "ikictl"]
_SCRUB = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "IKIGAI_", "XAI_", "DEEPSEEK_", "OPENROUTER_", "GROQ_")
UNSANDBOXED = "demo-unsandboxed"  # the demo's policy where bubblewrap cannot run


class DemoFailed(Exception):
    pass


class Demo:
    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="ikigai-demo-"))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
        self.env["IKIGAI_HOME"] = str(self.home)
        self.env["PYTHONPATH"] = str(ROOT)
        self.fake: subprocess.Popen | None = None
        self.step_no = 0
        # probed as the daemon will (same PATH); None: the sandbox works
        self.no_sandbox: str | None = None if sandbox_available() else self._why_unsandboxed()

    # ------------------------------------------------------------ output

    def step(self, title: str) -> None:
        self.step_no += 1
        print(f"\n== {self.step_no}. {title}", flush=True)

    def say(self, text: str) -> None:
        print(text, flush=True)

    def ikictl(self, *args: str, expect: int = 0, whole: bool = False) -> None:
        """Run and show a command; ``whole``: its output in one write, so a
        command running in the background cannot cut into its lines."""
        print(f"$ ikictl {shlex.join(args)}", flush=True)
        if whole:
            r = subprocess.run([*IKICTL, *args], env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
            sys.stdout.write(r.stdout + r.stderr)
            sys.stdout.flush()
            code = r.returncode
        else:
            code = subprocess.run([*IKICTL, *args], env=self.env, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
        if code != expect:
            raise DemoFailed(f"`ikictl {shlex.join(args)}` exited {code}, expected {expect}")

    def ikictl_background(self, *args: str) -> subprocess.Popen:
        print(f"$ ikictl {shlex.join(args)} &", flush=True)
        return subprocess.Popen([*IKICTL, *args], env=self.env, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def wait_for_approval(self, limit: float = READY_TIMEOUT) -> str:
        """The id of the first pending approval, as a script would poll for it."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            r = subprocess.run(
                [*IKICTL, "approvals", "--json"], env=self.env, capture_output=True, text=True
            )
            pending = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else []
            if pending:
                return str(pending[0]["approval"])
            time.sleep(0.1)
        raise DemoFailed(f"no approval was asked within {limit:g} s")

    @staticmethod
    def _why_unsandboxed() -> str:
        how = install_command()
        fix = f"; install it with: {how}" if how else ""
        if shutil.which("bwrap") is None:
            if sys.platform == "darwin":
                return "bubblewrap is Linux-only, so this demo runs its tool unsandboxed on macOS"
            return f"bubblewrap is not installed, so this demo runs its tool unsandboxed{fix}"
        return f"bubblewrap cannot run here, so this demo runs its tool unsandboxed ({sandbox_problem()})"

    # ------------------------------------------------------------ set-up, clean-up

    def start_fake(self) -> str:
        url_file = self.home / "fake-provider.url"
        errors = self.home / "fake-provider.err"  # shown if it fails to start
        with errors.open("wb") as err:
            self.fake = subprocess.Popen(
                [sys.executable, "-m", "tests.fakes", "--port", "0", "--url-file", str(url_file)],
                cwd=ROOT,
                env=self.env,
                stderr=err,  # its banner goes to stdout, which the demo shows
            )
        try:
            wait_ready(self.fake, url_file.exists, "the fake provider server", output=[errors])
        except NotReady as e:
            raise DemoFailed(str(e)) from None
        return url_file.read_text().strip()

    def configure(self, url: str) -> None:
        config = {
            "default_model": "claude-sonnet-4-5/med",
            "providers": {
                "anthropic": {"base_url": url},
                "openai": {"base_url": url + "/v1"},
                "google": {"base_url": url + "/v1beta"},
            },
        }
        if self.no_sandbox is not None:
            # the default policy's rules (the tool call is still asked), no sandbox
            rules = [{k: v for k, v in asdict(r).items() if v is not None} for r in DEFAULT_POLICY.rules]
            config["policies"] = {UNSANDBOXED: {"rules": rules, "sandbox": "none"}}
            config["policy"] = UNSANDBOXED
        (self.home / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        creds = self.home / "credentials.json"
        creds.write_text(json.dumps({p: "offline-demo-key" for p in ("anthropic", "openai", "google")}) + "\n")
        creds.chmod(0o600)

    def cleanup(self) -> None:
        sock = self.home / "run" / "ikigai.sock"
        if sock.exists():
            r = subprocess.run(
                [*IKICTL, "--no-autostart", "status", "--json"], env=self.env, capture_output=True, text=True
            )
            pid = json.loads(r.stdout)["pid"] if r.returncode == 0 else None
            subprocess.run([*IKICTL, "daemon", "stop"], env=self.env, capture_output=True)
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)  # only if it is still there
        if self.fake is not None and self.fake.poll() is None:
            self.fake.terminate()
            try:
                self.fake.wait(10)
            except subprocess.TimeoutExpired:
                self.fake.kill()
                self.fake.wait()
        shutil.rmtree(self.home, ignore_errors=True)

    # ------------------------------------------------------------ the walk-through

    def run(self) -> None:
        self.say("ikigai demo, offline: the daemon, ikictl and a fake provider, all on this machine")
        self.say(f"IKIGAI_HOME={self.home}  (a temporary folder, removed at the end)")

        self.step("Start the fake provider server: the OFFLINE STAND-IN for a real provider")
        url = self.start_fake()
        self.configure(url)
        self.say(f"config.json points anthropic, openai and google at {url};")
        self.say('credentials.json (mode 0600) holds the dummy key "offline-demo-key".')

        self.step("Start the daemon (SQLite under IKIGAI_HOME; any ikictl command would autostart it)")
        self.ikictl("daemon", "start")

        self.step("Create an agent; its first answer streams, thinking included")
        self.ikictl("new", "--name", "demo", "--model", "claude-sonnet-4-5/med", "What is ikigai, in two sentences?")

        if self.no_sandbox is None:
            self.step("A tool call: the default policy asks first; here a script answers")
        else:
            self.step("A tool call: the demo's policy (the default's rules, no sandbox) asks first; here a script answers")
        self.say("(on a terminal ikictl would ask inline: [y]es/[n]o/[a]lways)")
        if self.no_sandbox is not None:
            self.say(self.no_sandbox)
        send = self.ikictl_background("send", "demo", "Please run a tool to say hello")
        approval = self.wait_for_approval()
        self.ikictl("approvals")
        self.ikictl("approve", approval, whole=True)
        if send.wait(60) != 0:
            raise DemoFailed(f"`ikictl send` exited {send.returncode}, expected 0")

        self.step("Fork to another provider: the child shares the history, answers with Gemini")
        self.ikictl("fork", "demo", "--name", "gem", "--model", "gemini-2.5-flash/low", "Summarise our conversation")

        self.step("Switch the parent's model (and thinking level)")
        self.ikictl("model", "demo", "gpt-4o/none")
        self.ikictl("send", "demo", "hi")

        self.step("Cancel a long answer: start a turn, then cancel it from another command")
        self.ikictl("send", "demo", "--no-wait", "Tell me a long story")
        time.sleep(1.0)
        self.ikictl("cancel", "demo")

        self.step("The agent tree, the history and the usage")
        self.ikictl("ls")
        self.ikictl("history", "demo", "--limit", "8")
        self.ikictl("usage", "demo", "--tree")

        self.step("Stop the daemon")
        self.ikictl("daemon", "stop")

        self.say(
            "\nDone. With real providers, skip the fake server and its config:\n"
            "  export ANTHROPIC_API_KEY=...   (or OPENAI_API_KEY, GEMINI_API_KEY)\n"
            '  ikictl new --name main "Hello"\n'
            "A local llama.cpp or Ollama server: see docs/ikictl.md (providers.<name>.base_url)."
        )


def main() -> int:
    demo = Demo()
    try:
        demo.run()
    except DemoFailed as e:
        print(f"\ndemo failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ndemo interrupted", file=sys.stderr)
        return 130
    finally:
        demo.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
