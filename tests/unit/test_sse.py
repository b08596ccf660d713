"""The SSE decoder: WHATWG rules, and chunking never changes the result."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from providers.sse import SSEDecoder, SSEEvent


def reference(stream: bytes) -> list[SSEEvent]:
    """The spec's algorithm, written plainly over the whole stream at once."""
    text = stream.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines.pop()  # the last piece has no line end: it never completes
    events, data, event, last_id, retry = [], None, "", "", None
    for line in lines:
        if line == "":
            if data is not None:
                events.append(SSEEvent(event or "message", data[:-1] if data.endswith("\n") else data, last_id, retry))
            data, event = None, ""
            continue
        if line.startswith(":"):
            continue
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data = (data or "") + value + "\n"
        elif field == "event":
            event = value
        elif field == "id" and "\0" not in value:
            last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    return events


def feed_all(chunks: list[bytes]) -> list[SSEEvent]:
    dec = SSEDecoder()
    out: list[SSEEvent] = []
    for c in chunks:
        out.extend(dec.feed(c))
    return out


def test_basic_fields():
    stream = (
        b"\xef\xbb\xbf: comment\r\n"
        b"event: message_start\r\ndata: {\"a\":1}\r\nid: 7\r\nretry: 3000\r\n\r\n"
        b"data: line one\ndata: line two\n\n"
        b"data\n\n"
        b"data:no-space\rdata:  two-spaces\r\r"
        b"event: empty\n\n"  # no data: not dispatched
        b"id: a\0b\ndata: x\n\n"  # an id with NUL is ignored
        b"data: unfinished"
    )
    assert feed_all([stream]) == [
        SSEEvent("message_start", '{"a":1}', "7", 3000),
        SSEEvent("message", "line one\nline two", "7", 3000),
        SSEEvent("message", "", "7", 3000),
        SSEEvent("message", "no-space\n two-spaces", "7", 3000),
        SSEEvent("message", "x", "7", 3000),
    ]


def test_close_reports_an_unfinished_event():
    dec = SSEDecoder()
    dec.feed(b"data: half")
    assert dec.close() is True
    dec2 = SSEDecoder()
    dec2.feed(b"data: whole\n\n")
    assert dec2.close() is False


def test_crlf_split_across_chunks_is_one_line_end():
    assert feed_all([b"data: a\r", b"\n", b"\r", b"\ndata: b\r\n\r\n"]) == [
        SSEEvent("message", "a", "", None),
        SSEEvent("message", "b", "", None),
    ]


def test_utf8_split_inside_a_character():
    data = "data: héllo → 世界\n\n".encode()
    assert feed_all([data[i : i + 1] for i in range(len(data))]) == [SSEEvent("message", "héllo → 世界", "", None)]


def test_bom_split_and_only_at_the_start():
    assert feed_all([b"\xef", b"\xbb", b"\xbfdata: x\n\n\xef\xbb\xbfdata: y\n\n"]) == [
        SSEEvent("message", "x", "", None)
    ]  # a BOM later is part of a field name, so "\ufeffdata" is an unknown field


_piece = st.sampled_from(
    [b"data: ", b"data:", b"event: ", b"id: ", b"retry: ", b": c", b"\n", b"\r", b"\r\n", b"x", b"{}", b"9",
     "é世".encode(), b"\xef\xbb\xbf", b"\0", b" ", b":"]
)
_stream = st.lists(_piece, max_size=60).map(b"".join)


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p % (len(data) + 1) for p in points})
    out, prev = [], 0
    for p in [*points, len(data)]:
        out.append(data[prev:p])
        prev = p
    return out


@settings(max_examples=400, deadline=None)
@given(_stream, st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_chunking_never_changes_the_result(stream, points):
    whole = feed_all([stream])
    assert feed_all(_cuts(stream, points)) == whole
    assert feed_all([stream[i : i + 1] for i in range(len(stream))]) == whole


@settings(max_examples=400, deadline=None)
@given(_stream)
def test_matches_the_spec_reference(stream):
    assert feed_all([stream]) == reference(stream)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.lists(st.integers(min_value=0, max_value=300), max_size=10))
def test_arbitrary_bytes_never_raise_and_chunk_consistently(stream, points):
    assert feed_all(_cuts(stream, points)) == feed_all([stream]) == reference(stream)
