"""Gemini generateContent (POST /v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse).

Not written yet: the adapter that speaks this API teaches it to the fake server.
"""

from __future__ import annotations

from ..recorded import RecordedRequest
from ..script import HttpError, Reply

NAME = "google"


def matches(method: str, path: str) -> bool:
    return False


def wants_stream(request: RecordedRequest) -> bool:
    raise NotImplementedError(NAME)


def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    raise NotImplementedError(NAME)


def render_body(reply: Reply, request: RecordedRequest) -> bytes:
    raise NotImplementedError(NAME)


def render_error(error: HttpError, request: RecordedRequest) -> bytes:
    raise NotImplementedError(NAME)
