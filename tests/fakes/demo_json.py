"""The demo responder's structured answers: a JSON value for the schema a
request asks for (natively, or as the ``final_result`` tool), filled from
``Key: value`` lines of the prompt — a stand-in for extraction that is
deterministic, so the examples and their tests know what comes back."""

from __future__ import annotations

import re
from typing import Any

ANSWER_TOOL = "final_result"
_MAX_DEPTH = 12


def asked_schema(body: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """(the schema the request asks the answer to match, whether through the
    final_result tool), or (None, False)."""
    fmt = (body.get("output_config") or {}).get("format")  # Anthropic
    if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
        return fmt["schema"], False
    rf = body.get("response_format")  # Chat Completions
    if isinstance(rf, dict) and isinstance((rf.get("json_schema") or {}).get("schema"), dict):
        return rf["json_schema"]["schema"], False
    tf = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(tf, dict) and isinstance(tf.get("schema"), dict):  # Responses
        return tf["schema"], False
    gen = body.get("generationConfig")  # Gemini
    if isinstance(gen, dict):
        for key in ("responseJsonSchema", "responseSchema"):
            if isinstance(gen.get(key), dict):
                return gen[key], False
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if fn.get("name") == ANSWER_TOOL:
            params = fn.get("input_schema") or fn.get("parameters")
            if isinstance(params, dict):
                return params, True
        for decl in tool.get("functionDeclarations") or []:
            if isinstance(decl, dict) and decl.get("name") == ANSWER_TOOL:
                params = decl.get("parametersJsonSchema") or decl.get("parameters")
                if isinstance(params, dict):
                    return params, True
    return None, False


def fields_of(prompt: str) -> dict[str, str]:
    """``Key: value`` lines of the prompt, keys lowercased with _ for spaces
    (a key given twice: its last value)."""
    found: dict[str, str] = {}
    for line in prompt.splitlines():
        m = re.match(r"\s*([A-Za-z][A-Za-z0-9 _-]{0,40}):\s*(.+?)\s*$", line)
        if m:
            key = re.sub(r"[\s-]+", "_", m.group(1).strip().lower())
            found[key] = m.group(2)  # the newest wins
    return found


def value_for(schema: Any, fields: dict[str, str], name: str = "", depth: int = 0) -> Any:
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return None
    kinds = schema.get("type")
    kind = next((k for k in kinds if k != "null"), "null") if isinstance(kinds, list) else kinds
    if isinstance(kind, str):
        kind = kind.lower()
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        raw = fields.get(name, "").lower()
        return next((v for v in schema["enum"] if str(v).lower() == raw), schema["enum"][0])
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return {k: value_for(v, fields, k.lower(), depth + 1) for k, v in props.items()}
    if kind == "array":
        raw = fields.get(name)
        if raw is None:
            return []
        return [value_for(schema.get("items"), {name: part.strip()}, name, depth + 1) for part in raw.split(",")]
    raw = fields.get(name, "")
    if kind in ("integer", "number"):
        m = re.search(r"-?\d+(?:\.\d+)?", raw.replace(",", ""))
        number = float(m.group()) if m else 0.0
        return int(number) if kind == "integer" else number
    if kind == "boolean":
        return raw.lower() in ("yes", "true", "1", "y")
    if kind == "null":
        return None
    return raw
