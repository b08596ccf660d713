"""How ``ikictl history`` shows a file attached to a prompt:
``[attached notes.pdf · application/pdf · 120 KB]``, from the block
``agent.history {blocks: true}`` gives (``--tools``), or from the row's
readable text, where the daemon writes the same line after the prompt."""

from __future__ import annotations

from ikictl import render

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any

_MARK = "[attached "


def size_text(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{round(n / 1024)} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def file_line(b: dict[str, Any]) -> str:
    """The line of an image or document block."""
    kind = "image" if b.get("type") == "image" else "file"
    name = b.get("name") or b.get("url") or kind
    shown = [render.safe_line(name), render.safe_line(b.get("media_type") or "?")]
    size = b.get("bytes")
    if isinstance(size, int):
        shown.append(size_text(size))
    return f"[attached {' · '.join(shown)}]"


def attachments_first(rows: list[Any]) -> list[Any]:
    """Rows whose text ends in attachment lines with those lines first: the
    one-line view cuts a long prompt, never the files it carried."""
    out = []
    for row in rows:
        text = row.get("content")
        if row.get("kind") != "user" or not isinstance(text, str) or _MARK not in text:
            out.append(row)
            continue
        lines = text.split("\n")
        files = [line for line in lines if line.startswith(_MARK) and line.endswith("]")]
        rest = [line for line in lines if not (line.startswith(_MARK) and line.endswith("]"))]
        out.append({**row, "content": "\n".join([*files, *rest])})
    return out
