"""An agent's working directory: where its tools run and relative paths point.

Chosen by the client that creates the agent (ikictl sends its own current
directory), so it must name a folder the daemon can use as it is: absolute,
existing and searchable. Checked once, at create or fork: a folder removed
later makes each tool answer the model with an error, not the agent fail.
"""

from __future__ import annotations

import os


def working_folder(text: str) -> str:
    """The normalized absolute folder ``text`` names; ValueError saying what
    is wrong with it otherwise."""
    if "\0" in text:
        raise ValueError("cwd: a folder path cannot contain a NUL character")
    if not os.path.isabs(text):
        raise ValueError(
            f"cwd: {text[:200]!r} is not an absolute path; the daemon has no current "
            "folder of yours to resolve it against: give the full path"
        )
    folder = os.path.normpath(text)
    try:
        is_dir = os.path.isdir(folder)
    except (OSError, ValueError):
        is_dir = False
    if not is_dir:
        raise ValueError(f"cwd: {folder[:400]} is not an existing folder")
    if not os.access(folder, os.X_OK):
        raise ValueError(f"cwd: the daemon may not enter {folder[:400]} (no search permission)")
    return folder
