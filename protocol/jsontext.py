"""Faults in the text of a JSON file (config.json, credentials.json), named by
the field that holds them: a lone surrogate (a JSON escape such as "\\ud800"
decodes to one, and it cannot be written back as UTF-8) or a byte that is not
UTF-8. The value itself is never quoted: it may be a key."""

from __future__ import annotations

import json

__all__ = ["text_fault", "undecodable_field"]


def _surrogate(text: str) -> str | None:
    """The first lone surrogate of ``text``, written as an escape, or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"\\u{ord(text[e.start]):04x}"
    return None


def _shown_key(key: str) -> str:
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _first_bad_text(data: object) -> tuple[str, str] | None:
    """(field, lone surrogate) of the first key or string value, in document
    order, that is not Unicode text. Iterative: JSON may nest as deep as the
    parser allowed."""
    stack: list[tuple[str, object]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            bad = _surrogate(value)
            if bad is not None:
                return path, bad
        elif isinstance(value, dict):
            items = []
            for key, item in value.items():
                sub = f"{path}.{_shown_key(key)}" if path else _shown_key(key)
                bad = _surrogate(key)
                if bad is not None:
                    return sub, bad
                items.append((sub, item))
            stack.extend(reversed(items))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(value)]))
    return None


def text_fault(data: object) -> str | None:
    """'FIELD: a lone surrogate (\\ud800) is not Unicode text' for the first
    key or value of decoded JSON ``data`` holding one (a JSON escape such as
    "\\ud800" decodes to it), or None. The value itself is never quoted: it
    may be a key. For config.json and credentials.json."""
    found = _first_bad_text(data)
    if found is None:
        return None
    field, bad = found
    where = f"{field}: " if field else ""
    return f"{where}a lone surrogate ({bad}) is not Unicode text"


def undecodable_field(raw: bytes) -> str | None:
    """The field whose text holds the first byte that is not UTF-8, when the
    file is JSON apart from that; None otherwise. For config.json and
    credentials.json."""
    try:
        data = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    found = _first_bad_text(data)
    return found[0] if found is not None and found[0] else None


def json_kind(value: object) -> str:
    """msgspec's name for the JSON type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "array" if isinstance(value, list) else "object"
