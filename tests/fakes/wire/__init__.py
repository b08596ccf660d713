"""Wire formats the fake server speaks, one module each.

A wire module defines:

    NAME: str
    def matches(method: str, path: str) -> bool
    def wants_stream(request: RecordedRequest) -> bool
    def render_stream(reply: Reply, request: RecordedRequest) -> list[bytes]
        # the streamed body, one element per event, already framed (e.g. SSE)
    def render_body(reply: Reply, request: RecordedRequest) -> bytes
        # the whole non-streamed JSON body
    def render_error(error: HttpError, request: RecordedRequest) -> bytes
        # the provider's error body for a scripted HTTP error
    def response_headers(reply: Reply, request: RecordedRequest) -> dict[str, str]
        # optional: headers the real API adds (request ids, ...)
    def reject(request: RecordedRequest) -> HttpError | None
        # optional: the error the real server answers to a body it refuses

Rendering is pure: the server applies chunking, delays and faults to the bytes.
"""

from __future__ import annotations

from types import ModuleType

from . import anthropic, google, llamacpp_responses, openai_chat, openai_responses, raw

# llamacpp_responses before openai_responses: its paths end in /responses too
WIRES: list[ModuleType] = [
    raw,
    openai_chat,
    llamacpp_responses,
    openai_responses,
    anthropic,
    google,
]


def wire_for(method: str, path: str) -> ModuleType | None:
    for wire in WIRES:
        if wire.matches(method, path):
            return wire
    return None
