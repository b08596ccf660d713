"""msgspec's validation errors as messages people read: the file, the field
as the file spells it and the fault in JSON's words, e.g.::

    /home/me/.config/ikigai/config.json: providers.openai.read_timeout: Expected number, got str

Every section converts its values through ``convert`` so every fault reads
the same way.
"""

from __future__ import annotations

import re
import typing
from typing import Any

import msgspec

__all__ = ["CHOICES", "ConfigError", "convert", "type_words"]

# the choices of each Literal field, for a readable "must be one of" message
CHOICES: dict[str, tuple[str, ...]] = {
    "api": ("chat", "responses", "messages", "generate_content"),
    "default_thinking": ("none", "low", "med", "high"),
    "log_level": ("debug", "info", "warning", "error"),
    "action": ("allow", "ask", "deny"),
    "path": ("inside", "outside"),
    "sandbox": ("none", "workdir", "strict"),
    "start": ("lazy", "eager"),
    "mode": ("legacy", "auto"),
}

_PATH_PART = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_TICKED = re.compile(r"`([^`]*)`")
_TYPE_WORDS = {"float": "number", "int": "integer", "array": "list", "object": "object"}


class ConfigError(ValueError):
    """config.json cannot be used: the message names the file and the field."""


def convert(value: Any, type_: type[Any], where: str, prefix: str) -> Any:
    """``value`` as ``type_``, or ConfigError naming ``where`` and the field
    below ``prefix`` (the dotted path of ``value`` in the file)."""
    try:
        return msgspec.convert(value, type=type_)
    except msgspec.ValidationError as e:
        raise ConfigError(_message(str(e), where, prefix, type_)) from None


def _message(text: str, where: str, prefix: str, type_: type[Any]) -> str:
    """msgspec's 'Expected `float`, got `str` - at `$.read_timeout`' as
    'FILE: PREFIX.read_timeout: Expected number, got str'."""
    m = _PATH_PART.search(text)
    sub = ""
    if m:
        sub = m.group("path").lstrip(".")
        text = text[: m.start()]
    field = ".".join(p for p in (prefix, sub) if p)
    unknown = re.fullmatch(r"Object contains unknown field `([^`]*)`", text)
    if unknown:
        key = unknown.group(1)
        full = ".".join(p for p in (field, key) if p)
        known = _known_fields(type_, sub)
        hint = f" (known keys: {', '.join(known)})" if known else ""
        return f"{where}: {full}: unknown key{hint}"
    enum = re.fullmatch(r"Invalid enum value (.*)", text)
    last = field.rsplit(".", 1)[-1]
    if enum and last in CHOICES:
        text = f"must be one of {', '.join(CHOICES[last])}, not {enum.group(1)[:80]}"
    else:
        text = _TICKED.sub(lambda t: type_words(t.group(1)), text)
    return f"{where}: {field}: {text}" if field else f"{where}: {text}"


def type_words(types: str) -> str:
    """msgspec's (and protocol.jsontext's) type names in JSON's words."""
    return " | ".join(_TYPE_WORDS.get(t.strip(), t.strip()) for t in types.split("|"))


def _known_fields(type_: type[Any], sub: str) -> list[str]:
    """The field names of the struct at ``sub`` (a msgspec path below ``type_``)."""
    t: Any = type_
    for part in filter(None, sub.split(".")):
        name, _, index = part.partition("[")
        hints = msgspec.structs.fields(t) if isinstance(t, type) else ()
        nxt = next((f.type for f in hints if f.encode_name == name), None)
        if index and typing.get_origin(nxt) is dict:
            nxt = typing.get_args(nxt)[1]  # "per_tool[...]": an entry of the dict
        elif index and typing.get_origin(nxt) is list:
            nxt = typing.get_args(nxt)[0]  # "rules[0]": an item of the list
        if not (isinstance(nxt, type) and issubclass(nxt, msgspec.Struct)):
            return []
        t = nxt
    if isinstance(t, type) and issubclass(t, msgspec.Struct):
        return list(t.__struct_encode_fields__)
    return []
