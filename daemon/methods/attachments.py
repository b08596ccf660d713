"""``agent.prompt``'s ``attachments``, checked before anything is stored or
sent: each becomes the image or document block the turn's user message
carries after its text.

An attachment is exactly one of ``data`` (base64, with its ``media_type``),
``path`` (an absolute path on the daemon's machine: ikictl and the daemon
run as the same user) or ``url`` (http/https, fetched here, so the history
never depends on it staying up). What it may be: a picture (PNG, JPEG, GIF,
WEBP), a PDF, or text (inlined with its name; UTF-8). A path's or URL's type
is told by the bytes' magic number, then by the URL's Content-Type or the
file's extension, then by whether the bytes are text; a given
``media_type`` wins, except that a picture's own format corrects a wrong
image type. Then the agent's model must take it (a picture: vision; a PDF:
documents) and its wire API's limits must hold
(providers/attachment_limits.py), counting the files already in its
context. Each refusal is -32602 naming the field (``attachments[2].path``)
and the limit. A prompt for an agent another daemon runs is forwarded with
its files read here when that daemon is on another machine (``forwarded``)."""

from __future__ import annotations

import base64
import binascii
import functools
import mimetypes
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import trio

import protocol as p
from daemon.methods.attachment_io import Loaded, Refused, read_path, read_url
from protocol import filetypes as ft
from protocol import params as P
from providers.attachment_limits import refusal
from providers.modelspec import parse_model_spec
from providers.types import DocumentBlock, ImageBlock

if TYPE_CHECKING:
    from agents import Actor, Supervisor
    from agents._commands import Attached
    from agents.tools import Guard
    from daemon.server import Connection
    from providers.catalog import Catalog

__all__ = [
    "MAX_ATTACHMENTS",
    "MAX_FILE_BYTES",
    "MAX_TEXT_BYTES",
    "MAX_TOTAL_BYTES",
    "checked_files",
    "forwarded",
    "inlined",
]

MAX_ATTACHMENTS = 20  # files a prompt carries
MAX_FILE_BYTES = 32 * 1024 * 1024  # one picture or PDF (no API takes a larger request)
MAX_TEXT_BYTES = 1024 * 1024  # one text file: it is inlined in the prompt
MAX_TOTAL_BYTES = 32 * 1024 * 1024  # every file of one prompt together
_IN_THREAD = 256 * 1024  # a file this large is encoded in a worker thread
# an API-taking model to suggest, in this order, when the agent's does not take a file
_SUGGEST_FROM = ("anthropic", "openai", "google")


class Model(NamedTuple):
    """What the agent's model takes."""

    label: str  # provider/model
    api: str  # its wire API
    vision: bool
    documents: bool
    catalog: Catalog
    provider: str
    default: str | None  # the daemon's default model (its text, as config says it)


class _Ask(NamedTuple):
    index: int
    field: str  # where the file came from: "path", "url" or "data"


def _refuse(i: int, field: str, why: str) -> p.RpcError:
    return p.RpcError(p.INVALID_PARAMS, f"attachments[{i}].{field}: {why}")


def _shown_type(text: str) -> str:
    return P.excerpt(text, 60).encode("ascii", "backslashreplace").decode()


def model_of(sup: Supervisor, actor: Actor, default: str | None = None) -> Model:
    """The facts of the agent's model its files are checked against."""
    catalog = sup.pool.catalog
    entry, _known = catalog.entry_or_default(actor.provider, actor.model)
    api = catalog.wire_api(actor.provider, actor.model)
    caps = entry.capabilities
    return Model(
        f"{actor.provider}/{actor.model}",
        api,
        caps.vision,
        caps.documents,
        catalog,
        actor.provider,
        default,
    )


def _takes(model: Model, provider: str, entry_id: str, want: str) -> bool:
    entry, _known = model.catalog.entry_or_default(provider, entry_id)
    return bool(getattr(entry.capabilities, want))


