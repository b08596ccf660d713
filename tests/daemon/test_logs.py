from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest
import structlog

from daemon.process.logs import (
    REDACTED,
    _forget_secrets,
    close_logging,
    configure_logging,
    flush_logging,
    redact,
    register_secret,
)

ANT = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"
OAI = "sk-proj-ZyXwVuTsRqPoNmLkJiHg1234"
GOO = "AIzaSyD-1234567890abcdefghijklmnopq"
XAI = "xai-0123456789abcdefghijKLMN"
GROQ = "gsk_0123456789abcdefghijKLMN"
ODD = "Qq9!odd*shaped~KEY#2024"  # no known shape: only registration catches it
ALL = (ANT, OAI, GOO, XAI, GROQ, ODD)


@pytest.fixture
def log_dir(tmp_path):
    d = tmp_path / "logs"
    yield d
    close_logging()
    _forget_secrets()
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    logging.getLogger().setLevel(logging.WARNING)


def log_text(d: Path, name: str = "ikigaid.log") -> str:
    assert flush_logging()  # lines are written by the log's writer thread
    return (d / name).read_text()


def lines(d: Path, name: str = "ikigaid.log") -> list[dict]:
    return [json.loads(line) for line in log_text(d, name).splitlines()]


def assert_clean(text: str) -> None:
    for secret in ALL:
        assert secret not in text
        assert secret[8:20] not in text  # not even a slice of one


def test_events_are_redacted_in_the_json_file(log_dir):
    configure_logging(log_dir, foreground=False)
    register_secret(ODD)
    log = structlog.get_logger("ikigai.test")
    log.info(f"calling with {ANT} and {ODD}", attempt=1)
    log.info("nested", body={"providers": [{"cfg": {"note": f"key is {OAI}"}}], "n": 3})
    log.info(
        "request",
        headers={
            "Authorization": f"Bearer {OAI}",
            "x-api-key": "short",
            "x-goog-api-key": GOO,
            "Content-Type": "application/json",
        },
    )
    try:
        raise RuntimeError(f"provider said: invalid key {XAI}")
    except RuntimeError:
        log.exception("turn failed")
    log.warning("oops", error=ValueError(f"bad {GROQ}"))
    text = log_text(log_dir)
    assert_clean(text)
    assert "short" not in text
    recs = lines(log_dir)
    assert [r["event"] for r in recs] == [
        f"calling with {REDACTED} and {REDACTED}",
        "nested",
        "request",
        "turn failed",
        "oops",
    ]
    assert recs[0]["attempt"] == 1 and recs[0]["level"] == "info"
    assert recs[0]["logger"] == "ikigai.test"
    assert recs[1]["body"] == {"providers": [{"cfg": {"note": f"key is {REDACTED}"}}], "n": 3}
    assert recs[2]["headers"] == {
        "Authorization": REDACTED,
        "x-api-key": REDACTED,
        "x-goog-api-key": REDACTED,
        "Content-Type": "application/json",
    }
    assert recs[3]["level"] == "error"
    assert recs[3]["exception"].startswith("Traceback (most recent call last):")
    assert recs[3]["exception"].endswith(f"RuntimeError: provider said: invalid key {REDACTED}")
    assert recs[4]["error"] == f"ValueError('bad {REDACTED}')"
    assert list(recs[0])[:4] == ["timestamp", "level", "logger", "event"]


def test_stdlib_loggers_go_through_the_redaction(log_dir):
    configure_logging(log_dir, foreground=False)
    register_secret(ODD)
    logging.getLogger("httpx").warning(
        'HTTP Request: POST %s "HTTP/1.1 401"', f"https://g.example/v1?key={GOO}"
    )
    try:
        raise OSError(f"auth failed for {ODD}")
    except OSError:
        logging.getLogger("some.lib").exception("with %s", ANT)
    text = log_text(log_dir)
    assert_clean(text)
    recs = lines(log_dir)
    assert (
        recs[0]["event"] == f'HTTP Request: POST https://g.example/v1?key={REDACTED} "HTTP/1.1 401"'
    )
    assert recs[0]["logger"] == "httpx" and recs[0]["level"] == "warning"
    assert recs[1]["event"] == f"with {REDACTED}"
    assert recs[1]["exception"].endswith(f"OSError: auth failed for {REDACTED}")


