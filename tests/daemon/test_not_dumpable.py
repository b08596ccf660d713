"""ikigaid makes itself not dumpable, so a tool running as the same user
cannot read the daemon's environment or memory through /proc."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import ctypes
from daemon.process.cli import _not_dumpable
libc = ctypes.CDLL(None)
before = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
_not_dumpable()
print(before, libc.prctl(3, 0, 0, 0, 0))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="prctl is Linux's")
def test_the_daemon_process_is_not_dumpable() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "0"]
