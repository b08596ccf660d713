from __future__ import annotations

from pathlib import Path

import pytest

from agents.tools import ToolContext, ToolRegistry, builtin_tools


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(agent_uuid="agent-1", cwd=tmp_path)


@pytest.fixture
def builtins() -> ToolRegistry:
    return ToolRegistry(builtin_tools(bash_timeout=10.0, max_output=4000))