def test_context_vars_tag_structlog_and_stdlib_lines(log_dir):
    configure_logging(log_dir, foreground=False)
    with structlog.contextvars.bound_contextvars(agent="019ab3", turn="t-7"):
        structlog.get_logger("ikigai.agents").info("turn started")
        logging.getLogger("httpx").warning("retrying")
    structlog.get_logger().info("after")
    recs = lines(log_dir)
    assert [(r.get("agent"), r.get("turn")) for r in recs] == [
        ("019ab3", "t-7"),
        ("019ab3", "t-7"),
        (None, None),
    ]


def test_level_filters(log_dir):
    configure_logging(log_dir, foreground=False, level="warning")
    log = structlog.get_logger("x")
    log.info("dropped")
    logging.getLogger("y").info("dropped too")
    log.warning("kept")
    assert [r["event"] for r in lines(log_dir)] == ["kept"]


def test_debug_level_keeps_debug(log_dir):
    configure_logging(log_dir, foreground=False, level="debug")
    structlog.get_logger("x").debug("seen")
    assert [r["event"] for r in lines(log_dir)] == ["seen"]


def test_unknown_level_is_refused(log_dir):
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging(log_dir, foreground=False, level="loud")


def test_files_are_private_and_rotate_by_size(log_dir):
    configure_logging(log_dir, foreground=False, max_bytes=2000, backups=2)
    log = structlog.get_logger("x")
    for i in range(100):
        log.info("filler line", i=i, key_material=ANT)
    assert flush_logging()
    names = sorted(p.name for p in log_dir.iterdir())
    assert names == ["ikigaid.log", "ikigaid.log.1", "ikigaid.log.2"]
    assert stat.S_IMODE(os.stat(log_dir).st_mode) == 0o700
    for name in names:
        path = log_dir / name
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert path.stat().st_size <= 2000
        assert_clean(path.read_text())
    assert lines(log_dir)[-1]["i"] == 99


def test_foreground_writes_readable_redacted_lines_to_stderr(log_dir, capsys):
    configure_logging(log_dir, foreground=True)
    structlog.get_logger("ikigai.daemon").info("ikigaid ready", socket="/run/x.sock", key=ANT)
    assert flush_logging()
    err = capsys.readouterr().err
    assert "ikigaid ready" in err
    assert "socket=/run/x.sock" in err
    assert f"key={REDACTED}" in err
    assert not err.lstrip().startswith("{")  # not JSON
    assert_clean(err)
    assert lines(log_dir)[0]["event"] == "ikigaid ready"  # and the file still gets it


def test_without_a_log_dir_background_goes_to_stderr_as_json(log_dir, capsys):
    configure_logging(None, foreground=False)
    structlog.get_logger("x").info("hello", token=OAI)
    assert flush_logging()
    rec = json.loads(capsys.readouterr().err.strip())
    assert rec["event"] == "hello" and rec["token"] == REDACTED


def test_configuring_again_replaces_the_handlers(log_dir, tmp_path):
    configure_logging(log_dir, foreground=False)
    other = tmp_path / "other"
    configure_logging(other, foreground=False)
    structlog.get_logger("x").info("once")
    assert not (log_dir / "ikigaid.log").exists() or (log_dir / "ikigaid.log").read_text() == ""
    assert [r["event"] for r in lines(other)] == ["once"]


# ------------------------------------------------------------------ redact()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {ANT} end", f"key {REDACTED} end"),
        (f"({OAI})", f"({REDACTED})"),
        ("sk-or-v1-0123456789abcdef0123", REDACTED),
        (f"url?key={GOO}&alt=sse", f"url?key={REDACTED}&alt=sse"),
        (XAI, REDACTED),
        (GROQ, REDACTED),
        ("Authorization: Bearer abc.DEF-123_456", f"Authorization: Bearer {REDACTED}"),
        ("x-api-key: 0123456789abcdefABCDEF", f"x-api-key: {REDACTED}"),
        ('{"api_key": "c29tZSBsb25nIHNlY3JldCB2YWx1ZQ=="}', f'{{"api_key": "{REDACTED}"}}'),
        ("token=deadbeefdeadbeefdeadbeef", f"token={REDACTED}"),
        ("client_secret = 'abcdefghijklmnop'", f"client_secret = '{REDACTED}'"),
        ("password=hunter2 next", f"password={REDACTED} next"),
        ("postgresql://ik:pa55w0rd@db:5432/ik", f"postgresql://ik:{REDACTED}@db:5432/ik"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r", REDACTED),
    ],
)
def test_redact_scrubs_key_shaped_text(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=4096",
        "key_env=ANTHROPIC_API_KEY",
        "disk-usage-report-for-everything",
        "task-0123456789abcdefghij",
        "claude-sonnet-4-5 / Thinking: enabled (43,008 token budget - medium)",
        "input_tokens: 1234",
        "sk-short",
        "postgresql://db/ik",
        "sqlite:////home/me/.local/share/ikigai/ikigai.db",
    ],
)
def test_redact_leaves_ordinary_text_alone(text):
    assert redact(text) == text


