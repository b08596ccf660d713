"""Attached files stored once per content (store/_blobs.py): a file attached
in many turns and inherited by forks is one ``blobs`` row, the rows keep a
reference, and every way of reading them back (replay, history, the queue,
export) sees the whole file; a process killed mid-turn loses none of it."""

from __future__ import annotations

import base64
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import sqlalchemy as sa

from providers.types import DocumentBlock, ImageBlock, Message, TextBlock
from store import ImportedRow, Store
from store._schema import blobs, messages, prompt_queue
from tests.store.helpers import assistant, same

ROOT = Path(__file__).resolve().parents[2]
MEGABYTE = b"%PDF-1.7\n" + os.urandom(1 << 20)
PDF = DocumentBlock(
    media_type="application/pdf", data=base64.b64encode(MEGABYTE).decode(), name="big.pdf"
)
SHA = hashlib.sha256(MEGABYTE).hexdigest()


def _user(text: str, *files: object) -> Message:
    return Message(role="user", content=[TextBlock(text=text), *files])  # type: ignore[list-item]


def _blob_rows(store: Store, sha: str | None = None) -> int:
    with store.engine.connect() as conn:
        q = sa.select(sa.func.count()).select_from(blobs)
        if sha is not None:
            q = q.where(blobs.c.sha256 == sha)
        return conn.execute(q).scalar_one()


def _stored_sizes(store: Store, uuids: list[str]) -> int:
    """The bytes the agents' messages rows hold as message_json."""
    with store.engine.connect() as conn:
        q = sa.select(sa.func.sum(sa.func.length(messages.c.message_json))).where(
            messages.c.agent_uuid.in_(uuids)
        )
        return conn.execute(q).scalar_one() or 0


def test_a_file_in_ten_turns_and_five_forks_is_one_blob(store: Store) -> None:
    before = _blob_rows(store)
    uuid = store.create_agent("files", provider="anthropic", model="claude-test").uuid
    want: list[Message] = []
    for i in range(10):
        u = _user(f"look again {i}", PDF)
        store.append_user(uuid, u)
        a = assistant(f"seen {i}", tag=str(i))
        store.append_assistant(uuid, a, finish_reason="stop")
        want += [u, a]
    children = [store.fork(uuid).uuid for _ in range(5)]
    for child in children:
        store.append_user(child, _user("and here", PDF))
    assert _blob_rows(store) == before + 1
    assert _blob_rows(store, SHA) == 1
    # the rows refer to it: 15 copies inline would be over 20 MB of JSON
    assert _stored_sizes(store, [uuid, *children]) < 64 * 1024
    same(store.replay(uuid), want)
    for child in children:
        replayed = store.replay(child)
        same(replayed[:-1], want)
        assert replayed[-1].content[1] == PDF
    [first] = [r for r in store.history(uuid) if r.kind == "user"][:1]
    assert first.message is not None and first.message.content[1] == PDF


def test_pictures_and_text_files_are_stored_apart_too(store: Store) -> None:
    png = ImageBlock(media_type="image/png", data=base64.b64encode(b"\x89PNG" * 500).decode())
    text = DocumentBlock(media_type="text/markdown", text="# notes\n" + "é" * 5000, name="n.md")
    by_url = ImageBlock(media_type="image/png", url="https://example.com/a.png")
    uuid = store.create_agent("kinds", provider="anthropic", model="claude-test").uuid
    u = _user("three", png, text, by_url)
    store.append_user(uuid, u)
    with store.engine.connect() as conn:
        raw = conn.execute(sa.select(messages.c.message_json).where(messages.c.agent_uuid == uuid)).scalar_one()
    stored = msgspec.json.decode(raw)["content"]
    assert "data" not in stored[1] and stored[1]["blob"]["field"] == "data"
    assert "text" not in stored[2] and stored[2]["blob"]["field"] == "text"
    assert stored[2]["blob"]["size"] == len(text.text.encode())  # type: ignore[union-attr]
    assert stored[3] == {"type": "image", "media_type": "image/png", "url": "https://example.com/a.png"}
    same(store.replay(uuid), [u])


def test_rows_with_the_bytes_inline_still_read(store: Store) -> None:
    """Rows written before blobs (0012) kept the bytes in message_json."""
    uuid = store.create_agent("old", provider="anthropic", model="claude-test").uuid
    u = _user("old style", PDF)
    with store.engine.begin() as conn:
        conn.execute(
            messages.insert(),
            {
                "agent_uuid": uuid,
                "kind": "user",
                "content": "old style",
                "data": None,
                "message_json": msgspec.json.encode(u).decode(),
                "created_at": store.get_agent(uuid).created_at,
            },
        )
    same(store.replay(uuid), [u])
    assert store.history(uuid)[-1].message == u


def test_a_queued_prompt_keeps_a_reference_and_reads_whole(store: Store) -> None:
    before = _blob_rows(store)
    uuid = store.create_agent("queue", provider="anthropic", model="claude-test").uuid
    files = [msgspec.to_builtins(PDF), msgspec.to_builtins(PDF)]
    queued = store.enqueue_prompt(uuid, "t1", "read it twice", attachments=files)
    assert queued.attachments == files
    with store.engine.connect() as conn:
        meta = conn.execute(sa.select(prompt_queue.c.meta).where(prompt_queue.c.id == queued.id)).scalar_one()
    assert [f["blob"]["sha256"] for f in meta["attachments"]] == [SHA, SHA]
    assert all("data" not in f for f in meta["attachments"])
    assert _blob_rows(store) == before + 1
    [back] = store.queued_prompts(uuid)
    assert [msgspec.convert(f, DocumentBlock) for f in back.attachments] == [PDF, PDF]


