"""``agent.prompt {attachments}`` with files, over the real socket of a real
ikigaid: a picture, a PDF and a text file, given by path, by URL or inline,
reach each wire API in its own form (the fake provider records the bodies);
the history shows them by name, type, size and sha256 and keeps each
content once; a queued PDF survives kill -9; an export carries the files and
an import of it is whole; the client library sends paths, bytes and dicts."""

from __future__ import annotations

import hashlib
import signal

import pytest
import trio

import ikigai
from tests.daemon.attach_helpers import (
    MODELS,
    PDF,
    PNG,
    TEXT,
    b64,
    documents,
    pdf_in,
    picture_in,
    text_in,
    web,
    write_attach_home,
)
from tests.daemon.conftest import DaemonProcess
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Raw, Reply, Stall


@pytest.fixture
def home(daemon_home, fake_provider):
    write_attach_home(daemon_home, fake_provider)
    return daemon_home


@pytest.fixture
async def ikigaid(home):
    d = DaemonProcess(home)
    await d.start()
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture
def files(tmp_path):
    (tmp_path / "dot.png").write_bytes(PNG)
    (tmp_path / "paper.pdf").write_bytes(PDF)
    (tmp_path / "notes.md").write_text(TEXT, encoding="utf-8")
    return tmp_path


def _user_blocks(history: dict) -> list[list[dict]]:
    return [m["blocks"] for m in history["messages"] if m.get("role") == "user"]


