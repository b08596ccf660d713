"""The pure parsers of providers.h1: response heads and body framing, fed in any cut.

Any split of a valid body gives the same payload and the same end; hostile
bytes give a ProtocolError or a wait for more data, never another exception.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.h1._body import (
    MAX_CHUNK_LINE,
    MAX_TRAILERS,
    ChunkedBody,
    CloseBody,
    LengthBody,
    body_for,
    content_decoder,
)
from providers.h1._head import MAX_HEAD, Headers, ProtocolError, head_end, parse_head


def chunked(payloads: list[bytes], ext: bool = False, trailers: bytes = b"") -> bytes:
    out = b""
    for p in payloads:
        out += b"%x%s\r\n" % (len(p), b";name=value" if ext else b"") + p + b"\r\n"
    return out + b"0\r\n" + trailers + b"\r\n"


def cuts(data: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def feed_all(body: ChunkedBody | LengthBody, pieces: list[bytes]) -> bytes:
    out = b""
    for piece in pieces:
        out += body.feed(piece)
    return out


payloads = st.lists(st.binary(min_size=1, max_size=300), max_size=8)


@settings(max_examples=300, deadline=None)
@given(parts=payloads, points=st.lists(st.integers(0, 5000), max_size=12), ext=st.booleans(), tail=st.binary(max_size=20))
def test_any_split_of_a_chunked_body_gives_the_same_payload_and_end(parts, points, ext, tail):
    trailers = b"X-Checksum: abc\r\n" if ext else b""
    wire = chunked(parts, ext, trailers)
    body = ChunkedBody()
    assert feed_all(body, cuts(wire + tail, points)) == b"".join(parts)
    assert body.done and body.extra == tail


@settings(max_examples=200, deadline=None)
@given(parts=payloads)
def test_byte_by_byte_equals_whole(parts):
    wire = chunked(parts)
    one = ChunkedBody()
    assert one.feed(wire) == b"".join(parts) and one.done
    slow = ChunkedBody()
    assert feed_all(slow, [wire[i : i + 1] for i in range(len(wire))]) == b"".join(parts)
    assert slow.done and slow.extra == b""


def test_one_read_of_several_whole_chunks_is_one_joined_item():
    body = ChunkedBody()
    assert body.feed(b"3\r\nabc\r\n2\r\nde\r\n") == b"abcde"
    assert not body.done
    assert body.feed(b"0\r\n\r\n") == b"" and body.done


def test_bytes_after_the_end_are_kept_as_extra():
    body = ChunkedBody()
    assert body.feed(b"1\r\na\r\n0\r\n\r\nHTTP/1.1 200") == b"a"
    assert body.done and body.extra == b"HTTP/1.1 200"


@settings(max_examples=300, deadline=None)
@given(length=st.integers(0, 2000), points=st.lists(st.integers(0, 3000), max_size=10), tail=st.binary(max_size=10))
def test_any_split_of_a_length_body(length, points, tail):
    data = bytes(range(256)) * 8
    data = data[:length]
    body = LengthBody(length)
    out = b""
    for piece in cuts(data + tail, points):
        if body.done:
            break
        out += body.feed(piece)
    assert out == data and body.done


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=400), points=st.lists(st.integers(0, 500), max_size=8))
def test_random_bytes_are_a_protocol_error_or_more_data_never_a_crash(data, points):
    body = ChunkedBody()
    try:
        for piece in cuts(data, points):
            body.feed(piece)
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(parts=payloads, at=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_mutated_chunked_bodies_never_crash(parts, at, byte):
    wire = bytearray(chunked(parts))
    wire[at % len(wire)] = byte
    body = ChunkedBody()
    with contextlib.suppress(ProtocolError):
        body.feed(bytes(wire))


@pytest.mark.parametrize(
    "line",
    [b"-5\r\n", b"0x10\r\n", b"+5\r\n", b"zz\r\n", b"\r\n", b" 5\r\n", b"1_0\r\n", b"12345678901234567\r\n", b"5\rx\n"],
)
def test_bad_chunk_sizes_are_protocol_errors(line):
    with pytest.raises(ProtocolError):
        ChunkedBody().feed(line)


def test_huge_chunk_sizes_are_refused_or_waited_for_not_allocated():
    with pytest.raises(ProtocolError, match="too large"):
        ChunkedBody().feed(b"ffffffffffffffff\r\n")
    body = ChunkedBody()
    assert body.feed(b"7fffffff\r\nabc") == b"abc" and not body.done  # waits for the rest


def test_overlong_chunk_lines_and_trailers_are_refused():
    with pytest.raises(ProtocolError, match="longer than"):
        ChunkedBody().feed(b"5;" + b"x" * (MAX_CHUNK_LINE + 10))
    body = ChunkedBody()
    body.feed(b"0\r\n")
    with pytest.raises(ProtocolError, match="trailer"):
        for _ in range(MAX_TRAILERS // 100 + 2):
            body.feed(b"X-T: " + b"y" * 93 + b"\r\n")


def test_missing_crlf_after_chunk_data():
    with pytest.raises(ProtocolError, match="CRLF"):
        ChunkedBody().feed(b"3\r\nabcX\r\n")


# ------------------------------------------------------------ framing choice


def head(raw: bytes) -> Headers:
    return parse_head(raw).headers


def test_framing_rules():
    assert isinstance(body_for(200, head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n")), ChunkedBody)
    assert isinstance(body_for(200, head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")), LengthBody)
    assert isinstance(body_for(200, head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n")), LengthBody)
    assert isinstance(body_for(200, head(b"HTTP/1.1 200 OK\r\n\r\n")), CloseBody)
    assert body_for(204, head(b"HTTP/1.1 204 No Content\r\n\r\n")).done
    assert isinstance(body_for(200, head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")), CloseBody)


@pytest.mark.parametrize("values", [[b"5", b"6"], [b"5, 6"], [b"-1"], [b"abc"], [b"1e3"], [b" "], [b"99999999999999999999"]])
def test_invalid_or_conflicting_content_length_is_a_protocol_error(values):
    raw = b"HTTP/1.1 200 OK\r\n" + b"".join(b"Content-Length: " + v + b"\r\n" for v in values) + b"\r\n"
    with pytest.raises(ProtocolError, match="Content-Length"):
        body_for(200, head(raw))


# ------------------------------------------------------------ heads


def test_head_parse_and_case_insensitive_headers():
    raw = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nX-A: 1\r\nx-a: 2\r\nContent-Type:text/event-stream  \r\n\r\n"
    end = head_end(raw + b"body")
    assert end == len(raw)
    h = parse_head(raw)
    assert (h.status, h.reason, h.version) == (429, "Too Many Requests", 1)
    assert h.headers["retry-after"] == "3" and h.headers.get("RETRY-AFTER") == "3"
    assert h.headers["x-a"] == "1, 2" and h.headers["content-type"] == "text/event-stream"
    assert "Retry-After" in h.headers and dict(h.headers.items())["x-a"] == "1, 2"
    assert "1, 2" not in repr(h.headers)


def test_bare_lf_heads_and_no_reason():
    raw = b"HTTP/1.0 200\nA: b\n\n"
    assert head_end(raw) == len(raw)
    h = parse_head(raw)
    assert (h.status, h.reason, h.version, h.headers["a"]) == (200, "", 0, "b")


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"ICY 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nA: b\x00c\r\n\r\n",
        b"\r\n\r\n",
    ],
)
def test_bad_heads_are_protocol_errors(raw):
    with pytest.raises(ProtocolError):
        parse_head(raw[: head_end(raw)])


def test_a_head_without_end_is_bounded():
    assert head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n") == -1
    with pytest.raises(ProtocolError, match="longer"):
        head_end(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * (MAX_HEAD // 6 + 1))


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_heads_never_crash(data):
    try:
        end = head_end(data)
        if end > 0:
            parse_head(data[:end])
    except ProtocolError:
        pass


# ------------------------------------------------------------ content coding


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
def test_content_encoding_is_undone_in_any_split(coding):
    data = b"data: {}\n\n" * 200
    if coding == "gzip":
        wire = gzip.compress(data)
    elif coding == "deflate":
        wire = zlib.compress(data)
    else:
        c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        wire = c.compress(data) + c.flush()
        coding = "deflate"
    decode = content_decoder(head(b"HTTP/1.1 200 OK\r\nContent-Encoding: " + coding.encode() + b"\r\n\r\n"))
    assert decode is not None
    assert b"".join(decode(wire[i : i + 7]) for i in range(0, len(wire), 7)) == data


def test_unknown_content_codings_pass_and_garbage_is_a_protocol_error():
    assert content_decoder(head(b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\n")) is None
    assert content_decoder(head(b"HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\n\r\n")) is None
    decode = content_decoder(head(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n"))
    assert decode is not None
    with pytest.raises(ProtocolError, match="compressed"):
        decode(b"not gzip at all")
