"""Every attachment the agent's model cannot be sent is refused by the real
daemon before anything is stored or sent: -32602 naming the field
(``attachments[1].path``) and the limit, the queue and the history as they
were, no request to the provider. Hypothesis then throws any JSON at every
field: each prompt is queued whole or refused naming ``attachments``, and
the daemon goes on answering."""

from __future__ import annotations

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from protocol import INVALID_PARAMS
from tests.daemon.attach_helpers import BLIND, MODELS, PDF, PNG, TEXT, b64, web, write_attach_home
from tests.daemon.conftest import DaemonProcess
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Raw, RawStream, Reply, Stall

MIB = 1024 * 1024


@pytest.fixture
def home(daemon_home, fake_provider):
    write_attach_home(daemon_home, fake_provider)
    return daemon_home


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("files")
    (d / "dot.png").write_bytes(PNG)
    (d / "paper.pdf").write_bytes(PDF)
    (d / "notes.md").write_text(TEXT)
    (d / "folder").mkdir()
    (d / "archive.zip").write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    with (d / "huge.pdf").open("wb") as f:  # sparse: 40 MB on paper, nothing on disk
        f.write(PDF)
        f.truncate(40 * MIB)
    (d / "long.txt").write_text("word " * (MIB // 4))  # 1.25 MiB of text
    (d / "big.png").write_bytes(PNG + bytes(6 * MIB))  # over Anthropic's 5 MB a picture
    for name in ("half1.pdf", "half2.pdf"):  # sparse too: 20 MB each
        with (d / name).open("wb") as f:
            f.write(PDF + name.encode())
            f.truncate(20 * MIB)
    for name in ("eight1.pdf", "eight2.pdf"):  # 8 MB each, different
        (d / name).write_bytes(PDF + name.encode() + bytes(8 * MIB))
    return d


async def _refused(c, uuid, attachments, fake, **extra):
    """The prompt is refused -32602: its message; nothing stored, nothing sent."""
    seen = len(fake.requests)
    before = await c.call("agent.show", agent=uuid)
    rows = (await c.call("agent.history", agent=uuid))["messages"]
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.prompt", agent=uuid, text="look", attachments=attachments, **extra)
    assert e.value.code == INVALID_PARAMS, e.value.error
    assert (await c.call("agent.show", agent=uuid))["queued"] == before["queued"]
    assert (await c.call("agent.history", agent=uuid))["messages"] == rows
    assert len(fake.requests) == seen
    return e.value.error["message"]


def _cases(d):
    """(attachments, the start of the refusal, words it must hold)."""
    return [
        ([{"path": str(d / "missing.png")}], "attachments[0].path: no such file: ", [str(d / "missing.png")]),
        ([{"path": str(d / "folder")}], "attachments[0].path: ", ["is a folder, not a file"]),
        ([{"path": "dot.png"}], "attachments[0].path: dot.png is relative: give an absolute path", []),
        ([{"path": str(d / "dot.png")}, {"path": str(d / "huge.pdf")}], "attachments[1].path: ", ["41943040 bytes", "at most 33554432 bytes"]),
        ([{"path": str(d / "long.txt")}], "attachments[0].path: ", ["bytes of text; a text file is at most 1048576"]),
        ([{"path": str(d / "half1.pdf")}, {"path": str(d / "half2.pdf")}], "attachments[1].path: 20971520 bytes, with the 20971520 before it over the 33554432 bytes the files of one prompt may hold together", []),
        ([{"path": str(d / "archive.zip")}], "attachments[0].path: application/zip is not taken (images", []),
        ([{"path": str(d / "dot.png"), "data": b64(PNG)}], "attachments[0].data: give one of path, url and data, not path and data together", []),
        ([{"media_type": "image/png", "data": "not base64!"}], "attachments[0].data: not valid base64", []),
        ([{"media_type": "application/pdf", "data": b64(PNG)}], "attachments[0].data: not a PDF", []),
        ([{"media_type": "text/plain", "data": b64(PNG)}], "attachments[0].data: its bytes are image/png, not text/plain", []),
        ([{"media_type": "text/plain", "data": b64(b"\xff\xfe\xfa latin")}], "attachments[0].data: not UTF-8 text", []),
        ([{"media_type": "image/png", "data": b64(PDF)}], "attachments[0].data: not a picture", []),
        ([{"media_type": "image/bmp", "data": b64(PNG)}], "attachments[0].media_type: image/bmp is not taken", []),
        ([{"media_type": "image/png"}], "attachments[0].data: required", []),
        ([{"data": b64(PNG)}], "attachments[0].media_type: required", []),
        ([{"url": "ftp://example.com/a.png"}], "attachments[0].url: ftp://example.com/a.png: only http and https", []),
        ([{"media_type": "image/png", "data": b64(PNG)}] * 21, "attachments: at most 20", []),
    ]


async def test_each_bad_file_is_refused_by_field_with_nothing_stored_or_sent(nursery, home, fake_provider, files):
    d = DaemonProcess(home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", model=MODELS["messages"]))["agent"]["uuid"]
        for attachments, start, words in _cases(files):
            said = await _refused(c, uuid, attachments, fake_provider)
            assert said.startswith(start), (attachments, said)
            assert all(w in said for w in words), (words, said)
        # the daemon's own keys are not a file a prompt carries
        keys = str(home / "credentials.json")
        said = await _refused(c, uuid, [{"path": keys}], fake_provider)
        assert said == f"attachments[0].path: {keys} holds ikigai's API keys: it cannot be attached"
        # Anthropic takes a picture of at most 5 MB (providers/attachment_limits.py)
        said = await _refused(c, uuid, [{"path": str(files / "big.png")}], fake_provider)
        assert said.startswith("attachments[0].path: ") and "anthropic/claude-sonnet-4-5" in said, said
    finally:
        d.stop()


async def test_a_model_without_vision_or_documents_is_named_with_a_way_out(nursery, home, fake_provider, files):
    d = DaemonProcess(home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", model=BLIND))["agent"]["uuid"]
        said = await _refused(c, uuid, [{"path": str(files / "notes.md")}, {"path": str(files / "dot.png")}], fake_provider)
        assert said.startswith(f"attachments[1].path: model {BLIND} takes no pictures; switch to one that does (e.g. anthropic/claude-sonnet-4-5"), said
        said = await _refused(c, uuid, [{"data": b64(PDF), "media_type": "application/pdf"}], fake_provider)
        assert said.startswith(f"attachments[0].data: model {BLIND} takes no PDF documents; convert it to text"), said
        # a text file it takes: inlined
        fake_provider.push(Reply(text="read"))
        with trio.fail_after(30):
            done = await c.call("agent.prompt", agent=uuid, text="x", attachments=[{"path": str(files / "notes.md")}], wait=True)
        assert done["status"] == "completed" and "the answer is 42" in str(fake_provider.requests[-1].json)
    finally:
        d.stop()


async def test_bad_urls_are_refused_with_the_status_and_the_limit(nursery, home, fake_provider):
    chunk = b"%PDF-" + bytes(MIB - 5)
    routes = {
        "/gone.png": Raw(b"no", status=404, content_type="text/plain"),
        "/broken.png": Raw(b"oops", status=500, content_type="text/plain"),
        "/loop": Raw(b"", status=302, headers={"location": "/loop"}),
        # no Content-Length: the daemon stops reading once it is over the limit
        "/endless.pdf": RawStream([chunk] * 40, content_type="application/pdf"),
        "/big.pdf": Raw(b"%PDF-" + bytes(33 * MIB), content_type="application/pdf"),
    }
    d = DaemonProcess(home)
    await d.start()
    try:
        async with web(routes) as site:
            c = await connect(nursery, str(d.socket))
            uuid = (await c.call("agent.create", model=MODELS["messages"]))["agent"]["uuid"]
            base = site.base_url
            cases = [
                (f"{base}/gone.png?token=SECRET", f"attachments[0].url: {base}/gone.png answered HTTP 404"),
                (f"{base}/broken.png", f"attachments[0].url: {base}/broken.png answered HTTP 500"),
                (f"{base}/loop", f"attachments[0].url: {base}/loop: more than 5 redirects"),
                (f"{base}/endless.pdf", f"attachments[0].url: {base}/endless.pdf is over 33554432 bytes"),
                (f"{base}/big.pdf", f"attachments[0].url: {base}/big.pdf is {33 * MIB + 5} bytes; a file is at most 33554432"),
                ("http://127.0.0.1:9/none.png", "attachments[0].url: http://127.0.0.1:9/none.png could not be fetched: ConnectError"),
            ]
            for url, start in cases:
                said = await _refused(c, uuid, [{"url": url}], fake_provider)
                assert said.startswith(start), (url, said)
                assert "SECRET" not in said
    finally:
        d.stop()


async def test_the_files_already_in_the_context_count_toward_the_request(nursery, home, fake_provider, files):
    """Gemini takes requests of at most 20 MB: a second 8 MB PDF (with the
    first, 21 MB as base64) would make every request after it fail."""
    d = DaemonProcess(home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", model=MODELS["generate_content"]))["agent"]["uuid"]
        fake_provider.push(Reply(text="one"))
        with trio.fail_after(60):
            done = await c.call("agent.prompt", agent=uuid, text="a", attachments=[{"path": str(files / "eight1.pdf")}], wait=True)
        assert done["status"] == "completed"
        said = await _refused(c, uuid, [{"path": str(files / "eight2.pdf")}], fake_provider)
        assert said.startswith("attachments[0].path: the PDFs of one request are at most 20 MB as base64 together on the Gemini generateContent API (21.3 MB with this one)"), said
        assert said.endswith("(the agent's context holds 1 file already: its requests carry them too) (model google/gemini-3-flash-preview)"), said
        # after a clear the context holds none: the same file is taken
        await c.call("agent.clear", agent=uuid)
        fake_provider.push(Reply(text="two"))
        with trio.fail_after(60):
            done = await c.call("agent.prompt", agent=uuid, text="b", attachments=[{"path": str(files / "eight2.pdf")}], wait=True)
        assert done["status"] == "completed"
    finally:
        d.stop()


# ---------------------------------------------------------------- any JSON, against the real daemon

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
GOOD_TYPES = ("image/png", "IMAGE/JPG", "image/webp", "text/plain", "application/pdf", "text/markdown")
F = "{files}"  # the folder of the module's files, put in by the test
# values of each source, good and bad
UNIVERSE = {
    "path": [f"{F}/dot.png", f"{F}/notes.md", f"{F}/paper.pdf", f"{F}/folder", f"{F}/nope", "dot.png", "", f"{F}/archive.zip"],
    "data": [b64(PNG), b64(PDF), b64(TEXT.encode()), "", "====", "abc", b64(PNG) + "\n", "é" * 4],
    "url": ["ftp://x/y", "http://127.0.0.1:9/x", "not a url", ""],
}
# what each good source holds
KINDS = {
    ("path", f"{F}/dot.png"): "image",
    ("path", f"{F}/notes.md"): "text",
    ("path", f"{F}/paper.pdf"): "pdf",
    ("data", b64(PNG)): "image",
    ("data", b64(PDF)): "pdf",
    ("data", b64(TEXT.encode())): "text",
}
SAID = {
    "image/png": "image",
    "IMAGE/JPG": "image",
    "image/webp": "image",
    "application/pdf": "pdf",
    "text/plain": "text",
    "text/markdown": "text",
}


def _value(field: str) -> st.SearchStrategy:
    return st.sampled_from(UNIVERSE[field]) | _json


_one = st.fixed_dictionaries(
    {},
    optional={
        "path": _value("path"),
        "url": _value("url"),
        "data": _value("data"),
        "media_type": st.sampled_from([*GOOD_TYPES, "image/bmp", "", "image"]) | _json,
        "name": st.sampled_from(["a.png", "é.pdf", "n" * 300]) | _json,
        "shape": _json,
    },
)
_good = st.sampled_from(sorted(KINDS)).map(lambda fv: {fv[0]: fv[1]} | ({"media_type": "image/png"} if fv == ("data", b64(PNG)) else {"media_type": "application/pdf"} if fv == ("data", b64(PDF)) else {"media_type": "text/plain"} if fv[0] == "data" else {}))


def _taken(attachments: object) -> bool:
    """Would the daemon take these (docs/protocol.md, "Attachments")?"""
    if attachments is None:  # none: a prompt of text alone
        return True
    if not isinstance(attachments, list) or len(attachments) > 20:
        return False
    for a in attachments:
        if not isinstance(a, dict) or set(a) - {"media_type", "data", "name", "path", "url"}:
            return False
        given = [f for f in ("path", "url", "data") if a.get(f) is not None]
        name, said = a.get("name"), a.get("media_type")
        if len(given) != 1 or given[0] == "url":  # (no good URL in the universe)
            return False
        if not (name is None or (isinstance(name, str) and len(name) <= 256)):
            return False
        value = a[given[0]]
        kind = KINDS.get((given[0], value)) if isinstance(value, str) else None
        if kind is None or (given[0] == "data" and said is None):
            return False
        if said is not None and (not isinstance(said, str) or SAID.get(said) != kind):
            return False
    return True


def _placed(value: object, folder: str) -> object:
    if isinstance(value, str):
        return value.replace(F, folder)
    if isinstance(value, list):
        return [_placed(v, folder) for v in value]
    if isinstance(value, dict):
        return {k: _placed(v, folder) for k, v in value.items()}
    return value


@pytest.fixture
def lazy_daemon(home):
    d = DaemonProcess(home)
    yield d
    d.stop()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(attachments=[{"path": f"{F}/dot.png", "media_type": "text/plain"}])
@example(attachments=[{"path": f"{F}/notes.md", "name": "n" * 300}])
@example(attachments=[{"path": f"{F}/paper.pdf", "media_type": "application/pdf"}, {"data": b64(PNG), "media_type": "IMAGE/JPG"}])
@given(attachments=st.lists(_one | _good, max_size=3) | _json)
async def test_any_attachments_are_taken_whole_or_refused_naming_attachments(
    nursery, lazy_daemon, fake_provider, files, attachments
):
    """Against an agent whose turn runs on (a prompt it takes is queued, its
    files in the durable queue): each list is queued whole, or refused
    -32602 naming ``attachments`` with nothing queued and history unchanged."""
    placed = _placed(attachments, str(files))
    expected = _taken(attachments)  # judged on the placeholders: the universe's spelling
    fake_provider.default = Reply(text="held", fault=Stall())  # every turn runs until the daemon leaves
    if lazy_daemon.proc is None:
        await lazy_daemon.start()
    c = await connect(nursery, str(lazy_daemon.socket))
    uuid = (await c.call("agent.create", model=MODELS["messages"], prompt="hold on"))["agent"]["uuid"]
    before = await c.call("agent.show", agent=uuid)
    rows = (await c.call("agent.history", agent=uuid))["messages"]
    try:
        queued = await c.call("agent.prompt", agent=uuid, text="look", attachments=placed)
    except RpcFailure as e:
        assert not expected, e.error
        assert e.code == INVALID_PARAMS and "attachments" in e.error["message"], e.error
        assert len(e.error["message"]) < 1200  # nothing quoted whole
        assert (await c.call("agent.show", agent=uuid))["queued"] == before["queued"]
        assert (await c.call("agent.history", agent=uuid))["messages"] == rows
    else:
        assert expected, placed
        assert queued["position"] == before["queued"] + 1
    assert (await c.call("daemon.status"))["agents"]["running"] >= 1
    await c.call("agent.kill", agent=uuid)  # its queue goes with it