def test_redact_walks_structures_and_keys():
    data = {
        "headers": {"Authorization": "Basic dXNlcjpwYXNz", "X-Api-Key": "k", "Accept": "*/*"},
        f"odd {ANT}": (1, 2.5, True, None, [f"{GOO}"]),
        "credentials": {"anthropic": "short", "count": 2},
        "api_key": None,
        "input_tokens": 12,
        "key_env": ["ANTHROPIC_API_KEY"],
        "raw": ANT.encode(),
        "path": Path("/tmp/x"),
    }
    assert redact(data) == {
        "headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED, "Accept": "*/*"},
        f"odd {REDACTED}": (1, 2.5, True, None, [REDACTED]),
        "credentials": {"anthropic": REDACTED, "count": 2},
        "api_key": None,
        "input_tokens": 12,
        "key_env": ["ANTHROPIC_API_KEY"],
        "raw": REDACTED,
        "path": "PosixPath('/tmp/x')",
    }


def test_registered_secrets_are_redacted_exactly(log_dir):
    assert redact(f"a {ODD} b") == f"a {ODD} b"
    register_secret(ODD)
    register_secret("tiny")  # too short to register: it would blank ordinary words
    register_secret(None)
    # a key cut short (a provider quoting its start, a message cut at some
    # length) is still the key: every prefix of 8+ characters goes too
    assert redact(f"a {ODD} b {ODD[:-1]} c {ODD[:8]}.") == f"a {REDACTED} b {REDACTED} c {REDACTED}."
    # and so is a piece of 12+ characters cut from anywhere in it (issue 28);
    # 7 from the start, or 11 from the middle, are too short to tell from words
    assert redact(f"a {ODD[1:]} b {ODD[5:17]}.") == f"a {REDACTED} b {REDACTED}."
    assert redact(f"a {ODD[:7]} b {ODD[1:12]}") == f"a {ODD[:7]} b {ODD[1:12]}"
    assert redact("a tiny cat") == "a tiny cat"


def test_redact_survives_cycles_and_bad_reprs():
    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    loop: list = []
    loop.append(loop)
    assert redact(Bad()) == "<unrepresentable Bad>"
    out = redact(loop)
    assert isinstance(out, list)


def test_a_secret_registered_after_a_text_was_logged_is_scrubbed_from_it_next_time(log_dir):
    # short texts are scrubbed once and remembered: registering a secret must forget them
    configure_logging(log_dir, foreground=False)
    log = structlog.get_logger("ikigai.test")
    for _ in range(3):
        log.info("using", value=ODD, ref=f"token-{ODD}")
    assert flush_logging()  # written before the registration
    register_secret(ODD)
    log.info("using", value=ODD, ref=f"token-{ODD}")
    got = lines(log_dir)
    assert got[0]["value"] == ODD  # no known shape: kept until registered
    assert got[-1]["value"] == REDACTED and ODD not in json.dumps(got[-1])
    _forget_secrets()
    log.info("using", value=ODD)
    assert lines(log_dir)[-1]["value"] == ODD


def test_each_line_is_formatted_once(log_dir, monkeypatch):
    # the rotating handler formats a record to measure it: the text is reused for the write
    configure_logging(log_dir, foreground=False)
    calls = 0
    real = structlog.stdlib.ProcessorFormatter.format

    def counting(self, record):
        nonlocal calls
        calls += 1
        return real(self, record)

    monkeypatch.setattr(structlog.stdlib.ProcessorFormatter, "format", counting)
    log = structlog.get_logger("ikigai.test")
    for i in range(10):
        log.info("line", i=i)
    assert flush_logging()
    assert calls == 10
    assert [x["i"] for x in lines(log_dir)] == list(range(10))
