"""The real ikigai behind ``ikictl acp``, for the editor scenario tests: one
``ikigaid`` in a temp IKIGAI_HOME, its provider the fake server (tests/fakes,
the demo responder) on a thread of this process, so a test can read the
requests the daemon sent the model (``editor.fake.requests``).

A plain module, not a conftest: the test module imports the fixture.

    from tests.acp._ikigai import Editor, editor_fixture  # noqa: F401 - the fixture

    async def test_x(editor: Editor, tmp_path):
        async with editor.acp(cwd=tmp_path) as c:
            sid = await new_session(c, tmp_path)
            shown = await editor.json("show", sid)
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.acp.driver import AcpClient, AcpDriverError, AcpError, Message, open_acp_client
from tests.fakes.demo import demo_responder
from tests.fakes.server import FakeProvider, ThreadedFakeProvider
from tests.ikictl.conftest import (
    IKICTL,
    Daemon,
    Result,
    _stop_any_daemon,
    start_daemon,
    stop_daemon,
    write_config,
)

INIT = {"protocolVersion": 1, "clientCapabilities": {}}
MODEL = "claude-sonnet-4-5/med"  # the daemon's default_model: thinking on, so thoughts stream


@dataclass
class Editor:
    """The daemon a module's scenarios share, and ways to reach it."""

    daemon: Daemon
    fake: FakeProvider

    async def ikictl(self, *args: str, code: int | None = 0) -> Result:
        """Run ``ikictl ARGS`` against this daemon on a thread: the test's
        trio loop keeps reading the editor's messages meanwhile."""
        run = functools.partial(self.daemon.ikictl, *args, code=code)
        return await trio.to_thread.run_sync(run)

    async def json(self, *args: str) -> Any:
        """``ikictl --json ARGS``, parsed."""
        return (await self.ikictl("--json", *args)).json()

    def acp(self, *options: str, cwd: Path | str) -> Any:
        """The real ``ikictl acp OPTIONS`` driven by the official TS client."""
        return open_acp_client([*IKICTL, "acp", *options], env=self.daemon.env, cwd=cwd)


@pytest.fixture(scope="module", name="editor")
def editor_fixture() -> Iterator[Editor]:
    """One daemon for a module; its config's policy is ``default`` (bash asks),
    a test wanting ``yolo`` says so (``ikictl acp --policy yolo``)."""
    home = Path(tempfile.mkdtemp(prefix="ikacp"))
    with ThreadedFakeProvider(responder=demo_responder) as fake:
        write_config(home, fake.base_url, policy="default", default_model=MODEL)
        d = start_daemon(home)
        try:
            yield Editor(d, fake)
        finally:
            stop_daemon(d)
            _stop_any_daemon(home)
            shutil.rmtree(home, ignore_errors=True)


# ------------------------------------------------------------------ the client side


def text(words: str) -> list[dict[str, str]]:
    """A prompt of one text block."""
    return [{"type": "text", "text": words}]


async def new_session(c: AcpClient, cwd: Path | str) -> str:
    """initialize, then session/new in ``cwd``: the session id."""
    await c.call("initialize", INIT)
    created = await c.call("newSession", {"cwd": str(cwd), "mcpServers": []})
    return str(created["sessionId"])


async def prompt(c: AcpClient, sid: str, words: str) -> Any:
    return await c.call("prompt", {"sessionId": sid, "prompt": text(words)})


def kinds(c: AcpClient, sid: str, kind: str) -> list[dict[str, Any]]:
    """The ``update`` members of ``sid``'s updates of one sessionUpdate kind."""
    return [u["update"] for u in c.updates(sid) if u["update"].get("sessionUpdate") == kind]


def chunk_text(c: AcpClient, sid: str, kind: str) -> str:
    return "".join(u["content"]["text"] for u in kinds(c, sid, kind))


def is_update(sid: str, kind: str | None = None) -> Callable[[Message], bool]:
    def match(m: Message) -> bool:
        if m.get("type") != "update" or m["params"].get("sessionId") != sid:
            return False
        return kind is None or m["params"]["update"].get("sessionUpdate") == kind

    return match


def index_of(c: AcpClient, pred: Callable[[Message], bool]) -> int:
    """Where the first message passing ``pred`` is in arrival order."""
    return next(i for i, m in enumerate(c.messages) if pred(m))


async def wait_for_text(c: AcpClient, sid: str, expected: str) -> None:
    """Read ``sid``'s updates until its message text is ``expected`` (or more)."""
    while len(c.message_text(sid)) < len(expected):
        await c.next(is_update(sid), what=f"the rest of {expected!r}")


@dataclass
class Call:
    """A call running in the background (a prompt waiting for its turn):
    its result, or the error it raised, once ``done``."""

    result: Any = None
    error: AcpError | AcpDriverError | None = None
    done: trio.Event = field(default_factory=trio.Event)

    async def run(self, c: AcpClient, method: str, params: Any) -> None:
        try:
            self.result = await c.call(method, params)
        except (AcpError, AcpDriverError) as e:
            self.error = e
        finally:
            self.done.set()

    async def wait(self) -> Any:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result


def background(nursery: trio.Nursery, c: AcpClient, method: str, params: Any) -> Call:
    call = Call()
    nursery.start_soon(call.run, c, method, params)
    return call


async def wait_idle(editor: Editor, agent: str) -> dict[str, Any]:
    """``ikictl watch --until-idle`` (it leaves once nothing runs or waits),
    then the agent as ``show --json`` has it."""
    await editor.ikictl("watch", agent, "--until-idle", code=None)
    shown: dict[str, Any] = await editor.json("show", agent)
    return shown
