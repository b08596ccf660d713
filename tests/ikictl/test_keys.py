"""`ikictl keys set|rm|list`: a key goes from the terminal (no echo) or stdin
into credentials.json (0600, atomic, other entries kept), a running daemon
reloads it, and no output ever shows a key."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ikictl._errors import UsageError
from ikictl.keys import check_key, stale_key_hint
from protocol.credentials import CredentialsError, load_credentials, update_credentials

from .conftest import IKICTL, Daemon, clean_env
from .ptyexpect import PtyProcess

KEY = "sk-proj-Zq8vLm3TqW9xYb2NcD4eFg7H"
DEMO_REPLY = "Hello! I am the offline demo model. Ask me anything."


def _pieces(secret: str, n: int = 8) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1)]


def _shows_no_key(text: str, *secrets: str) -> None:
    for secret in secrets:
        leaked = [p for p in _pieces(secret) if p in text]
        assert leaked == [], f"output shows part of a key: {leaked}"


def _creds(home: Path) -> dict[str, str]:
    return json.loads((home / "credentials.json").read_text())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _no_daemon_env(home: Path) -> dict[str, str]:
    return {**clean_env(home), "IKIGAI_AUTOSTART": "0"}


def test_set_from_the_terminal_does_not_echo_the_key(home: Path) -> None:
    before = _creds(home)
    p = PtyProcess([*IKICTL, "keys", "set", "openai"], _no_daemon_env(home))
    try:
        p.expect(r"API key for openai \(not shown\): ")
        p.sendline(KEY)
        p.expect(r"saved the key for openai in .*credentials\.json \(mode 0600\)")
        assert p.wait() == 0
    finally:
        p.close()
    _shows_no_key(p.text, KEY)
    assert _creds(home) == {**before, "openai": KEY}  # the other entries kept
    assert _mode(home / "credentials.json") == 0o600
    assert sorted(x.name for x in home.iterdir() if x.name.startswith(".")) == []  # no temp file


def test_set_from_stdin_keeps_other_entries_and_is_private(home: Path) -> None:
    (home / "credentials.json").write_text('{"GEMINI_API_KEY": "AIza-other", "anthropic": " "}')
    (home / "credentials.json").chmod(0o600)
    d = Daemon(home, _no_daemon_env(home))
    r = d.ikictl("keys", "set", "openai", input=KEY + "\n")
    _shows_no_key(r.out + r.err, KEY)
    assert "no daemon is running" in r.out
    # entries as written (even one the loader ignores), the new key without its newline
    assert _creds(home) == {"GEMINI_API_KEY": "AIza-other", "anthropic": " ", "openai": KEY}
    assert _mode(home / "credentials.json") == 0o600
    assert [x.name for x in home.iterdir() if ".tmp" in x.name] == []
    d.ikictl("keys", "set", "openai", input="sk-second-0123456789\r\n")
    assert _creds(home)["openai"] == "sk-second-0123456789"


def test_set_creates_the_file_private(home: Path) -> None:
    (home / "credentials.json").unlink()
    d = Daemon(home, _no_daemon_env(home))
    d.ikictl("keys", "set", "anthropic", input=KEY)
    assert _creds(home) == {"anthropic": KEY}
    assert _mode(home / "credentials.json") == 0o600


@pytest.mark.parametrize(
    ("given_key", "said"),
    [
        ("", "the key is empty"),
        ("\n", "the key is empty"),
        ("sk-abc def-0123456789", "a space at character 7"),
        ("sk-abc\tdef-0123456789\n", "a control character at character 7"),
        ("sk-abcdef-0123456789\nsecond line", "a control character at character 21"),
        ("sk-abc\x1b[31mdef-0123", "a control character at character 7"),
        ("sk-abcdéf-0123456789", "a non-ASCII character at character 8"),
    ],
)
def test_set_refuses_a_malformed_key_without_showing_it(home: Path, given_key: str, said: str) -> None:
    before = (home / "credentials.json").read_bytes()
    r = Daemon(home, _no_daemon_env(home)).ikictl("keys", "set", "openai", input=given_key, code=2)
    assert said in r.err and "nothing saved" in r.err
    assert r.out == ""
    _shows_no_key(r.out + r.err, *[k for k in given_key.split() if len(k) >= 8])
    assert (home / "credentials.json").read_bytes() == before


def test_set_refuses_an_unknown_provider_listing_the_known_ones(home: Path) -> None:
    cfg = json.loads((home / "config.json").read_text())
    cfg["providers"]["mylocal"] = {"base_url": "http://127.0.0.1:9/v1", "api": "chat"}
    (home / "config.json").write_text(json.dumps(cfg))
    d = Daemon(home, _no_daemon_env(home))
    r = d.ikictl("keys", "set", "nosuch", input=KEY, code=2)
    assert r.err.startswith("ikictl: unknown provider 'nosuch' (providers: ")
    assert "anthropic" in r.err and "openai" in r.err and "mylocal" in r.err
    d.ikictl("keys", "set", "mylocal", input=KEY)  # a custom provider is known
    assert _creds(home)["mylocal"] == KEY


def test_a_bad_credentials_file_is_reported_not_overwritten(home: Path) -> None:
    creds = home / "credentials.json"
    d = Daemon(home, _no_daemon_env(home))
    creds.chmod(0o644)
    before = creds.read_bytes()
    r = d.ikictl("keys", "set", "openai", input=KEY, code=2)
    assert f"run chmod 600 {creds}" in r.err
    assert creds.read_bytes() == before and _mode(creds) == 0o644
    creds.write_text('{"anthropic": "sk-ant-kept-0123456789",')
    creds.chmod(0o600)
    r = d.ikictl("keys", "set", "openai", input=KEY, code=2)
    assert "not valid JSON" in r.err
    _shows_no_key(r.err, "sk-ant-kept-0123456789", KEY)
    assert creds.read_text() == '{"anthropic": "sk-ant-kept-0123456789",'


def test_rm_removes_the_providers_entries_only(home: Path) -> None:
    (home / "credentials.json").write_text('{"openai": "a", "GEMINI_API_KEY": "b", "google": "c"}')
    d = Daemon(home, _no_daemon_env(home))
    assert d.ikictl("keys", "rm", "google").out.startswith("removed the key for google")
    assert _creds(home) == {"openai": "a"}
    assert "nothing removed" in d.ikictl("keys", "rm", "google").out
    d.ikictl("keys", "rm", code=2)


def test_list_says_where_each_key_is_and_never_shows_one(home: Path) -> None:
    shell_key, daemon_key = "sk-shell-Hq2Wx9Lp0Zr7", "xai-daemon-Kd8Fj3Ns5Vb1"
    (home / "credentials.json").write_text(json.dumps({"openai": KEY}))
    # a daemon started from a shell that had XAI_API_KEY set
    Daemon(home, {**clean_env(home), "XAI_API_KEY": daemon_key}).ikictl("daemon", "start")
    d = Daemon(home, {**clean_env(home), "ANTHROPIC_API_KEY": shell_key})
    r = d.ikictl("keys", "list")
    _shows_no_key(r.out + r.err, KEY, shell_key, daemon_key)
    rows = {ln.split()[0]: ln for ln in r.lines[1:]}
    assert rows["openai"].split()[1:] == ["set", "has", "key", "credentials.json"]
    assert rows["anthropic"].split()[1:] == ["set", "no", "key", "env", "ANTHROPIC_API_KEY"]
    assert rows["xai"].split()[1:] == ["set", "has", "key", "daemon", "env"]
    assert "not set" in rows["deepseek"] and "`ikictl keys set deepseek`" in rows["deepseek"]
    r = d.ikictl("keys", "list", "--json")
    _shows_no_key(r.out + r.err, KEY, shell_key, daemon_key)
    by = {row["provider"]: row for row in json.loads(r.out)}
    assert by["openai"]["sources"] == ["credentials.json"] and by["openai"]["daemon_has_key"]
    assert by["anthropic"]["sources"] == ["env ANTHROPIC_API_KEY"]
    assert by["anthropic"]["daemon_has_key"] is False
    assert by["xai"]["sources"] == ["daemon env"]
    assert by["deepseek"]["set"] is False and by["deepseek"]["sources"] == []


def test_keys_set_reloads_a_running_daemon_and_the_turn_works(home: Path) -> None:
    (home / "credentials.json").write_text("{}")
    d = Daemon(home, clean_env(home))
    d.ikictl("new", "--name", "k", "--model", "gpt-4o/none")
    pid = json.loads(d.ikictl("status", "--json").out)["pid"]
    assert "no API key for openai" in d.ikictl("send", "k", "hi", code=1).err
    r = d.ikictl("keys", "set", "openai", input=KEY + "\n")
    assert "the running daemon reloaded its keys" in r.out
    assert d.ikictl("send", "k", "--no-thinking", "hi").lines[0] == DEMO_REPLY
    assert json.loads(d.ikictl("status", "--json").out)["pid"] == pid  # no restart
    # and removed again: the daemon no longer has it
    d.ikictl("keys", "rm", "openai")
    assert "no API key for openai" in d.ikictl("send", "k", "hi", code=1).err


# ---------------------------------------------------------------- pure parts


def test_the_stale_key_hint() -> None:
    err = 'openai auth: no API key for openai: set OPENAI_API_KEY or add "openai" to credentials.json'
    hint = stale_key_hint(err, {"OPENAI_API_KEY": "sk-x"})
    assert hint == (
        "the daemon started before OPENAI_API_KEY was set in this shell: run "
        "`ikictl daemon restart` (or `ikictl keys set openai`)"
    )
    assert stale_key_hint(err, {}) is None
    assert stale_key_hint(err, {"OPENAI_API_KEY": "  "}) is None
    two = "no API key for google: set GEMINI_API_KEY or GOOGLE_API_KEY or add ..."
    assert "GOOGLE_API_KEY was set" in (stale_key_hint(two, {"GOOGLE_API_KEY": "g"}) or "")
    assert stale_key_hint("HTTP 401 auth: invalid key", {"OPENAI_API_KEY": "sk-x"}) is None


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_any_bytes_as_a_key_are_accepted_or_refused_without_echo(raw: bytes) -> None:
    try:
        key = check_key(raw)
    except UsageError as e:
        text = str(e)
        assert text.endswith("nothing saved")
        for piece in raw.split():
            if len(piece) >= 8:
                assert piece.decode("utf-8", "replace") not in text
    else:
        assert key and all("!" <= c <= "~" for c in key)
        assert key.encode() in (raw, raw[:-1], raw[:-2])


_names = st.text(min_size=1, max_size=12)
_values = st.text(max_size=20)


@given(st.dictionaries(_names, _values, max_size=6), _names, st.text(alphabet="abcXYZ019-_", min_size=1))
@settings(max_examples=60, deadline=None)
def test_update_keeps_every_other_entry(tmp_path_factory: pytest.TempPathFactory, others: dict[str, str], name: str, key: str) -> None:
    path = tmp_path_factory.mktemp("c") / "credentials.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, json.dumps(others).encode())
    os.close(fd)
    update_credentials(path, put={name: key})
    assert json.loads(path.read_text()) == {**others, name: key}
    assert _mode(path) == 0o600
    assert update_credentials(path, remove=[name]) == [name]
    assert json.loads(path.read_text()) == {k: v for k, v in others.items() if k != name}
    assert [p.name for p in path.parent.iterdir()] == ["credentials.json"]


@given(st.binary(max_size=200))
@settings(max_examples=100, deadline=None)
def test_hostile_file_is_refused_and_left_alone(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("h") / "credentials.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, raw)
    os.close(fd)
    try:
        load_credentials(path)
    except CredentialsError:
        with pytest.raises(CredentialsError):
            update_credentials(path, put={"openai": "sk-x"})
        assert path.read_bytes() == raw
    else:
        update_credentials(path, put={"openai": "sk-x"})
        assert load_credentials(path)["openai"] == "sk-x"