def test_export_rows_name_their_blobs_and_an_import_is_whole(store: Store) -> None:
    uuid = store.create_agent("out", provider="anthropic", model="claude-test").uuid
    u = _user("keep this", PDF)
    store.append_user(uuid, u)
    rows = store.lineage_rows(uuid)
    found = store.lineage_blobs(rows)
    assert list(found) == [SHA] and found[SHA].data == MEGABYTE and found[SHA].size == len(MEGABYTE)
    # the import takes whole messages (the daemon puts the bytes back from the document)
    imported = [
        ImportedRow(r.id, r.kind, r.content, r.data, u if r.kind == "user" else None, r.created_at)
        for r in rows
    ]
    record = store.import_agent(
        "back-in",
        provider="anthropic",
        model="claude-test",
        thinking_level="none",
        system_prompt="",
        cwd=None,
        policy=None,
        mcp=None,
        rows=imported,
    )
    same(store.replay(record.uuid), [u])
    assert _blob_rows(store, SHA) == 1


def test_a_purge_deletes_the_blobs_no_row_refers_to_any_more(store: Store) -> None:
    mine = ImageBlock(media_type="image/png", data=base64.b64encode(b"only mine" * 10).decode())
    shared = ImageBlock(media_type="image/png", data=base64.b64encode(b"shared" * 10).decode())
    sha_mine = hashlib.sha256(b"only mine" * 10).hexdigest()
    sha_shared = hashlib.sha256(b"shared" * 10).hexdigest()
    gone = store.create_agent("gone", provider="anthropic", model="claude-test").uuid
    kept = store.create_agent("kept", provider="anthropic", model="claude-test").uuid
    store.append_user(gone, _user("two", mine, shared))
    store.enqueue_prompt(gone, "t9", "later", attachments=[msgspec.to_builtins(mine)])
    store.append_user(kept, _user("one", shared))
    store.mark_dead(gone)
    store.remove_agent(gone, purge=True)
    assert _blob_rows(store, sha_mine) == 0
    assert _blob_rows(store, sha_shared) == 1
    assert store.replay(kept)[0].content[1] == shared


CHILD = r"""
import base64, sys, time
import msgspec
from providers.types import DocumentBlock, Message, TextBlock
from store import Store

url, uuid, path = sys.argv[1], sys.argv[2], sys.argv[3]
store = Store(url, upgrade=False)
data = base64.b64encode(open(path, "rb").read()).decode()
doc = DocumentBlock(media_type="application/pdf", data=data, name="big.pdf")
queued = store.enqueue_prompt(uuid, "t-late", "later", attachments=[msgspec.to_builtins(doc)])
message = Message(role="user", content=[TextBlock(text="now"), doc])
store.start_turn(uuid, message, queue_id=None, turn="t-now")
print("started", flush=True)
time.sleep(600)
"""


def test_a_turn_killed_with_its_file_keeps_the_bytes(store: Store, db_url: str, open_store, tmp_path: Path) -> None:
    """kill -9 after the turn's user row (and a queued prompt) committed: a
    restarted store reads both files whole."""
    uuid = store.create_agent("killed", provider="anthropic", model="claude-test").uuid
    path = tmp_path / "big.pdf"
    path.write_bytes(MEGABYTE)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, db_url, uuid, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line == b"started\n", proc.stderr.read().decode()  # type: ignore[union-attr]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    again = open_store()
    assert again.close_open_turns("daemon died") == [(uuid, again.history(uuid)[0].id)]
    [user] = [r for r in again.history(uuid) if r.kind == "user"]
    assert user.message is not None and user.message.content[1] == PDF
    [queued] = again.queued_prompts(uuid)
    assert msgspec.convert(queued.attachments[0], DocumentBlock) == PDF
    assert _blob_rows(again, SHA) == 1


def test_history_describes_files_without_reading_them(store: Store) -> None:
    """data.files says what each file is; history(files=False) leaves the
    bytes unread (here: gone from the table, which only a broken database
    does, and which replay then says in words rather than sending a hole)."""
    uuid = store.create_agent("described", provider="anthropic", model="claude-test").uuid
    store.append_user(uuid, _user("see", PDF, ImageBlock(media_type="image/png", url="https://x/y.png")))
    with store.engine.begin() as conn:
        conn.execute(blobs.delete().where(blobs.c.sha256 == SHA))
    [row] = store.history(uuid, files=False)
    assert row.data == {
        "files": [
            {"media_type": "application/pdf", "name": "big.pdf", "size": len(MEGABYTE), "sha256": SHA},
            {"media_type": "image/png", "url": "https://x/y.png"},
        ]
    }
    assert row.message is not None and row.message.content[1] == DocumentBlock(media_type="application/pdf", name="big.pdf")
    assert row.content == "see\n[attached big.pdf · application/pdf · 1.0 MB]\n[attached https://x/y.png · image/png]"
    [replayed] = store.replay(uuid)
    assert replayed.content[1] == TextBlock(text="[attached big.pdf: its content is no longer stored]")