def _suggestion(model: Model, want: str) -> str | None:
    """A model that takes ``want`` ("vision" or "documents"): the daemon's
    default model, else the newest of the agent's provider, else of one of
    the big three."""
    if model.default:
        try:
            spec = parse_model_spec(model.default, model.catalog)
        except ValueError:
            spec = None
        if spec is not None and spec.provider and _takes(model, spec.provider, spec.model, want):
            return f"{spec.provider}/{spec.model}"
    order = [model.provider, *(x for x in _SUGGEST_FROM if x != model.provider)]
    for provider in order:
        # (the catalog lists each provider's models oldest first)
        for entry in reversed(model.catalog.models_of(provider)):
            if _takes(model, entry.provider, entry.id, want):
                return f"{entry.provider}/{entry.id}"
    return None


async def checked_files(
    attachments: list[P.Attachment], sup: Supervisor, actor: Actor, default: str | None = None
) -> list[Attached]:
    """The blocks of ``attachments``, in order (RpcError -32602 for the first
    that cannot be sent to the agent's model). ``default``: the daemon's
    default model, suggested first when the agent's does not take a file."""
    if len(attachments) > MAX_ATTACHMENTS:
        raise p.RpcError(
            p.INVALID_PARAMS,
            f"attachments: at most {MAX_ATTACHMENTS} a prompt ({len(attachments)} given)",
        )
    if not attachments:
        return []
    for i, a in enumerate(attachments):  # the shape of every one before any file is read
        _source(i, a)
    model = model_of(sup, actor, default)
    guard = sup.deps.tools.guard
    blocks: list[Attached] = []
    asks: list[_Ask] = []
    total = 0
    for i, a in enumerate(attachments):
        field = _source(i, a)
        try:
            loaded = await _load(a, field, guard)
        except Refused as e:
            raise _refuse(i, field, str(e)) from None
        if len(loaded.data) > MAX_FILE_BYTES or total + len(loaded.data) > MAX_TOTAL_BYTES:
            raise _refuse(i, field, _too_big(len(loaded.data), total))
        total += len(loaded.data)
        if len(loaded.data) > _IN_THREAD:  # its base64 or text costs the event loop
            block = await trio.to_thread.run_sync(_block, i, a, field, loaded)
        else:
            block = _block(i, a, field, loaded)
        _model_takes(i, field, block, model)
        blocks.append(block)
        asks.append(_Ask(i, field))
    await _api_takes(model, blocks, asks, attachments, await _in_context(actor))
    return blocks


async def _in_context(actor: Actor) -> list[Attached]:
    """The files the agent's context holds (its next request sends them again)."""
    return [
        b
        for m in await actor.context()
        if m.role == "user"
        for b in m.content
        if isinstance(b, ImageBlock | DocumentBlock)
    ]


def _too_big(size: int, before: int) -> str:
    if size > MAX_FILE_BYTES:
        return f"{size} bytes; a file is at most {MAX_FILE_BYTES} bytes"
    return (
        f"{size} bytes, with the {before} before it over the {MAX_TOTAL_BYTES} bytes "
        "the files of one prompt may hold together"
    )


def _source(i: int, a: P.Attachment) -> str:
    """Which of path, url and data the attachment gives (exactly one)."""
    given = [f for f, v in (("path", a.path), ("url", a.url), ("data", a.data)) if v is not None]
    if len(given) > 1:
        raise _refuse(
            i, given[1], f"give one of path, url and data, not {' and '.join(given)} together"
        )
    if not given:
        raise _refuse(i, "data", "required (give path, url, or data: base64 with its media_type)")
    if given[0] == "data" and a.media_type is None:
        raise _refuse(i, "media_type", "required with data (e.g. image/png, application/pdf)")
    if a.media_type is not None and ft.kind_of(ft.normalized(a.media_type)) is None:
        raise _refuse(i, "media_type", f"{_shown_type(a.media_type)} is not taken ({ft.TAKEN})")
    return given[0]


