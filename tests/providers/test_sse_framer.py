"""The one SSE framer every stream decoder reads through: the events SSEDecoder
(the spec's algorithm, tests/unit/test_sse.py) gives, on any input in any
chunking, whichever of its paths (bulk, frame by frame, general) takes them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.sse import Frames, SSEDecoder, SSEFramer, event_name


def _events(frames: Frames) -> list[tuple[str, str]]:
    return [(frames.name(i), d.decode("utf-8", "replace")) for i, d in enumerate(frames.data)]


def reference(
    chunks: list[bytes], *, take_partial: bool = False
) -> tuple[list[tuple[str, str]], bool]:
    dec = SSEDecoder()
    out = [(e.event, e.data) for c in chunks for e in dec.feed(c)]
    if take_partial and dec.pending:
        out += [(e.event, e.data) for e in dec.feed(b"\n\n")]
    return out, dec.close()


def framed(
    chunks: list[bytes], *, take_partial: bool = False
) -> tuple[list[tuple[str, str]], bool]:
    framer = SSEFramer()
    out = [ev for c in chunks for ev in _events(framer.feed(c))]
    rest, unfinished = framer.close(take_partial=take_partial)
    return out + _events(rest), unfinished


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p % (len(data) + 1) for p in points})
    out, prev = [], 0
    for p in [*points, len(data)]:
        out.append(data[prev:p])
        prev = p
    return out


# Well-formed frames (the fast path) with odd pieces mixed in (the other paths).
_payload = st.sampled_from(
    [b'{"a":1}', b"[DONE]", b"", b" x", "é世".encode(), b"\xc3", b"\xff", b"{}"]
)
_frame = st.one_of(
    st.builds(lambda p, nl: b"data: " + p + nl + nl, _payload, st.sampled_from([b"\n", b"\r\n"])),
    st.builds(
        lambda n, p, nl: b"event: " + n + nl + b"data: " + p + nl + nl,
        st.sampled_from([b"message_start", b"ping", b"", b"error"]),
        _payload,
        st.sampled_from([b"\n", b"\r\n"]),
    ),
    st.sampled_from(
        [
            b"\n",
            b"\r",
            b"\r\n",
            b": comment\n",
            b"id: 7\n",
            b"retry: 9\n",
            b"data\n",
            b"data:x\n",
            b"event:e\n",
            b"data: a\ndata: b\n\n",
            b"\xef\xbb\xbf",
            b"data: half",
            b"event: x\n",
            b"\0",
        ]
    ),
)
_stream = st.lists(_frame, max_size=30).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(_stream, st.lists(st.integers(min_value=0, max_value=10_000), max_size=20), st.booleans())
def test_the_framer_gives_what_the_spec_decoder_gives(stream, points, take_partial):
    chunks = _cuts(stream, points)
    expected = reference([stream], take_partial=take_partial)
    assert framed([stream], take_partial=take_partial) == expected
    assert framed(chunks, take_partial=take_partial) == expected
    assert (
        framed([stream[i : i + 1] for i in range(len(stream))], take_partial=take_partial)
        == expected
    )


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=400), max_size=10))
def test_arbitrary_bytes(stream, points):
    assert framed(_cuts(stream, points)) == reference([stream])


@settings(max_examples=300, deadline=None)
@given(_stream, st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_an_event_comes_out_as_soon_as_it_is_whole(stream, points):
    """After each piece the framer has given every event the bytes so far
    complete; only a CR at the very end may hold one back (an LF may follow)."""
    dec, framer = SSEDecoder(), SSEFramer()
    want: list[tuple[str, str]] = []
    got: list[tuple[str, str]] = []
    seen = b""
    for chunk in _cuts(stream, points):
        seen += chunk
        want += [(e.event, e.data) for e in dec.feed(chunk)]
        got += _events(framer.feed(chunk))
        if seen.endswith(b"\r"):
            assert got == want[: len(got)]
        else:
            assert got == want


def test_the_usual_shapes_take_the_bulk_path_and_keep_the_bytes():
    framer = SSEFramer()
    frames = framer.feed(b'event: ping\ndata: {"a":1}\n\nevent: error\ndata: \xff\n\nevent: x')
    assert frames.data == [b'{"a":1}', b"\xff"]  # as sent: the JSON decoder checks UTF-8
    assert [frames.name(0), frames.name(1)] == ["ping", "error"]
    frames = framer.feed(b"\ndata: 2\n\n")
    assert (frames.data, frames.name(0)) == ([b"2"], "x")
    crlf = SSEFramer().feed(b"data: 1\r\n\r\ndata: 2\r\n\r\ndata: 3\r\n")
    assert (crlf.data, crlf.name(1)) == ([b"1", b"2"], "message")


@pytest.mark.parametrize(
    ("head", "name"),
    [
        (b"event: a", "a"),
        (b"event:a", "a"),
        (b"event:  a", " a"),
        (b"event", "message"),
        (b"event: ", "message"),
        (b": c", "message"),
        (b"id: 1", "message"),
        (b"event: \xff", "\ufffd"),
    ],
)
def test_event_name(head, name):
    assert event_name(head) == name


def test_close_reports_a_cut_event_or_takes_it():
    framer = SSEFramer()
    assert framer.feed(b"data: 1\n\ndata: 2").data == [b"1"]
    rest, unfinished = framer.close()
    assert (rest.data, unfinished) == ([], True)
    framer = SSEFramer()
    framer.feed(b"data: 1\n\ndata: 2")
    rest, unfinished = framer.close(take_partial=True)
    assert (rest.data, unfinished) == ([b"2"], False)
    framer = SSEFramer()
    assert framer.feed(b"data: 1\r\n\r").data == []  # the CR may be half of a CRLF
    rest, unfinished = framer.close()
    assert (rest.data, unfinished) == ([b"1"], False)


def test_a_long_event_in_tiny_pieces_stays_linear():
    """A 2 MB event fed a byte at a time, with line ends that are not blank lines."""
    framer = SSEFramer()
    body = b"event: big\r\n" + b"data: " + b"x" * 2_000_000 + b"\r\n\r\n"
    got: list[bytes] = []
    for i in range(0, len(body), 7):
        got += framer.feed(body[i : i + 7]).data
    assert got == [b"x" * 2_000_000]
