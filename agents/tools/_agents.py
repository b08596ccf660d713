"""fork, kill, send and wait: the tools through which an agent manages others.

Each one is a thin call to ``ctx.ops`` (the supervisor); a refused operation
(AgentOpError) is an error result carrying its message.
"""

from __future__ import annotations

import functools
from typing import Any

from ._api import AgentOpError, AgentOps, Handler, ToolContext, ToolOutput, ToolSpec
from ._text import plural, seconds

__all__ = ["agent_tools"]

NOT_AVAILABLE = "agent tools are not available here"


def _with_ops(fn: Any) -> Handler:
    @functools.wraps(fn)
    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.ops is None:
            return ToolOutput(NOT_AVAILABLE, is_error=True)
        try:
            return await fn(args, ctx, ctx.ops)
        except AgentOpError as exc:
            return ToolOutput(str(exc) or type(exc).__name__, is_error=True)

    return handler


MAX_FORKS = 100  # children one fork call may start


@_with_ops
async def _fork(args: dict[str, Any], ctx: ToolContext, ops: AgentOps) -> ToolOutput:
    name = args.get("name")
    limits = {k: args[k] for k in ("max_cost_usd", "max_tokens", "max_turns") if k in args}
    # only when asked: the ops of older callers take no budget
    extra: dict[str, Any] = {"budget": limits} if limits else {}
    if "worktree" in args:  # else as the policy says (fork_isolation)
        extra["worktree"] = bool(args["worktree"])
    isolated = " in a git worktree and branch of its own" if args.get("worktree") else ""
    if ("prompt" in args) == ("prompts" in args):
        return ToolOutput(
            "give either 'prompt' (one child) or 'prompts' (one child each)", is_error=True
        )
    if "prompts" in args:
        children = await ops.fork_many(
            ctx.agent_uuid, list(args["prompts"]), model=args.get("model"), name=name, **extra
        )
        return ToolOutput(
            f"forked {plural(len(children), 'agent')}, each working on its prompt{isolated}, "
            "in order: "
            f"{', '.join(children)}. Use wait to get their replies."
        )
    child = await ops.fork(
        ctx.agent_uuid, prompt=args["prompt"], model=args.get("model"), name=name, **extra
    )
    called = f" ({name})" if name else ""
    return ToolOutput(
        f"forked agent {child}{called}; it is working on the prompt{isolated}. "
        "Use wait to get its reply, send to tell it more, kill to stop it."
    )


@_with_ops
async def _kill(args: dict[str, Any], ctx: ToolContext, ops: AgentOps) -> ToolOutput:
    ended = await ops.kill(ctx.agent_uuid, args["agent"])
    if not ended:
        return ToolOutput(f"no agent was running to end ({args['agent']} had already ended)")
    return ToolOutput(f"ended {plural(len(ended), 'agent')}: {', '.join(ended)}")


@_with_ops
async def _send(args: dict[str, Any], ctx: ToolContext, ops: AgentOps) -> ToolOutput:
    mail_id = await ops.send(ctx.agent_uuid, args["to"], args["text"])
    return ToolOutput(f"sent message {mail_id} to {args['to']}")


def _format_wait(results: list[dict[str, Any]]) -> str:
    parts = []
    for r in results:
        agent = r.get("agent", "?")
        status = r.get("status", "unknown")
        reply = r.get("reply")
        if reply:
            parts.append(f"agent {agent}: {status}\n{reply}")
        else:
            parts.append(f"agent {agent}: {status} (no reply)")
    return "\n\n".join(parts) if parts else "(no agents)"


def agent_tools(*, wait_max: float = 1800.0) -> list[ToolSpec]:
    """fork, kill, send and wait. ``wait_max`` caps how long one wait may block."""

    @_with_ops
    async def _wait(args: dict[str, Any], ctx: ToolContext, ops: AgentOps) -> ToolOutput:
        wanted = args.get("timeout")
        limit = wait_max if wanted is None else min(float(wanted), wait_max)
        results = await ops.wait(ctx.agent_uuid, list(args["agents"]), limit)
        return ToolOutput(_format_wait(results))

    agent_ref = "An agent's uuid, a unique prefix of it, or its name."
    return [
        ToolSpec(
            name="fork",
            description=(
                "Start a child agent that inherits your conversation so far and works on "
                "'prompt' at once, while you go on. Returns the child's id; use wait for "
                "its reply. To fan out, give 'prompts' instead: one child per prompt, all "
                "started at once."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "prompt": {
                        "type": "string",
                        "minLength": 1,
                        "description": "What the child should do.",
                    },
                    "prompts": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "maxItems": MAX_FORKS,
                        "description": "Instead of 'prompt': one child for each, in one go.",
                    },
                    "model": {
                        "type": "string",
                        "minLength": 1,
                        "description": (
                            "MODEL or MODEL/THINKING (thinking: none, low, med, high), "
                            "e.g. 'claude-sonnet-4-5/low'. Default: your own."
                        ),
                    },
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "description": "A name for it (with 'prompts': NAME-1, NAME-2...).",
                    },
                    "max_cost_usd": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": (
                            "A budget for the child and its own forks, in US dollars: "
                            "at most what your budget has left."
                        ),
                    },
                    "max_tokens": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "A limit on the tokens the child may spend.",
                    },
                    "max_turns": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "A limit on the child's turns.",
                    },
                    "worktree": {
                        "type": "boolean",
                        "description": (
                            "When your working directory is in a git repository: give each "
                            "child a git worktree and branch of its own (ikigai/<its name>, "
                            "from your HEAD), so that children editing files in parallel "
                            "cannot clobber each other or you. Default: as your policy says."
                        ),
                    },
                },
                "additionalProperties": False,
            },
            handler=_fork,
            timeout=60.0,
        ),
        ToolSpec(
            name="kill",
            description="End one of your descendant agents and all of its own descendants.",
            parameters={
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "minLength": 1, "description": agent_ref}
                },
                "required": ["agent"],
                "additionalProperties": False,
            },
            handler=_kill,
            timeout=60.0,
        ),
        ToolSpec(
            name="send",
            description="Put a message in another agent's mailbox.",
            parameters={
                "type": "object",
                "properties": {
                    "to": {"type": "string", "minLength": 1, "description": agent_ref},
                    "text": {"type": "string", "minLength": 1, "description": "The message."},
                },
                "required": ["to", "text"],
                "additionalProperties": False,
            },
            handler=_send,
            timeout=60.0,
        ),
        ToolSpec(
            name="wait",
            description=(
                "Wait until each of the given agents has answered you or finished its turn "
                "(or ended), then list each one's status and reply. Agents still busy when "
                "the timeout passes are listed as running."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "agents": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "description": "The agents to wait for. " + agent_ref,
                    },
                    "timeout": {
                        "type": "number",
                        "minimum": 0,
                        "description": (
                            f"Seconds to wait at most (default and maximum {seconds(wait_max)})."
                        ),
                    },
                },
                "required": ["agents"],
                "additionalProperties": False,
            },
            handler=_wait,
            timeout=wait_max + 30.0,
        ),
    ]
