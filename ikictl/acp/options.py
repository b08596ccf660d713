"""A session's config options and modes: the agent's model, thinking level and
tool policy, as the editor's pickers show them, and setting them.

Modes are the policies too: editors that predate config options show modes
(the ACP docs ask agents to offer both while editors move over)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ikigai.aio import AsyncClient

__all__ = ["OptionError", "config_options", "modes", "set_option"]

LEVELS = ("none", "low", "med", "high")
_LEVEL_NAMES = {"none": "Off", "low": "Low", "med": "Medium", "high": "High"}
_models: list[dict[str, Any]] | None = None  # the catalog, asked once per process


class OptionError(ValueError):
    """A config option or value ikigai does not have; the message names it."""


async def _catalog(client: AsyncClient) -> list[dict[str, Any]]:
    global _models
    if _models is None:
        _models = list(await client.models())  # type: ignore[arg-type]
    return _models


async def _policies(client: AsyncClient, info: dict[str, Any]) -> tuple[list[str], str]:
    status: dict[str, Any] = dict(await client.status())
    known = [str(n) for n in status.get("policies") or []]
    chain = [str(n) for n in info.get("policy") or []]
    current = chain[-1] if chain else str(status.get("default_policy") or "default")
    if current not in known:
        known.append(current)
    return known, current


async def config_options(client: AsyncClient, agent: str) -> list[dict[str, Any]]:
    """The ``configOptions`` of the session on ``agent``, current values set."""
    info: dict[str, Any] = dict(await client.show(agent))
    current = f"{info['provider']}/{info['model']}"
    catalog = await _catalog(client)
    choices = [
        {"value": f"{m['provider']}/{m['model']}", "name": m["model"], "description": m["provider"]}
        for m in catalog
    ]
    if current not in {c["value"] for c in choices}:
        choices.insert(
            0, {"value": current, "name": info["model"], "description": info["provider"]}
        )
    thinking = next(
        (m.get("thinking") or {} for m in catalog if f"{m['provider']}/{m['model']}" == current), {}
    )
    policies, policy = await _policies(client, info)
    return [
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": current,
            "options": choices,
        },
        {
            "id": "thinking",
            "name": "Thinking",
            "category": "thought_level",
            "type": "select",
            "currentValue": info.get("thinking_level") or "none",
            "options": [
                {
                    "value": lv,
                    "name": _LEVEL_NAMES[lv],
                    "description": thinking.get(lv) or _LEVEL_NAMES[lv],
                }
                for lv in LEVELS
            ],
        },
        {
            "id": "policy",
            "name": "Tool policy",
            "description": "which tool calls run, which ask you first, which are refused",
            "category": "mode",
            "type": "select",
            "currentValue": policy,
            "options": [{"value": n, "name": n} for n in policies],
        },
    ]


def modes(options: list[dict[str, Any]]) -> dict[str, Any]:
    """The SessionModeState made of the policy option."""
    policy = next(o for o in options if o["id"] == "policy")
    return {
        "currentModeId": policy["currentValue"],
        "availableModes": [
            {"id": o["value"], "name": o["name"], "description": f"the {o['value']} tool policy"}
            for o in policy["options"]
        ],
    }


async def set_option(client: AsyncClient, agent: str, config_id: str, value: object) -> None:
    """Set one option; a model or level switch waits for a running turn to end."""
    if not isinstance(value, str) or not value or len(value) > 256:
        raise OptionError(f"value: a {config_id} is a name of at most 256 characters")
    if config_id == "model":
        await client.call("agent.set_model", {"agent": agent, "model": value, "queue": True})
    elif config_id == "thinking":
        if value not in LEVELS:
            raise OptionError(f"value: thinking is one of {', '.join(LEVELS)}, not {value[:40]!r}")
        info: dict[str, Any] = dict(await client.show(agent))
        model = f"{info['provider']}/{info['model']}/{value}"
        await client.call("agent.set_model", {"agent": agent, "model": model, "queue": True})
    elif config_id == "policy":
        await client.call("agent.set_policy", {"agent": agent, "policy": value})
    else:
        raise OptionError(
            f"configId: ikigai has model, thinking and policy, not {config_id[:40]!r}"
        )
