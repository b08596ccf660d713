"""Params of every control method, as msgspec Structs: the daemon decodes each
request's params into its Struct, and a mismatch becomes -32602 naming the
field. Clients need not import this (see daemon/protocol.py)."""

from __future__ import annotations

from typing import Literal

import msgspec

from . import protocol as p


class _P(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    pass


class NoParams(_P):
    pass


class ModelsList(_P):
    provider: str | None = None


class ProvidersCheck(_P):
    provider: str


class AgentRef(_P):
    agent: str


class Create(_P):
    model: str | None = None
    name: str | None = None
    system: str = ""
    prompt: str | None = None
    wait: bool = False


class ListAgents(_P):
    include_dead: bool = False


class Prompt(_P):
    agent: str
    text: str
    wait: bool = False


class Subscribe(_P):
    agent: str
    from_seq: int | None = None


class Unsubscribe(_P):
    subscription: int


class Cancel(_P):
    agent: str
    at_boundary: bool = False


class Fork(_P):
    agent: str
    model: str | None = None
    at: int | None = None
    name: str | None = None
    prompt: str | None = None
    wait: bool = False


class SetModel(_P):
    agent: str
    model: str
    queue: bool = False


class SetSystem(_P):
    agent: str
    text: str


class History(_P):
    agent: str
    limit: int | None = msgspec.field(default=None)
    before: int | None = None


class Usage(_P):
    agent: str | None = None
    descendants: bool = False


class Label(_P):
    agent: str
    label: str | None = None


class MailSend(_P):
    to: str
    text: str
    from_: str | None = msgspec.field(default=None, name="from")


class Inbox(_P):
    agent: str
    unread: bool = True


PARAMS: dict[str, type[_P]] = {
    p.DAEMON_STATUS: NoParams,
    p.DAEMON_SHUTDOWN: NoParams,
    p.DAEMON_RELOAD: NoParams,
    p.MODELS_LIST: ModelsList,
    p.PROVIDERS_LIST: NoParams,
    p.PROVIDERS_CHECK: ProvidersCheck,
    p.AGENT_CREATE: Create,
    p.AGENT_LIST: ListAgents,
    p.AGENT_SHOW: AgentRef,
    p.AGENT_PROMPT: Prompt,
    p.AGENT_SUBSCRIBE: Subscribe,
    p.AGENT_UNSUBSCRIBE: Unsubscribe,
    p.AGENT_CANCEL: Cancel,
    p.AGENT_KILL: AgentRef,
    p.AGENT_FORK: Fork,
    p.AGENT_SET_MODEL: SetModel,
    p.AGENT_SET_SYSTEM: SetSystem,
    p.AGENT_HISTORY: History,
    p.AGENT_USAGE: Usage,
    p.AGENT_CLEAR: AgentRef,
    p.AGENT_MARK: Label,
    p.AGENT_REWIND: Label,
    p.MAIL_SEND: MailSend,
    p.MAIL_INBOX: Inbox,
}

HistoryOp = Literal["clear", "mark", "rewind"]


def decode_params(method: str, raw: object) -> _P:
    """Params for ``method`` from the request's ``params`` (absent: {})."""
    kind = PARAMS[method]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise p.RpcError(p.INVALID_PARAMS, "params must be an object")
    try:
        return msgspec.convert(raw, type=kind)
    except msgspec.ValidationError as e:
        text = str(e)
        # msgspec says "... - at `$.agent`": name the field plainly
        if " - at `$." in text:
            what, _, where = text.rpartition(" - at `$.")
            text = f"{where.rstrip('`')}: {what}"
        raise p.RpcError(p.INVALID_PARAMS, f"invalid params for {method}: {text}") from None
