"""Google Gemini (generateContent) adapter."""

from .codec import GeminiCodec

__all__ = ["GeminiCodec"]
