"""A lean HTTP/1.1 client for streamed provider calls (issue 18).

httpx pays per read for every layer (context managers, a timeout scope per
read, h11 events); a provider stream is thousands of small reads. Here a read
is one ``receive_some`` on the trio stream plus an incremental de-chunking,
and one CancelScope per exchange carries the deadline (moved on progress).
httpx stays for non-streamed calls; both share one ssl.SSLContext.

    client = StreamClient(ssl_context=ctx, trust_env=True)
    async with client.stream("POST", url, headers, body,
                             connect_timeout=10, read_timeout=120) as resp:
        resp.status, resp.reason, resp.headers  # headers: case-insensitive Mapping
        async for data in resp:                 # de-chunked body bytes: one item per read
            ...
        # or: body = await resp.read(limit=1 << 20)
    await client.aclose()

- Failures raise TransportError(kind, message): connect, timeout_connect,
  timeout_read, timeout_write, closed, protocol; before the head and while
  iterating. Messages hold no header values and no proxy credentials.
- Read timeout = no byte for read_timeout seconds (within 5% of it). The
  deadline's scope encloses the ``async with`` body: leave the body soon after
  a timeout error (any checkpoint in it is cancelled; the scope absorbs that).
- Framing per RFC 9112 (chunked, Content-Length, to close); 1xx skipped; gzip
  and deflate undone; requests send Accept-Encoding: identity, a User-Agent
  of ``ikigai/<version>`` unless given one, and refuse headers with CR/LF/NUL.
- 307/308 to the same origin are followed (at most 3, method and body resent);
  any other 3xx is returned as it is (``resp.url`` resolves its Location).
- Proxies from the environment exactly as httpx picks them (providers.h1._proxy);
  http(s) proxies only: a socks proxy is a connect error.
- Keep-alive per origin with no cap on concurrent connections (see _pool).
"""

from ._conn import H1Response
from ._errors import TransportError
from ._head import Headers
from ._pool import USER_AGENT, StreamClient

__all__ = ["USER_AGENT", "H1Response", "Headers", "StreamClient", "TransportError"]