async def _load(a: P.Attachment, field: str, guard: Guard | None) -> Loaded:
    if field == "path":
        assert a.path is not None
        loaded = await read_path(a.path, MAX_FILE_BYTES, guard)
    elif field == "url":
        assert a.url is not None
        loaded = await read_url(a.url, MAX_FILE_BYTES)
    else:
        assert a.data is not None
        loaded = Loaded(_decoded(a.data), "")
    return loaded._replace(name=a.name or loaded.name)


def _decoded(data: str) -> bytes:
    if not data or len(data) % 4 or not data.isascii():
        raise Refused("not valid base64")
    size = len(data) // 4 * 3 - data[-2:].count("=")
    if size > MAX_FILE_BYTES:  # refused before the decoding costs anything
        raise Refused(f"{size} bytes; a file is at most {MAX_FILE_BYTES} bytes")
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        raise Refused("not valid base64") from None


def _media_type(i: int, a: P.Attachment, field: str, loaded: Loaded) -> str:
    """The attachment's media type (see the module doc)."""
    sniffed = ft.sniff(loaded.data[:1024])
    if a.media_type is not None:
        given = ft.normalized(a.media_type)
        if given in ft.IMAGE_TYPES:
            if sniffed in ft.IMAGE_TYPES:
                return sniffed  # a picture is what its bytes are, whatever it was called
            raise _refuse(i, field, f"not a picture: its bytes are no {', '.join(ft.IMAGE_TYPES)}")
        if given == ft.PDF and sniffed != ft.PDF:
            raise _refuse(i, field, "not a PDF (it has no %PDF- header)")
        if given != ft.PDF and sniffed is not None:
            raise _refuse(i, field, f"its bytes are {sniffed}, not {given}: give that media_type")
        return given
    if sniffed is not None:
        return sniffed
    said = ft.normalized(loaded.media_type) if loaded.media_type else None
    if said is not None and ft.kind_of(said) == "text":
        return said
    guessed, _ = mimetypes.guess_type(loaded.name, strict=False)
    guessed = ft.normalized(guessed) if guessed else None
    if guessed is not None and ft.kind_of(guessed) == "text":
        return guessed
    if ft.as_text(loaded.data, loaded.charset) is not None:
        return "text/plain"
    what = said or guessed or "binary data of no known type"
    raise _refuse(i, field, f"{_shown_type(what)} is not taken ({ft.TAKEN})")


def _block(i: int, a: P.Attachment, field: str, loaded: Loaded) -> Attached:
    kind = _media_type(i, a, field, loaded)
    name = loaded.name or None
    data = loaded.data
    if ft.kind_of(kind) == "text":
        if len(data) > MAX_TEXT_BYTES:
            raise _refuse(
                i, field, f"{len(data)} bytes of text; a text file is at most {MAX_TEXT_BYTES}"
            )
        text = ft.as_text(data, loaded.charset)
        if text is None:
            raise _refuse(i, field, f"not {loaded.charset or 'UTF-8'} text ({kind} was given)")
        return DocumentBlock(media_type=kind, text=text, name=name)
    if not data:
        raise _refuse(i, field, "the file is empty")
    encoded = base64.b64encode(data).decode("ascii") if field != "data" else a.data
    if kind == ft.PDF:
        return DocumentBlock(media_type=kind, data=encoded, name=name)
    return ImageBlock(media_type=kind, data=encoded, name=name)


def _model_takes(i: int, field: str, block: Attached, model: Model) -> None:
    if isinstance(block, ImageBlock) and not model.vision:
        other = _suggestion(model, "vision")
        hint = f"switch to one that does (e.g. {other}: agent.set_model)" if other else ""
        raise _refuse(
            i, field, f"model {model.label} takes no pictures; {hint or 'describe it in text'}"
        )
    if isinstance(block, DocumentBlock) and block.data is not None and not model.documents:
        other = _suggestion(model, "documents")
        also = f", or switch to a model that takes PDFs (e.g. {other})" if other else ""
        raise _refuse(
            i,
            field,
            f"model {model.label} takes no PDF documents; convert it to text (e.g. "
            f"pdftotext) and attach the text{also}",
        )


