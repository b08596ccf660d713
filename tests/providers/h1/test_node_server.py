"""providers.h1 against an HTTP/1.1 server written by others: Node's http
module (llhttp), which chunks each res.write() and keeps connections alive by
itself. A real Anthropic Messages stream goes out one event per write, with a
pause between writes, and comes back as the events of that answer, three
calls on one kept-alive connection. Node is installed wherever the MCP tests
run (.ci/run installs it)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator

import pytest
import trio

from providers.h1 import StreamClient
from providers.registry import make_provider
from providers.settings import settings_for
from providers.types import DoneEvent, Message, Request, TextBlock, TextDelta

WORDS = ["Hello", " from", " a", " server", " we", " did", " not", " write", " “Ω”"]


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _events() -> list[str]:
    out = [
        _sse("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": None, "usage": {"input_tokens": 7, "output_tokens": 1}}}),
        _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
    ]
    out += [
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": w}})
        for w in WORDS
    ]
    out += [
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                               "usage": {"output_tokens": len(WORDS)}}),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return out


SERVER = """
const http = require("http");
const events = JSON.parse(process.argv[1]);
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, {"content-type": "text/event-stream"});
    let i = 0;
    const next = () => {
      if (i === events.length) { res.end(); return; }
      res.write(events[i++]);
      setTimeout(next, 2);
    };
    next();
  });
});
server.keepAliveTimeout = 30000;
server.listen(0, "127.0.0.1", () => { console.log(server.address().port); });
"""


@pytest.fixture
def node_server() -> Iterator[str]:
    node = shutil.which("node")
    assert node, "node is needed for this test (apt install nodejs; .ci/run does it)"
    proc = subprocess.Popen(
        [node, "-e", SERVER, json.dumps(_events())], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


async def test_a_node_http_server_streams_chunked_events_on_one_kept_connection(node_server: str):
    streamer = StreamClient(trust_env=False)
    settings = settings_for("anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-test"}, base_url=node_server)
    provider = make_provider(settings, api="messages", streamer=streamer)
    request = Request(model="claude-sonnet-4-5", messages=[Message(role="user", content=[TextBlock(text="hi")])])
    try:
        for _ in range(3):
            with trio.fail_after(10):
                async with provider.stream(request) as stream:
                    got = [e async for e in stream]
            assert "".join(e.text for e in got if isinstance(e, TextDelta)) == "".join(WORDS)
            assert isinstance(got[-1], DoneEvent) and got[-1].finish_reason == "stop"
            assert got[-1].usage.output_tokens == len(WORDS)
        assert streamer.opened == 1  # Node kept the connection alive; we reused it
    finally:
        await provider.aclose()
        await streamer.aclose()
