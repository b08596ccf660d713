"""The commands an actor's queue holds: a prompt (a turn to run), a model
switch and a compaction, each run in order by ``Actor.work``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from providers.modelspec import ResolvedModel
from providers.types import DocumentBlock, ImageBlock, ToolChoice

from ._start import StartAck
from .compactor import CompactOutcome
from .tracing import Cause

# a file sent with a prompt, as its user message carries it
Attached = ImageBlock | DocumentBlock


def stored_files(files: list[Attached]) -> list[dict[str, Any]]:
    """Files as a prompt_queue row keeps them (tagged builtins)."""
    return [msgspec.to_builtins(f) for f in files]


def restored_files(stored: list[dict[str, Any]]) -> list[Attached]:
    """A queue row's files; one that does not read back is dropped."""
    files: list[Attached] = []
    for item in stored:
        try:
            files.append(msgspec.convert(item, Attached))  # type: ignore[arg-type]
        except (msgspec.ValidationError, TypeError):
            continue
    return files


@dataclass
class PromptCmd:
    turn: str
    text: str
    queue_id: int | None  # its prompt_queue row (None: not stored, tests only)
    resume_from: int | None = None  # a turn left waiting for approval: its first row
    # who started it: a person (interactive) or agents and mail (background);
    # its model calls' place in the provider limiter unless the agent has its own
    priority: str = "interactive"
    # an idle agent's prompt is acknowledged by its turn's start (one write,
    # no queue row): the submitter waits on this for the stored first row
    ack: StartAck | None = None
    # files sent with the prompt (agent.prompt attachments), after its text
    attachments: list[Attached] = field(default_factory=list)
    # the spans it continues (a script's traceparent, the fork or mail that
    # caused it): the first is its turn span's parent (agents/tracing)
    causes: tuple[Cause, ...] = ()
    # agent.prompt's tool_choice (None: auto): a forced tool only on the turn's
    # first model call, "none" on each (agents/_fitting.py)
    tool_choice: ToolChoice | None = None
    # agent.prompt's schema: the JSON Schema the turn's final answer must match
    schema: dict[str, Any] | None = None


def stored_choice(choice: ToolChoice | None) -> dict[str, str] | None:
    """A tool choice as its prompt_queue row keeps it (store/_turns.py)."""
    return None if choice is None else msgspec.to_builtins(choice)


def restored_choice(stored: dict[str, Any] | None) -> ToolChoice | None:
    """A queue row's tool choice; one that does not read back is auto (None)."""
    if not stored:
        return None
    try:
        return msgspec.convert(stored, ToolChoice)
    except (msgspec.ValidationError, ValueError, TypeError):
        return None


@dataclass
class SwitchCmd:
    resolved: ResolvedModel
    done: trio.Event = field(default_factory=trio.Event)


@dataclass
class CompactCmd:
    keep_turns: int | None
    done: trio.Event = field(default_factory=trio.Event)
    outcome: CompactOutcome | None = None