async def _api_takes(
    model: Model,
    blocks: list[Attached],
    asks: list[_Ask],
    given: list[P.Attachment],
    earlier: list[Attached],
) -> None:
    """The wire API's own limits (sizes, pages, counts per request), counting
    the files already in the agent's context: the next request carries them
    too, and one over the API's limit would fail every request after it."""
    check = functools.partial(refusal, model.api, documents=model.documents, vision=model.vision)
    # (in a thread: it reads every file's base64, the context's included)
    found = await trio.to_thread.run_sync(check, [*earlier, *blocks])
    if found is not None and found[0] < len(earlier):
        # the context is over a limit without these: not their doing
        found = await trio.to_thread.run_sync(check, blocks)
        earlier = []
    if found is None:
        return
    at, field, why = found
    at -= len(earlier)
    ask = asks[at] if 0 <= at < len(asks) else _Ask(at, "data")
    # the limit is the file's: name the field the file came from
    if field != "media_type" or given[ask.index].media_type is None:
        field = ask.field
    if earlier:
        held = f"{len(earlier)} file{'' if len(earlier) == 1 else 's'}"
        why += f" (the agent's context holds {held} already: its requests carry them too)"
    raise _refuse(ask.index, field, f"{why} (model {model.label})")


async def forwarded(params: P.Prompt, sup: Supervisor, conn: Connection, owner: str) -> P.Prompt:
    """The params to forward to daemon ``owner``, which runs the agent. On
    another machine a path means nothing there: the files given by path or
    URL are read here and sent as data. On this machine the owner reads them
    (its protected files refused by its guard), this daemon's own refused
    here first."""
    files = params.attachments or []
    if not any(a.path is not None or a.url is not None for a in files):
        return params
    peers = getattr(conn.server, "forwarder", None)
    row = await peers.row(owner) if peers is not None else None
    if row is not None and row.host != peers.host:
        return await inlined(params, sup)
    guard = sup.deps.tools.guard
    look = guard.look() if guard is not None else None
    for i, a in enumerate(files):
        why = look.reason(a.path) if look is not None and a.path else None
        if why is not None:
            raise _refuse(i, "path", f"{P.excerpt(a.path or '', 200)} {why}: it cannot be attached")
    return params


async def inlined(params: P.Prompt, sup: Supervisor) -> P.Prompt:
    """``params`` with each file given by path or URL read here and sent as
    data: for an agent another daemon runs, maybe on another machine, where
    the path means nothing. That daemon checks them against its model."""
    files = params.attachments or []
    if not any(a.path is not None or a.url is not None for a in files):
        return params
    if len(files) > MAX_ATTACHMENTS:
        return params  # refused there, as here
    guard = sup.deps.tools.guard
    out: list[P.Attachment] = []
    total = 0
    for i, a in enumerate(files):
        field = _source(i, a)
        if field == "data":
            out.append(a)
            continue
        try:
            loaded = await _load(a, field, guard)
        except Refused as e:
            raise _refuse(i, field, str(e)) from None
        if len(loaded.data) > MAX_FILE_BYTES or total + len(loaded.data) > MAX_TOTAL_BYTES:
            raise _refuse(i, field, _too_big(len(loaded.data), total))
        total += len(loaded.data)
        block = await trio.to_thread.run_sync(_block, i, a, field, loaded)
        text = block.text if isinstance(block, DocumentBlock) else None
        data = block.data or base64.b64encode((text or "").encode()).decode("ascii")
        out.append(P.Attachment(media_type=block.media_type, data=data, name=block.name))
    return msgspec.structs.replace(params, attachments=out)
