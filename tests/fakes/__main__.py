"""``python -m tests.fakes``: the fake provider server as a process of its own.

The offline stand-in for a real provider: one HTTP server on loopback that
speaks the Anthropic Messages, OpenAI Chat Completions / Responses and Gemini
generateContent wire formats, answering every prompt with the demo responder
(tests/fakes/demo.py). Used by ``scripts/demo`` and ikictl's end-to-end tests.

    python -m tests.fakes --port 0 --url-file /tmp/fake.url

Runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import trio

from .demo import demo_responder
from .server import FakeProvider


async def serve(port: int, url_file: Path | None, quiet: bool) -> None:
    fake = FakeProvider(responder=demo_responder)
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    fake.port = listeners[0].socket.getsockname()[1]
    if not quiet:
        print(
            f"fake provider: the OFFLINE STAND-IN for a real provider (no network, no key), "
            f"speaking the Anthropic, OpenAI and Gemini wire formats at {fake.base_url}",
            flush=True,
        )
    if url_file is not None:
        tmp = url_file.with_name(url_file.name + ".tmp")
        tmp.write_text(fake.base_url + "\n")
        os.replace(tmp, url_file)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, fake._connection, listeners)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes",
        description="The fake provider server: an offline stand-in for Anthropic, OpenAI and Gemini.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--url-file", type=Path, help="write the base URL here once listening")
    parser.add_argument("--quiet", "-q", action="store_true", help="no banner")
    args = parser.parse_args(argv)
    trio.run(serve, args.port, args.url_file, args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
