"""A wire with no provider: ``POST /raw/...`` answers the reply's text as SSE
``data:`` lines (one per piece), or as a JSON object. For testing the server itself."""

from __future__ import annotations

import json

from ..recorded import RecordedRequest
from ..script import HttpError, Reply, split

NAME = "raw"


def matches(method: str, path: str) -> bool:
    return path.startswith("/raw/")


def wants_stream(request: RecordedRequest) -> bool:
    return bool(isinstance(request.json, dict) and request.json.get("stream"))


def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    events = [f"data: {json.dumps({'text': p})}\n\n".encode() for p in split(reply.text, reply.pieces)]
    events.append(f"data: {json.dumps({'finish': reply.finish_reason})}\n\n".encode())
    return events


def render_body(reply: Reply, request: RecordedRequest) -> bytes:
    return json.dumps({"text": reply.text, "finish": reply.finish_reason}).encode()


def render_error(error: HttpError, request: RecordedRequest) -> bytes:
    return json.dumps({"error": {"message": error.message, "code": error.code}}).encode()
