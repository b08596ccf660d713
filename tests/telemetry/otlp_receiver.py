"""A real OTLP/HTTP receiver on loopback for the tests: what a collector is to
the daemon's exporters (protobuf bodies POSTed to /v1/traces and /v1/metrics).

    with OtlpReceiver() as r:                       # or the ``otlp_receiver`` fixture
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = r.endpoint
        ... run the daemon ...
        spans = r.wait_for_spans(lambda s: any(x.name == "invoke_agent" for x in s))
        spans = await r.await_spans(pred)           # the same from a trio test
        r.mode = "error"                            # misbehave from now on

Modes, read when a request's body has arrived, switchable at any time:
``"ok"`` answers 200 with an empty Export*ServiceResponse; ``"slow"`` records
the body, then answers only after ``r.delay`` seconds (or drops the connection
if the receiver is closed meanwhile); ``"garbage"`` records the body and
answers 200 with bytes no protobuf parser accepts; ``"error"`` answers 500;
``"reset"`` closes the connection without an answer. Every POST is counted
(``r.requests``, per path) in every mode; spans and metrics are recorded only
in the modes that accept the body (ok, slow, garbage), and a body that is not
OTLP protobuf is answered 4xx and kept in ``r.bad`` (error and reset look at
no body).

The waits block on a Condition notified at each arrival (no polling) and fail
with an AssertionError that says what did arrive.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import socket
import socketserver
import struct
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import trio
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from .otlp_decode import Event, Link, Metric, Span, decode_metrics, decode_spans

__all__ = ["BadRequest", "Event", "Link", "Metric", "Mode", "OtlpReceiver", "Received", "Span"]

Mode = Literal["ok", "slow", "garbage", "error", "reset"]
MODES: tuple[str, ...] = ("ok", "slow", "garbage", "error", "reset")
TRACES = "/v1/traces"
METRICS = "/v1/metrics"
PROTOBUF = "application/x-protobuf"
# the exporter drops requests over 64 MiB itself; anything far above is hostile
MAX_BODY = 128 * 1024 * 1024
# how long close() waits for handler threads that are stuck in a client's read
CLOSE_JOIN = 10.0

T = TypeVar("T")


@dataclass(frozen=True)
class BadRequest:
    """A POST answered 4xx (or 500 when decoding it broke the receiver itself)."""

    path: str
    status: int
    reason: str
    body: bytes  # as received, before any decompression


@dataclass(frozen=True)
class Received:
    """One POST whose body arrived, whatever its fate."""

    path: str
    mode: str  # the mode that answered it
    content_type: str
    content_encoding: str
    size: int  # body bytes on the wire (compressed if it was)


class _Rejected(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


_DECODERS: dict[str, tuple[Callable[[bytes], list[Any]], bytes]] = {
    TRACES: (decode_spans, ExportTraceServiceResponse().SerializeToString()),
    METRICS: (decode_metrics, ExportMetricsServiceResponse().SerializeToString()),
}


def _garbage() -> bytes:
    # eleven 0xff bytes are a varint longer than protobuf allows: never parseable
    return b"\xff" * 11 + os.urandom(21)


def _decompress(body: bytes, encoding: str) -> bytes:
    try:
        if encoding in ("", "identity"):
            return body
        if encoding == "gzip":
            return gzip.decompress(body)
        if encoding == "deflate":
            return zlib.decompress(body)
    except (OSError, EOFError, zlib.error) as e:
        raise _Rejected(400, f"bad {encoding} body: {e}") from e
    raise _Rejected(415, f"unsupported Content-Encoding {encoding!r}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, receiver: OtlpReceiver, host: str) -> None:
        self.receiver = receiver
        super().__init__((host, 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer's own resolves the host's FQDN, a DNS lookup we don't need
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            return  # the client went away (timeout, reset): its business
        self.receiver._reject("?", 500, f"receiver error: {error!r}", b"")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the exporter's session expects
    server: _Server
    refused = False

    def setup(self) -> None:
        super().setup()
        self.refused = not self.server.receiver._enter_handler(self.connection)

    def handle(self) -> None:
        if not self.refused:
            super().handle()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.receiver._leave_handler(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the tests read r.requests and r.bad, not stderr

    def do_POST(self) -> None:
        r = self.server.receiver
        path = urlsplit(self.path).path
        body = b""
        arrived = False
        try:
            body = self._read_body()
            mode, delay = r._arrived(path, self.headers, len(body))
            arrived = True
            if mode == "reset":
                self._reset()
                return
            if mode == "error":
                self._answer(500, b"injected failure (mode 'error')\n", "text/plain")
                return
            response = r._accept(path, self.headers, body)
            if mode == "slow" and r._closing.wait(delay):
                self.close_connection = True  # closed while sleeping: no answer
                return
            self._answer(200, _garbage() if mode == "garbage" else response, PROTOBUF)
        except _Rejected as e:
            if not arrived:  # unreadable, but it arrived all the same: counted
                r._arrived(path, self.headers, len(body))
                arrived = True
            r._reject(path, e.status, e.reason, body)
            self.close_connection = True  # the body may not have been read to its end
            self._answer(e.status, f"{e.reason}\n".encode(), "text/plain")
        except OSError:
            self.close_connection = True
        except Exception as e:  # a bug here must show in r.bad, not kill the handler silently
            r._reject(path, 500, f"receiver error: {e!r}", body)
            self.close_connection = True
            self._answer(500, b"receiver error\n", "text/plain")
        finally:
            if arrived:
                r._answered()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = self.headers.get("Content-Length")
        if length is None:
            raise _Rejected(411, "no Content-Length")
        try:
            n = int(length)
        except ValueError:
            raise _Rejected(400, f"bad Content-Length {length!r}") from None
        if not 0 <= n <= MAX_BODY:
            raise _Rejected(413, f"Content-Length {n} out of range")
        body = self.rfile.read(n)
        if len(body) < n:
            raise _Rejected(400, f"body ended after {len(body)} of {n} bytes")
        return body

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise _Rejected(400, f"bad chunk size line {line[:40]!r}") from None
            if size < 0:
                raise _Rejected(400, f"bad chunk size {size}")
            total += size
            if total > MAX_BODY:
                raise _Rejected(413, "chunked body too large")
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            chunk = self.rfile.read(size)
            if len(chunk) < size or self.rfile.readline(1024) not in (b"\r\n", b"\n"):
                raise _Rejected(400, "truncated chunk")
            parts.append(chunk)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def _reset(self) -> None:
        # linger 0: closing sends RST, so the client sees a dead connection, not an answer
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True


class OtlpReceiver:
    """An OTLP/HTTP (protobuf) collector on 127.0.0.1, served by threads."""

    def __init__(self, *, mode: Mode = "ok", delay: float = 30.0, host: str = "127.0.0.1") -> None:
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self._mode: str = "ok"
        self.mode = mode
        self.delay = delay  # seconds the "slow" mode waits before answering
        self._host = host
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._spans: list[Span] = []
        self._metrics: list[Metric] = []
        self._requests: Counter[str] = Counter()
        self._in_flight = 0
        self._received: list[Received] = []
        self._bad: list[BadRequest] = []
        self._connections: set[socket.socket] = set()
        self._handlers: set[threading.Thread] = set()

    # -- life ------------------------------------------------------------------

    def start(self) -> OtlpReceiver:
        if self._closed:
            raise RuntimeError("OtlpReceiver is closed")
        if self._server is None:
            self._server = _Server(self, self._host)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.1},
                name="otlp-receiver",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and drop every connection, promptly even while "slow"
        handlers sleep (they wait on an Event that this sets)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._closing.set()
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
        with self._cond:
            connections, handlers = list(self._connections), list(self._handlers)
        for conn in connections:
            # wakes handlers blocked reading a kept-alive connection
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + CLOSE_JOIN
        for t in handlers:
            t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``: OTEL_EXPORTER_OTLP_ENDPOINT (the exporters add /v1/...)."""
        if self._server is None:
            raise RuntimeError("OtlpReceiver not started (use it as a context manager)")
        return f"http://{self._server.server_name}:{self._server.server_port}"

    @property
    def traces_url(self) -> str:
        return self.endpoint + TRACES

    @property
    def metrics_url(self) -> str:
        return self.endpoint + METRICS

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}, expected one of {MODES}")
        self._mode = mode

    # -- what arrived (copies, safe from any thread) ----------------------------

    @property
    def spans(self) -> list[Span]:
        with self._cond:
            return list(self._spans)

    @property
    def metrics(self) -> list[Metric]:
        with self._cond:
            return list(self._metrics)

    @property
    def requests(self) -> dict[str, int]:
        """POSTs per path, counted in every mode."""
        with self._cond:
            return dict(self._requests)

    @property
    def in_flight(self) -> int:
        """POSTs whose body arrived and that are not answered (or dropped) yet:
        a "slow" handler sleeping counts."""
        with self._cond:
            return self._in_flight

    @property
    def received(self) -> list[Received]:
        with self._cond:
            return list(self._received)

    @property
    def bad(self) -> list[BadRequest]:
        with self._cond:
            return list(self._bad)

    # -- waiting -----------------------------------------------------------------

    def wait_for_spans(
        self, pred: Callable[[list[Span]], bool], timeout: float = 60.0
    ) -> list[Span]:
        """Block until ``pred(spans)`` holds (called under the receiver's lock,
        so keep it quick and pure); return those spans. AssertionError on timeout."""
        return self._wait(self._spans, pred, timeout, self._span_summary)

    def wait_for_metrics(
        self, pred: Callable[[list[Metric]], bool], timeout: float = 60.0
    ) -> list[Metric]:
        return self._wait(self._metrics, pred, timeout, self._metric_summary)

    def wait_for_requests(self, path: str, count: int = 1, timeout: float = 60.0) -> int:
        """Block until at least ``count`` POSTs reached ``path``; return how many did."""
        self._wait(
            self._received, lambda _: self._requests[path] >= count, timeout, self._span_summary
        )
        return self.requests.get(path, 0)

    # A timeout parameter (not trio.fail_after) so that, like the sync waits,
    # a timeout fails with the summary of what did arrive.
    async def await_spans(
        self,
        pred: Callable[[list[Span]], bool],
        timeout: float = 60.0,  # noqa: ASYNC109
    ) -> list[Span]:
        """wait_for_spans from trio: runs in a worker thread that a trio
        cancellation abandons and wakes, so it never outlives the wait."""
        return await self._await(self._spans, pred, timeout, self._span_summary)

    async def await_metrics(
        self,
        pred: Callable[[list[Metric]], bool],
        timeout: float = 60.0,  # noqa: ASYNC109
    ) -> list[Metric]:
        return await self._await(self._metrics, pred, timeout, self._metric_summary)

    def _wait(
        self,
        items: list[T],
        pred: Callable[[list[T]], bool],
        timeout: float,
        summary: Callable[[], str],
        stop: threading.Event | None = None,
    ) -> list[T]:
        with self._cond:
            met = self._cond.wait_for(
                lambda: pred(list(items)) or self._closed or (stop is not None and stop.is_set()),
                timeout,
            )
            if met and pred(list(items)):
                return list(items)
            why = "the receiver was closed" if self._closed else f"{timeout} s"
            raise AssertionError(f"no match after {why}: {summary()}")

    async def _await(
        self,
        items: list[T],
        pred: Callable[[list[T]], bool],
        seconds: float,
        summary: Callable[[], str],
    ) -> list[T]:
        stop = threading.Event()
        try:
            return await trio.to_thread.run_sync(
                partial(self._wait, items, pred, seconds, summary, stop), abandon_on_cancel=True
            )
        finally:
            # an abandoned (cancelled) waiter thread wakes now and ends
            stop.set()
            with self._cond:
                self._cond.notify_all()

    def _span_summary(self) -> str:
        names = Counter(s.name for s in self._spans)
        return f"{len(self._spans)} spans seen {dict(names)}; {self._traffic()}"

    def _metric_summary(self) -> str:
        names = Counter(f"{m.name} ({m.kind})" for m in self._metrics)
        return f"{len(self._metrics)} metrics seen {dict(names)}; {self._traffic()}"

    def _traffic(self) -> str:
        bad = [f"{b.status} {b.path}: {b.reason}" for b in self._bad[-3:]]
        return f"requests {dict(self._requests)}; mode {self._mode!r}; {len(self._bad)} bad {bad}"

    # -- called by the handler threads -------------------------------------------

    def _enter_handler(self, conn: socket.socket) -> bool:
        with self._cond:
            if self._closed:
                return False
            self._connections.add(conn)
            self._handlers.add(threading.current_thread())
            return True

    def _leave_handler(self, conn: socket.socket) -> None:
        with self._cond:
            self._connections.discard(conn)
            self._handlers.discard(threading.current_thread())

    def _arrived(self, path: str, headers: Any, size: int) -> tuple[str, float]:
        mode, delay = self._mode, self.delay
        record = Received(
            path=path,
            mode=mode,
            content_type=headers.get("Content-Type", ""),
            content_encoding=headers.get("Content-Encoding", ""),
            size=size,
        )
        with self._cond:
            self._in_flight += 1
            self._requests[path] += 1
            self._received.append(record)
            self._cond.notify_all()
        return mode, delay

    def _answered(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def _accept(self, path: str, headers: Any, body: bytes) -> bytes:
        """Decode and record the body; the serialized response. _Rejected if it is not OTLP."""
        if path not in _DECODERS:
            raise _Rejected(404, f"no OTLP signal at {path!r}")
        decode, response = _DECODERS[path]
        content_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type != PROTOBUF:
            raise _Rejected(415, f"Content-Type {content_type!r}, not {PROTOBUF}")
        raw = _decompress(body, headers.get("Content-Encoding", "").strip().lower())
        try:
            decoded = decode(raw)
        except DecodeError as e:
            raise _Rejected(400, f"not an OTLP protobuf body: {e}") from e
        with self._cond:
            (self._spans if path == TRACES else self._metrics).extend(decoded)
            self._cond.notify_all()
        return response

    def _reject(self, path: str, status: int, reason: str, body: bytes) -> None:
        with self._cond:
            self._bad.append(BadRequest(path, status, reason, body))
            self._cond.notify_all()
