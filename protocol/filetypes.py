"""The kinds of file a prompt may carry (``agent.prompt``'s ``attachments``)
and how a file's bytes tell their kind. Standard library only: the daemon
checks attachments with it, and the clients (``ikictl send -a -``, the
client library given bytes) name the type of the bytes they send with it.

Three kinds: pictures (PNG, JPEG, GIF, WEBP: each wire API's image block),
PDF (the APIs' document blocks), and text (inlined with its name: any
``text/*``, JSON, XML, YAML... as UTF-8)."""

from __future__ import annotations

IMAGE_TYPES = ("image/gif", "image/jpeg", "image/png", "image/webp")
PDF = "application/pdf"
# application/* types that are text; any text/* and */*+json or +xml are too
TEXT_APPLICATION = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-toml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-sh",
        "application/x-shellscript",
        "application/sql",
        "application/x-python",
        "application/x-tex",
        "application/x-ndjson",
        "application/jsonl",
        "application/csv",
        "application/x-subrip",
    }
)
ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "application/x-pdf": PDF}
TAKEN = "images (png, jpeg, gif, webp), PDF, text (text/*, JSON, XML, YAML...)"


def normalized(media_type: str) -> str:
    """A media type as compared: lower case, no parameters (``; charset=``), aliases resolved."""
    kind = media_type.split(";", 1)[0].strip().lower()
    return ALIASES.get(kind, kind)


def kind_of(media_type: str) -> str | None:
    """ "image", "pdf" or "text" for a normalized media type; None: not taken."""
    if media_type in IMAGE_TYPES:
        return "image"
    if media_type == PDF:
        return "pdf"
    if (
        media_type.startswith("text/")
        or media_type in TEXT_APPLICATION
        or media_type.endswith(("+json", "+xml", "+yaml"))
    ):
        return "text"
    return None


def sniff(head: bytes) -> str | None:
    """The media type the first bytes of a file show by their magic number
    (a picture or a PDF), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    # a PDF may have a few bytes of junk before its header; readers accept 1024
    if b"%PDF-" in head[:1024]:
        return PDF
    return None


def as_text(data: bytes, charset: str | None = None) -> str | None:
    """The bytes as text (UTF-8, or ``charset`` when one is named and known;
    a byte-order mark dropped), or None when they are not text: they do not
    decode, or hold a NUL byte (binary files do, text files do not)."""
    if b"\x00" in data:
        return None
    codec = "utf-8"
    if charset:
        import codecs

        try:
            codec = codecs.lookup(charset).name
        except LookupError:
            codec = "utf-8"
    try:
        text = data.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None
    return text[1:] if text.startswith("\ufeff") else text


def bytes_type(data: bytes) -> str | None:
    """The media type of bytes with no name (a pipe): a picture or PDF by its
    magic number, else text/plain when they are text, else None."""
    found = sniff(data[:1024])
    if found is not None:
        return found
    return "text/plain" if as_text(data) is not None else None
