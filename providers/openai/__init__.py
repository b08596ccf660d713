"""OpenAI's two wire APIs, and every OpenAI-compatible service.

* ``providers.openai.chat.ChatCodec``: Chat Completions (OpenAI, DeepSeek, xAI,
  OpenRouter, Groq, Mistral, Ollama, llama.cpp, vLLM... with dialect flags).
* ``providers.openai.responses.ResponsesCodec``: the Responses API, stateless.

The codec modules are imported on first use (the registry does it), so
importing this package stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..catalog import Catalog, ModelEntry, ProviderEntry, WireApi, default_catalog

__all__ = ["DIALECT_FLAGS", "compatible_provider", "wire_api_for"]

# The dialect flags the Chat Completions codec understands (see chat.py).
DIALECT_FLAGS: frozenset[str] = frozenset(
    {
        "reasoning_content",
        "openrouter_reasoning",
        "thinking_toggle",
        "content_thinking_chunks",
        "max_tokens_field",
        "no_stream_usage",
    }
)


def compatible_provider(
    name: str,
    base_url: str,
    *,
    api: WireApi = "chat",
    key_env: str | Iterable[str] | None = None,
    dialect: Iterable[str] = (),
    label: str | None = None,
    base_url_env: str | None = None,
    model_prefixes: Iterable[str] = (),
    slash_models: bool = True,
    default_model: ModelEntry | None = None,
) -> ProviderEntry:
    """A provider entry for a custom OpenAI-compatible service from the user's config.

    ``key_env`` None means the service takes no key (a local server): no
    Authorization header is sent. Extra headers are not part of the entry;
    pass them to ``settings_for(name, extra_headers=...)``. Add the entry with
    ``catalog.add_provider(entry)``.
    """
    if api not in ("chat", "responses"):
        raise ValueError(f"provider {name!r}: api must be 'chat' or 'responses', not {api!r}")
    if not name or "/" in name:
        raise ValueError(f"provider name {name!r} must be non-empty and contain no '/'")
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"provider {name!r}: base_url must start with http:// or https://")
    flags = list(dict.fromkeys(dialect))
    unknown = sorted(set(flags) - DIALECT_FLAGS)
    if unknown:
        raise ValueError(
            f"provider {name!r}: unknown dialect flag(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(DIALECT_FLAGS))})"
        )
    keys = [key_env] if isinstance(key_env, str) else list(key_env or ())
    entry = ProviderEntry(
        name=name,
        label=label or name,
        api=api,
        base_url=base_url.rstrip("/"),
        key_env=keys,
        base_url_env=base_url_env,
        dialect=flags,
        model_prefixes=list(model_prefixes),
        slash_models=slash_models,
    )
    if default_model is not None:
        import msgspec

        entry = msgspec.structs.replace(entry, default_model=default_model)
    return entry


def wire_api_for(
    provider: str,
    model: str,
    *,
    override: WireApi | None = None,
    catalog: Catalog | None = None,
) -> WireApi:
    """The API a model is reached through: the config's per-provider override,
    else the catalog's (reasoning models -> responses, others -> chat)."""
    if override is not None:
        return override
    return (catalog or default_catalog()).wire_api(provider, model)
