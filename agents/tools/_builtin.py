"""The built-in tools, as one list."""

from __future__ import annotations

from ._api import ToolSpec
from ._bash import bash_tool
from ._files import file_edit_tool, file_read_tool, file_write_tool
from ._search import glob_tool, grep_tool

__all__ = ["builtin_tools"]


def builtin_tools(*, bash_timeout: float = 120.0, max_output: int = 64 * 1024) -> list[ToolSpec]:
    """bash, file_read, file_write, file_edit, glob and grep.

    ``bash_timeout`` is the longest a bash command may run; ``max_output`` the
    characters of output kept by bash and file_read.
    """
    return [
        bash_tool(timeout=bash_timeout, max_output=max_output),
        file_read_tool(max_output=max_output),
        file_write_tool(),
        file_edit_tool(),
        glob_tool(),
        grep_tool(),
    ]
