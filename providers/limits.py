"""Request limits a wire API enforces whatever the model: a request outside
them is answered 400, so the request is brought inside and the user told."""

from __future__ import annotations

# the smallest output cap each API accepts (OpenAI Responses: "integer >= 16")
MIN_OUTPUT_TOKENS: dict[str, int] = {"responses": 16}


def output_cap(api: str, wanted: int) -> int:
    """``wanted`` raised to the API's minimum."""
    return max(wanted, MIN_OUTPUT_TOKENS.get(api, 1))
