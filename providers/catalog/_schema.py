"""The shape of the catalog data files (one JSON file per provider family)."""

from __future__ import annotations

from typing import Literal

import msgspec

WireApi = Literal["chat", "responses", "messages", "generate_content"]


class ThinkingProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a model thinks and how much of it can be asked for.

    kind:
      none      the model cannot think
      budget    a token budget between ``min`` and ``max``; 0 turns it off when ``can_disable``
      effort    named efforts (``levels``, lowest first), e.g. OpenAI reasoning.effort
      adaptive  Anthropic adaptive thinking; ``levels`` are the efforts it takes
      level     named levels (``levels``, lowest first), e.g. Gemini 3 thinkingLevel
      always    thinks with no control at all (e.g. deepseek-reasoner)
    """

    kind: Literal["none", "budget", "effort", "adaptive", "level", "always"]
    min: int | None = None
    max: int | None = None
    levels: list[str] | None = None
    can_disable: bool = True


class Capabilities(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    tools: bool = True
    vision: bool = False
    streaming: bool = True
    json_schema: bool = False
    # takes PDF documents (a document block, a file part): the daemon refuses a
    # PDF attachment for a model without it (providers/attachment_limits.py)
    documents: bool = False


class Prices(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """US dollars per million tokens."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(
        self,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """US dollars. input_tokens counts the whole prompt, cache reads and
        writes included; those two parts are billed at their own rates when
        known, else at the input rate. Thinking is part of output_tokens."""
        fresh = max(input_tokens - cached_tokens - cache_write_tokens, 0)
        dollars = (
            fresh * self.input
            + cached_tokens * (self.cached_input if self.cached_input is not None else self.input)
            + cache_write_tokens
            * (self.cache_write if self.cache_write is not None else self.input)
            + output_tokens * self.output
        )
        return dollars / 1_000_000


class ModelEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    provider: str = ""  # filled from the file's provider when empty
    aliases: list[str] = msgspec.field(default_factory=list)
    api: WireApi | None = None  # None: the provider's default api
    context_window: int
    max_output_tokens: int
    thinking: ThinkingProfile = msgspec.field(default_factory=lambda: ThinkingProfile(kind="none"))
    capabilities: Capabilities = msgspec.field(default_factory=Capabilities)
    prices: Prices | None = None
    source: str | None = None  # a key of the file's ``sources``
    notes: str | None = None


class ProviderEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A service and how to reach it. Custom ones come from the user's config."""

    name: str
    label: str
    api: WireApi
    base_url: str
    key_env: list[str] = msgspec.field(default_factory=list)  # first set one wins
    base_url_env: str | None = None
    # dialect flags understood by the Chat Completions adapter
    dialect: list[str] = msgspec.field(default_factory=list)
    model_prefixes: list[str] = msgspec.field(default_factory=list)  # for inference
    # model names may contain "/" (OpenRouter's vendor/model)
    slash_models: bool = False
    # what an unknown model of this provider is assumed to be
    default_model: ModelEntry | None = None


class CatalogFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    retrieved: str  # date the figures were checked
    sources: dict[str, str]  # key -> where the figures came from
    providers: list[ProviderEntry] = msgspec.field(default_factory=list)
    models: list[ModelEntry] = msgspec.field(default_factory=list)
    provider: str | None = None  # default provider for the models of this file
