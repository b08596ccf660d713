"""The tool registry: definitions for the provider, and running tool calls.

``ToolRegistry.run`` never raises to the turn loop: an unknown tool, arguments
that are not a JSON object or do not fit the schema, a handler that raises, a
handler that overruns its timeout - each becomes an error result the model can
read and act on. Only ``trio.Cancelled`` goes through: a cancelled turn cancels
its tools (and the tools clean up, e.g. bash kills its process group).

Every result's text is valid Unicode (lone surrogates become U+FFFD) and at
most the tool's ``max_output`` characters, whatever the tool printed. The
registry also hands every tool the daemon's ``ToolEnv`` (the environment of
processes: no API keys) and ``Guard`` (files the file tools refuse) through
the ToolContext.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Sequence

import msgspec
import structlog
import trio

from providers.types import Tool, ToolCallBlock, ToolResultBlock

from ._api import ToolContext, ToolOutput, ToolSpec
from ._env import ToolEnv
from ._guard import Guard
from ._text import clean, clip, cut_middle, seconds
from ._validate import validate

__all__ = ["ToolRegistry"]

log = structlog.get_logger(__name__)

# What every provider accepts as a function name (OpenAI and Anthropic: this
# pattern; Gemini is a little looser).
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_RAW_QUOTE_LIMIT = 200
_NAME_QUOTE_LIMIT = 100
_NO_SPEC_LIMIT = 8 * 1024  # characters of an answer about a tool that is not registered


class ToolRegistry:
    """Tools by name. Register them once, then hand ``definitions()`` to the
    provider and every tool call of a response to ``run`` or ``run_all``."""

    def __init__(
        self,
        specs: Iterable[ToolSpec] = (),
        *,
        env: ToolEnv | None = None,
        guard: Guard | None = None,
    ) -> None:
        """``env`` and ``guard`` go to every tool whose ToolContext has none
        (the daemon builds them from its config and paths)."""
        self.env = env
        self.guard = guard
        self._specs: dict[str, ToolSpec] = {}
        self._definitions: list[Tool] | None = None
        for spec in specs:
            self.register(spec)

    # ------------------------------------------------------------ registering

    def register(self, spec: ToolSpec) -> None:
        """Add a tool. A name already registered, a name providers would refuse,
        or parameters that are not an object schema raise ValueError."""
        if spec.name in self._specs:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        if not _NAME.match(spec.name):
            raise ValueError(f"tool name {spec.name!r} must be 1-64 letters, digits, '_' or '-'")
        params = spec.parameters
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            raise ValueError(f"tool {spec.name!r}: parameters must be a JSON Schema of type object")
        if spec.timeout <= 0:
            raise ValueError(f"tool {spec.name!r}: timeout must be positive")
        if spec.max_output <= 0:
            raise ValueError(f"tool {spec.name!r}: max_output must be positive")
        self._specs[spec.name] = spec
        self._definitions = None

    def names(self) -> list[str]:
        """The registered tool names, sorted."""
        return sorted(self._specs)

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter([self._specs[n] for n in self.names()])

    def definitions(self) -> list[Tool]:
        """The tools as the provider sees them, sorted by name (a stable order
        keeps the provider's prompt cache warm). The same list object until a
        tool is registered, so the size of the definitions is measured once."""
        if self._definitions is None:
            self._definitions = [
                Tool(name=s.name, description=s.description, parameters=s.parameters, strict=False)
                for s in self
            ]
        return self._definitions

    def with_extra(self, specs: Sequence[ToolSpec]) -> ToolRegistry:
        """These tools and ``specs`` (an agent's MCP tools) as one registry;
        a name already here keeps its own tool."""
        if not specs:
            return self
        view = ToolRegistry(env=self.env, guard=self.guard)
        view._specs = {**{s.name: s for s in specs}, **self._specs}
        return view

    def server_of(self, name: str) -> str | None:
        """The MCP server of tool ``name`` (None: a built-in or unknown tool)."""
        spec = self._specs.get(name)
        return spec.server if spec is not None else None

    # ------------------------------------------------------------ running

    async def run(self, call: ToolCallBlock, ctx: ToolContext) -> ToolResultBlock:
        """Run one tool call; every failure is an error result. Raises only
        ``trio.Cancelled`` (when the caller is cancelled)."""
        ctx = dataclasses.replace(
            ctx,
            tool_env=ctx.tool_env or self.env,
            guard=ctx.guard or self.guard,
            call_id=call.id,
        )
        output = await self._run(call, ctx)
        spec = self._specs.get(call.name)
        limit = spec.max_output if spec is not None else _NO_SPEC_LIMIT
        content = output.content if isinstance(output.content, str) else str(output.content)
        content = cut_middle(clean(content), limit)
        return ToolResultBlock(
            tool_call_id=call.id,
            content=content,
            is_error=bool(output.is_error),
            name=call.name,
            images=list(output.images),
        )

    async def run_all(
        self, calls: Sequence[ToolCallBlock], ctx: ToolContext, limit: int = 8
    ) -> list[ToolResultBlock]:
        """Run ``calls`` concurrently, at most ``limit`` at once; the results
        come back in the order of the calls."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        results: list[ToolResultBlock | None] = [None] * len(calls)
        limiter = trio.CapacityLimiter(limit)

        async def one(i: int, call: ToolCallBlock) -> None:
            async with limiter:
                tracer = ctx.tracer
                if tracer is None:
                    results[i] = await self.run(call, ctx)
                    return
                # current in this call's task: a fork or a mail it makes links to it
                server = self.server_of(call.name)
                with tracer.tool(call, server=server, decision="allow") as span:
                    results[i] = done = await self.run(call, ctx)
                    span.end(done.content, done.is_error)

        async with trio.open_nursery() as nursery:
            for i, call in enumerate(calls):
                nursery.start_soon(one, i, call)
        done = [r for r in results if r is not None]
        assert len(done) == len(calls)
        return done

    async def _run(self, call: ToolCallBlock, ctx: ToolContext) -> ToolOutput:
        spec = self._specs.get(call.name)
        if spec is None:
            available = ", ".join(self.names()) or "none"
            return ToolOutput(
                f"unknown tool {clip(call.name, _NAME_QUOTE_LIMIT)!r}; "
                f"the tools available are: {available}",
                is_error=True,
            )
        if call.raw_arguments is not None:
            return ToolOutput(_raw_arguments_error(call.name, call.raw_arguments), is_error=True)
        args = call.arguments
        try:
            problems = validate(spec.parameters, args)
        except RecursionError:
            problems = ["nested too deeply to check"]
        if problems:
            return ToolOutput(
                f"invalid arguments for tool {call.name!r}: " + "; ".join(problems),
                is_error=True,
            )

        output: ToolOutput | None = None
        try:
            with trio.move_on_after(spec.timeout) as scope:
                result = await spec.handler(dict(args), ctx)
                output = _as_output(result, spec.name)
        except Exception as exc:
            # trio.Cancelled is a BaseException and goes through untouched.
            log.warning("tool.failed", tool=spec.name, error=_describe(exc), exc_info=exc)
            return ToolOutput(f"tool {spec.name} failed: {_describe(exc)}", is_error=True)
        if scope.cancelled_caught or output is None:
            return ToolOutput(
                f"tool {spec.name} timed out after {seconds(spec.timeout)} s", is_error=True
            )
        return output


def _raw_arguments_error(name: str, raw: str) -> str:
    """Why a call whose arguments are not a JSON object was not run. Text that
    does not parse at all is almost always a reply cut off by the output limit
    in the middle of the call: saying so lets the model retry with less."""
    quoted = clip(raw, _RAW_QUOTE_LIMIT)
    try:
        msgspec.json.decode(raw)
    except UnicodeError:  # a lone surrogate: not JSON text at all
        return f"the arguments for tool {name!r} are not valid Unicode text; got: {quoted!r}"
    except msgspec.DecodeError:
        return (
            f"the arguments for tool {name!r} were cut off by the output limit "
            "(max_output_tokens) before they were complete JSON, so the call was not run; "
            f"send it again with shorter arguments (or split the work); got: {quoted!r}"
        )
    return f"the arguments for tool {name!r} must be a JSON object; got: {quoted!r}"


def _as_output(result: object, name: str) -> ToolOutput:
    if isinstance(result, ToolOutput):
        return result
    if isinstance(result, str):
        return ToolOutput(result)
    raise TypeError(f"handler of {name} returned {type(result).__name__}, not ToolOutput")


def _describe(exc: BaseException) -> str:
    """'ValueError: bad thing' - the type and message, never a traceback. An
    exception group is described by its leaves."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [_describe(e) for e in exc.exceptions]
        return "; ".join(leaves[:5]) + ("; ..." if len(leaves) > 5 else "")
    message = str(exc)
    name = type(exc).__name__
    return f"{name}: {message}" if message else name
