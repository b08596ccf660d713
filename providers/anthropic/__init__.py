"""Anthropic Messages API adapter (POST /v1/messages, streamed and not)."""

from __future__ import annotations

from .codec import AnthropicCodec

__all__ = ["AnthropicCodec"]
