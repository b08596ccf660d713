"""Pick the codec for a wire API and build a Provider from settings."""

from __future__ import annotations

import importlib

import httpx

from .base import Codec
from .catalog import Catalog, WireApi
from .h1 import StreamClient
from .http import HttpProvider
from .settings import ProviderSettings

# wire api -> (module, class); imported on first use so a process that talks to
# one provider does not load the others.
CODECS: dict[str, tuple[str, str]] = {
    "chat": ("providers.openai.chat", "ChatCodec"),
    "responses": ("providers.openai.responses", "ResponsesCodec"),
    "messages": ("providers.anthropic.codec", "AnthropicCodec"),
    "generate_content": ("providers.google.codec", "GeminiCodec"),
}


def codec_for(
    settings: ProviderSettings, api: WireApi | None = None, catalog: Catalog | None = None
) -> Codec:
    """``catalog``: the one the daemon built from config (its per-model limits
    decide the output caps a codec sends); None: the shipped one."""
    module_name, class_name = CODECS[api or settings.api]
    module = importlib.import_module(module_name)
    codec: Codec = getattr(module, class_name)(settings, catalog)
    return codec


def make_provider(
    settings: ProviderSettings,
    *,
    api: WireApi | None = None,
    client: httpx.AsyncClient | None = None,
    streamer: StreamClient | None = None,
    catalog: Catalog | None = None,
) -> HttpProvider:
    """``client`` (whole calls) and ``streamer`` (streamed calls): shared ones,
    or None for ones the provider owns and closes."""
    if api is not None and api != settings.api:
        settings = settings.with_api(api)
    codec = codec_for(settings, catalog=catalog)
    return HttpProvider(codec, settings, client=client, streamer=streamer)
