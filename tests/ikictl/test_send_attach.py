"""``ikictl send -a FILE`` (and ``-a -``): the real ikictl against a real
ikigaid, the fake provider over loopback in this process (so the test reads
the bodies the daemon sent); ``ikictl history`` shows each file by name,
type and size."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import trio

from tests._ready import READY_TIMEOUT
from tests.daemon.attach_helpers import (
    PDF,
    PNG,
    TEXT,
    pdf_in,
    picture_in,
    text_in,
    write_attach_home,
)
from tests.daemon.conftest import DaemonProcess
from tests.fakes.script import Reply

from .conftest import IKICTL, clean_env


@pytest.fixture
async def ikigaid(fake_provider):
    home = Path(tempfile.mkdtemp(prefix="ikat", dir="/tmp"))  # short: a socket path's limit
    write_attach_home(home, fake_provider)
    d = DaemonProcess(home)
    try:
        await d.start()
        yield d
    finally:
        d.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "dot.png").write_bytes(PNG)
    (tmp_path / "notes.md").write_text(TEXT, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    return tmp_path


async def ikictl(d: DaemonProcess, *args: str, code: int = 0, cwd: Path | None = None, stdin: bytes = b"") -> tuple[str, str]:
    with trio.fail_after(READY_TIMEOUT):
        r = await trio.run_process(
            [*IKICTL, "--no-autostart", *args], capture_stdout=True, capture_stderr=True,
            check=False, env=clean_env(d.home), stdin=stdin, cwd=cwd,
        )
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == code, f"ikictl {args} -> {r.returncode}\n{out}\n{err}"
    return out, err


async def test_send_attaches_files_by_path_and_history_names_them(ikigaid, fake_provider, folder):
    await ikictl(ikigaid, "new", "--name", "t", "-q")
    fake_provider.push(Reply(text="a dot and notes"))
    # relative to ikictl's folder: sent as absolute paths, read by the daemon
    out, _ = await ikictl(ikigaid, "send", "t", "-a", "dot.png", "--attach", "notes.md", "what are these?", cwd=folder)
    assert out.strip() == "a dot and notes"
    body = fake_provider.requests[-1].json
    assert picture_in("messages", body) and text_in(body)
    out, _ = await ikictl(ikigaid, "history", "t")
    [line] = [ln for ln in out.splitlines() if " user " in ln]
    # the files first: the one-line view cuts a long prompt, not them
    assert f"user  [attached dot.png · image/png · {len(PNG)} bytes] [attached notes.md · text/markdown · {len(TEXT.encode())} bytes] what are t…" in line
    out, _ = await ikictl(ikigaid, "history", "t", "--full")
    assert f"user  [attached dot.png · image/png · {len(PNG)} bytes]\n[attached notes.md · text/markdown · {len(TEXT.encode())} bytes]\nwhat are these?\n" in out
    out, _ = await ikictl(ikigaid, "history", "t", "--tools")
    assert f"    [attached dot.png · image/png · {len(PNG)} bytes]\n" in out
    assert f"    [attached notes.md · text/markdown · {len(TEXT.encode())} bytes]\n" in out


async def test_send_attaches_stdin_with_its_type_sniffed(ikigaid, fake_provider, folder):
    await ikictl(ikigaid, "new", "--name", "t", "-q")
    fake_provider.push(Reply(text="a paper"))
    out, _ = await ikictl(ikigaid, "send", "t", "-a", "-", "read the pdf", stdin=PDF)
    assert out.strip() == "a paper"
    assert pdf_in("messages", fake_provider.requests[-1].json)
    out, _ = await ikictl(ikigaid, "history", "t")
    assert f"[attached stdin · application/pdf · {len(PDF)} bytes] read the pdf" in out
    # stdin is the file: the prompt cannot come from it too
    _, err = await ikictl(ikigaid, "send", "t", "-a", "-", "-", stdin=PDF, code=2)
    assert err == "ikictl: -a - reads stdin: give the prompt as an argument, not `-`\n"
    _, err = await ikictl(ikigaid, "send", "t", "-a", "-", "x", stdin=b"\x00\x01\x02", code=2)
    assert err.startswith("ikictl: -a -: the bytes on stdin are not one of pictures")
    assert len(fake_provider.requests) == 1


async def test_a_missing_file_is_refused_before_connecting(folder, tmp_path):
    env_home = tmp_path / "nohome"
    nowhere = str(tmp_path / "no.sock")
    for name, said in (("nope.png", "no such file"), ("sub", "a folder, not a file")):
        r = await trio.run_process(
            [*IKICTL, "--no-autostart", "--socket", nowhere, "send", "t", "-a", name, "hi"],
            capture_stdout=True, capture_stderr=True, check=False, env=clean_env(env_home), cwd=folder,
        )
        # exit 2 naming the file: no daemon was asked (none answers there: that would be 3)
        assert (r.returncode, r.stderr.decode()) == (2, f"ikictl: -a {name}: {said}\n")


async def test_a_file_the_daemon_refuses_is_its_error_and_nothing_is_sent(ikigaid, fake_provider, folder):
    await ikictl(ikigaid, "new", "--name", "t", "--model", "deepseek/deepseek-v4-flash", "-q")
    _, err = await ikictl(ikigaid, "send", "t", "-a", str(folder / "dot.png"), "see?", code=2)
    assert err.startswith("ikictl: attachments[0].path: model deepseek/deepseek-v4-flash takes no pictures"), err
    assert fake_provider.requests == []
    out, _ = await ikictl(ikigaid, "--json", "history", "t")
    assert '"messages": []' in out


async def test_send_help_says_what_is_taken(ikigaid):
    out, _ = await ikictl(ikigaid, "send", "--help")
    flat = " ".join(out.split())
    assert "-a FILE, --attach FILE" in flat
    assert "pictures (PNG, JPEG, GIF, WEBP), PDF, text files" in flat and "`-` reads stdin" in flat


def test_bytes_are_told_by_their_first_bytes():
    """What -a - (and the client library, given bytes) names the bytes it sends."""
    from protocol.filetypes import as_text, bytes_type

    assert bytes_type(PDF) == bytes_type(b"junk\n" + PDF) == "application/pdf"
    assert bytes_type(PNG) == "image/png" and bytes_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert bytes_type(b"GIF89a....") == "image/gif" and bytes_type(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert bytes_type(b"RIFF\0\0\0\0WAVEfmt ") is None  # a sound: not a picture, not text
    assert bytes_type(TEXT.encode()) == "text/plain" and as_text(b"\xef\xbb\xbfhi") == "hi"
    assert bytes_type(b"text with a \x00 NUL") is None and bytes_type(b"\xff\xfe latin-1?") is None
    assert as_text("caf\u00e9".encode("latin-1"), "iso-8859-1") == "caf\u00e9"
