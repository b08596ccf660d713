"""The README's demo command, run exactly as written: ``./scripts/demo``."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_scripts_demo_runs_offline_and_cleans_up() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IKIGAI_", "ANTHROPIC_", "OPENAI_", "GEMINI_"))}
    r = subprocess.run(["./scripts/demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "the OFFLINE STAND-IN for a real provider" in out
    home = re.search(r"^IKIGAI_HOME=(\S+)", out, re.M).group(1)  # type: ignore[union-attr]
    for line in (
        "$ ikictl daemon start",
        "$ ikictl new --name demo --model claude-sonnet-4-5/med 'What is ikigai, in two sentences?'",
        "thinking: The user asks: What is ikigai, in two sentences?. A short, friendly answer fits.",
        "$ ikictl send demo 'Please run a tool to say hello' &",
        "[tool bash] $ echo hello from a tool",
        "[tool bash ok] hello from a tool",
        "The tool ran and printed: hello from a tool",
        "So far we talked about ikigai, ran a tool that said hello, and I summarised it.",
        "demo: OpenAI gpt-4o / Thinking: none",
        "demo: cancelled the running turn",
        "$ ikictl usage demo --tree",
    ):
        assert line in out.splitlines(), line
    assert re.search(r"^#\d+\s+\S+  interrupted$", out, re.M)
    assert re.search(r"^ikigaid stopped \(pid \d+\)$", out, re.M)
    assert not Path(home).exists()  # cleaned up