@pytest.mark.parametrize("api", list(MODELS))
async def test_a_picture_a_pdf_and_a_text_file_reach_each_api_in_its_own_form(
    nursery, ikigaid, fake_provider, files, api
):
    c = await connect(nursery, str(ikigaid.socket))
    uuid = (await c.call("agent.create", model=MODELS[api]))["agent"]["uuid"]
    sent = [{"path": str(files / "dot.png")}, {"path": str(files / "notes.md")}]
    if documents(MODELS[api]):
        sent.insert(1, {"path": str(files / "paper.pdf")})
    fake_provider.push(Reply(text="three files"))
    with trio.fail_after(30):
        done = await c.call("agent.prompt", agent=uuid, text="read these", attachments=sent, wait=True)
    assert done["status"] == "completed", done
    body = fake_provider.requests[-1].json
    assert picture_in(api, body), body
    assert text_in(body), body
    if len(sent) == 3:
        assert pdf_in(api, body), body
    [blocks] = _user_blocks(await c.call("agent.history", agent=uuid, blocks=True))
    shown = [{k: b.get(k) for k in ("type", "name", "media_type", "bytes", "sha256")} for b in blocks[1:]]
    want = [
        ("image", "dot.png", "image/png", PNG),
        ("document", "paper.pdf", "application/pdf", PDF),
        ("document", "notes.md", "text/markdown", TEXT.encode()),
    ]
    if len(sent) == 2:
        del want[1]
    assert shown == [
        {"type": t, "name": n, "media_type": m, "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
        for t, n, m, raw in want
    ]
    assert all("data" not in b and "text" not in b for b in blocks[1:])


@pytest.mark.parametrize("api", [a for a in MODELS if documents(MODELS[a])])
async def test_a_pdf_given_inline_reaches_the_api(nursery, ikigaid, fake_provider, api):
    c = await connect(nursery, str(ikigaid.socket))
    uuid = (await c.call("agent.create", model=MODELS[api]))["agent"]["uuid"]
    fake_provider.push(Reply(text="a paper"))
    pdf = {"data": b64(PDF), "media_type": "application/pdf", "name": "paper.pdf"}
    with trio.fail_after(30):
        done = await c.call("agent.prompt", agent=uuid, text="what is it?", attachments=[pdf], wait=True)
    assert done["status"] == "completed" and pdf_in(api, fake_provider.requests[-1].json)


async def test_urls_are_fetched_following_redirects_and_kept_with_the_history(nursery, ikigaid, fake_provider):
    routes = {
        "/files/dot.png": Raw(PNG, content_type="image/png"),
        "/files/old.pdf": Raw(b"", status=302, headers={"location": "/files/paper.pdf"}),
        "/files/paper.pdf": Raw(PDF, content_type="application/octet-stream"),
        "/files/readme": Raw(TEXT.encode(), content_type="text/plain; charset=utf-8"),
    }
    async with web(routes) as site:
        c = await connect(nursery, str(ikigaid.socket))
        uuid = (await c.call("agent.create", model=MODELS["messages"]))["agent"]["uuid"]
        fake_provider.push(Reply(text="fetched"))
        sent = [{"url": f"{site.base_url}{path}?sig=SECRET"} for path in ("/files/dot.png", "/files/old.pdf", "/files/readme")]
        with trio.fail_after(30):
            done = await c.call("agent.prompt", agent=uuid, text="these", attachments=sent, wait=True)
        assert done["status"] == "completed"
        assert [r.path for r in site.requests] == ["/files/dot.png", "/files/old.pdf", "/files/paper.pdf", "/files/readme"]
    body = fake_provider.requests[-1].json
    assert picture_in("messages", body) and pdf_in("messages", body)
    assert text_in(body, name="readme")
    # the site is gone: the next turn still sends the files, from the store
    fake_provider.push(Reply(text="still here"))
    with trio.fail_after(30):
        await c.call("agent.prompt", agent=uuid, text="again", wait=True)
    again = fake_provider.requests[-1].json
    assert b64(PNG) in str(again) and b64(PDF) in str(again)
    [blocks] = _user_blocks(await c.call("agent.history", agent=uuid, blocks=True))[:1]
    assert [(b["name"], b["media_type"]) for b in blocks[1:]] == [
        ("dot.png", "image/png"),
        ("paper.pdf", "application/pdf"),
        ("readme", "text/plain"),
    ]


async def test_a_queued_pdf_survives_a_kill_and_its_turn_runs_with_the_bytes(nursery, home, fake_provider, files):
    d = DaemonProcess(home)
    await d.start()
    try:
        fake_provider.push(Reply(text="slow", fault=Stall()), Reply(text="read it"))
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", model=MODELS["messages"]))["agent"]["uuid"]
        await c.call("agent.prompt", agent=uuid, text="first")
        with trio.fail_after(30):
            await fake_provider.wait_for_requests(1)
        pdf = files / "paper.pdf"
        queued = await c.call("agent.prompt", agent=uuid, text="read", attachments=[{"path": str(pdf)}])
        assert queued["position"] == 1
        pdf.unlink()  # the daemon keeps its own copy
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        await d.restart()
        c2 = await connect(nursery, str(d.socket))
        with trio.fail_after(30):
            done = await c2.call("agent.wait", agent=uuid, turn=queued["turn"])
        assert done["status"] == "completed"
        assert pdf_in("messages", fake_provider.requests[-1].json)
    finally:
        d.stop()


async def test_one_file_in_many_turns_and_forks_is_stored_once(nursery, ikigaid, fake_provider, files):
    """The same PDF in five turns and five forks: the database grows by
    about one copy, not ten."""
    c = await connect(nursery, str(ikigaid.socket))
    big = files / "big.pdf"
    big.write_bytes(PDF + bytes(range(256)) * 2048)  # half a megabyte
    uuid = (await c.call("agent.create", model=MODELS["messages"]))["agent"]["uuid"]
    fake_provider.default = Reply(text="ok")
    db = ikigaid.home / "ikigai.db"
    with trio.fail_after(60):
        await c.call("agent.prompt", agent=uuid, text="warm up", wait=True)
        before = sum(p.stat().st_size for p in db.parent.glob("ikigai.db*"))
        for i in range(5):
            await c.call("agent.prompt", agent=uuid, text=f"read {i}", attachments=[{"path": str(big)}], wait=True)
        kids = await c.call("agent.fork", agent=uuid, count=5, prompt="look")
        for kid in kids["children"]:
            await c.call("agent.prompt", agent=kid["agent"]["uuid"], text="and", attachments=[{"path": str(big)}], wait=True)
    grown = sum(p.stat().st_size for p in db.parent.glob("ikigai.db*")) - before
    assert grown < 3 * big.stat().st_size, grown


async def test_an_export_carries_each_file_once_and_its_import_is_whole(nursery, ikigaid, fake_provider, files):
    c = await connect(nursery, str(ikigaid.socket))
    uuid = (await c.call("agent.create", model=MODELS["messages"], name="src"))["agent"]["uuid"]
    fake_provider.default = Reply(text="ok")
    sent = [{"path": str(files / "dot.png")}, {"path": str(files / "notes.md")}]
    with trio.fail_after(30):
        for _ in range(2):
            await c.call("agent.prompt", agent=uuid, text="look", attachments=sent, wait=True)
    doc = await c.call("agent.export", agent=uuid)
    shas = {hashlib.sha256(PNG).hexdigest(), hashlib.sha256(TEXT.encode()).hexdigest()}
    assert set(doc["blobs"]) == shas
    assert doc["blobs"][hashlib.sha256(PNG).hexdigest()] == {"media_type": "image/png", "size": len(PNG), "data": b64(PNG)}
    assert b64(PNG) not in str(doc["messages"])  # each file once, in blobs
    made = await c.call("agent.import", document=doc, name="copy")
    copy = made["agent"]["uuid"]
    old = await c.call("agent.history", agent=uuid, blocks=True)
    new = await c.call("agent.history", agent=copy, blocks=True)
    assert _user_blocks(new) == _user_blocks(old)
    fake_provider.push(Reply(text="same files"))
    with trio.fail_after(30):
        await c.call("agent.prompt", agent=copy, text="and now?", wait=True)
    body = fake_provider.requests[-1].json
    assert b64(PNG) in str(body["messages"][0]) and "the answer is 42" in str(body["messages"][0])
    # a document whose file is missing, or is not what its sha256 says, is refused by name
    bad = {**doc, "blobs": {}}
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.import", document=bad, name="copy2")
    assert "document.messages[" in e.value.error["message"] and ".blob: file " in e.value.error["message"]
    sha = hashlib.sha256(PNG).hexdigest()
    forged = {**doc, "blobs": {**doc["blobs"], sha: {**doc["blobs"][sha], "data": b64(b"other")}}}
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.import", document=forged, name="copy3")
    assert f"document.blobs.{sha}: its data does not have this sha256" in e.value.error["message"]


async def test_the_client_library_sends_paths_bytes_and_dicts(ikigaid, fake_provider, files, monkeypatch):
    monkeypatch.chdir(files)
    fake_provider.push(Reply(text="all three"))
    async with ikigai.connect_async(str(ikigaid.socket), autostart=False) as c:
        created = await c.create(model=MODELS["messages"])
        uuid = created["agent"]["uuid"]
        with trio.fail_after(30):
            outcome = await c.ask(
                uuid,
                "read",
                attachments=["dot.png", files / "notes.md", PDF, {"data": b64(PNG), "media_type": "image/png", "name": "d2.png"}],
            )
        assert outcome["status"] == "completed"
        history = await c.history(uuid, blocks=True)
        with pytest.raises(ValueError, match=r"attachments\[0\]: these bytes are not"):
            await c.enqueue(uuid, "x", attachments=[b"\x00\x01 not a file of any kind"])
    body = fake_provider.requests[-1].json
    assert picture_in("messages", body) and pdf_in("messages", body) and text_in(body)
    [blocks] = _user_blocks(history)
    assert [b["name"] for b in blocks[1:]] == ["dot.png", "notes.md", None, "d2.png"]
