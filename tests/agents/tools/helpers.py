from __future__ import annotations

import itertools
from typing import Any

from agents.tools import ToolContext, ToolRegistry
from providers.types import ToolCallBlock, ToolResultBlock

_ids = itertools.count(1)


def call(name: str, raw: str | None = None, /, **arguments: Any) -> ToolCallBlock:
    return ToolCallBlock(id=f"call_{next(_ids)}", name=name, arguments=arguments, raw_arguments=raw)


async def run(
    registry: ToolRegistry, ctx: ToolContext, tool: str, /, **arguments: Any
) -> ToolResultBlock:
    return await registry.run(call(tool, **arguments), ctx)
