from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import protocol
from protocol.paths import PathError, Paths, ensure_private_dir, read_autostart, resolve_paths

UID = os.getuid()


def test_defaults_follow_xdg_fallbacks_under_home():
    p = resolve_paths({"HOME": "/h"})
    assert p == Paths(
        config_file=Path("/h/.config/ikigai/config.json"),
        credentials_file=Path("/h/.config/ikigai/credentials.json"),
        db_url="sqlite:////h/.local/share/ikigai/ikigai.db",
        log_dir=Path("/h/.local/state/ikigai"),
        socket=Path(f"/tmp/ikigai-{UID}/ikigai.sock"),
        home=None,
        db_url_from_env=False,
        worktrees=Path("/h/.local/share/ikigai/worktrees"),
    )
    assert p.log_file == Path("/h/.local/state/ikigai/ikigaid.log")


def test_xdg_variables_are_respected():
    p = resolve_paths(
        {
            "HOME": "/h",
            "XDG_CONFIG_HOME": "/c",
            "XDG_DATA_HOME": "/d",
            "XDG_STATE_HOME": "/s",
            "XDG_RUNTIME_DIR": "/run/user/1000",
        }
    )
    assert p.config_file == Path("/c/ikigai/config.json")
    assert p.credentials_file == Path("/c/ikigai/credentials.json")
    assert p.db_url == "sqlite:////d/ikigai/ikigai.db"
    assert p.log_dir == Path("/s/ikigai")
    assert p.socket == Path("/run/user/1000/ikigai/ikigai.sock")
    assert p.worktrees == Path("/d/ikigai/worktrees")


def test_empty_variables_count_as_unset():
    env = {
        "HOME": "/h",
        "XDG_CONFIG_HOME": "",
        "IKIGAI_HOME": "",
        "IKIGAI_SOCKET": "",
        "IKIGAI_DB_URL": "",
        "IKIGAI_CONFIG": "",
        "XDG_RUNTIME_DIR": "",
    }
    assert resolve_paths(env) == resolve_paths({"HOME": "/h"})


def test_ikigai_home_puts_everything_in_one_folder():
    p = resolve_paths(
        {"HOME": "/h", "XDG_CONFIG_HOME": "/c", "XDG_RUNTIME_DIR": "/r", "IKIGAI_HOME": "/w"}
    )
    assert p == Paths(
        config_file=Path("/w/config.json"),
        credentials_file=Path("/w/credentials.json"),
        db_url="sqlite:////w/ikigai.db",
        log_dir=Path("/w/logs"),
        socket=Path("/w/run/ikigai.sock"),
        home=Path("/w"),
        db_url_from_env=False,
        worktrees=Path("/w/worktrees"),
    )


def test_single_overrides_beat_ikigai_home_and_touch_only_their_path():
    env = {
        "HOME": "/h",
        "IKIGAI_HOME": "/w",
        "IKIGAI_CONFIG": "/etc/ik.json",
        "IKIGAI_SOCKET": "/s/x.sock",
        "IKIGAI_DB_URL": "postgresql://db/ik",
    }
    p = resolve_paths(env)
    assert p.config_file == Path("/etc/ik.json")
    assert p.credentials_file == Path("/w/credentials.json")  # not moved by IKIGAI_CONFIG
    assert p.socket == Path("/s/x.sock")
    assert p.db_url == "postgresql://db/ik"
    assert p.db_url_from_env is True
    assert p.log_dir == Path("/w/logs")


def test_database_url_precedence_env_then_config_then_default():
    default = resolve_paths({"HOME": "/h"})
    assert default.database_url(None) == "sqlite:////h/.local/share/ikigai/ikigai.db"
    assert default.database_url("") == "sqlite:////h/.local/share/ikigai/ikigai.db"
    assert default.database_url("postgresql://cfg/x") == "postgresql://cfg/x"
    home = resolve_paths({"HOME": "/h", "IKIGAI_HOME": "/w"})
    assert home.database_url("postgresql://cfg/x") == "postgresql://cfg/x"
    env = resolve_paths({"HOME": "/h", "IKIGAI_DB_URL": "sqlite:////e.db"})
    assert env.database_url("postgresql://cfg/x") == "sqlite:////e.db"


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"XDG_RUNTIME_DIR": "/run/user/7"},
        {"XDG_RUNTIME_DIR": ""},
        {"IKIGAI_HOME": "/w"},
        {"IKIGAI_HOME": "/w", "IKIGAI_SOCKET": "/x.sock"},
        {"XDG_RUNTIME_DIR": "/run/user/7", "IKIGAI_SOCKET": "/x.sock"},
    ],
)
def test_socket_agrees_with_protocol(monkeypatch, env):
    for name in ("XDG_RUNTIME_DIR", "IKIGAI_HOME", "IKIGAI_SOCKET"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert str(resolve_paths().socket) == protocol.socket_path()
    assert str(resolve_paths(dict(os.environ)).socket) == protocol.socket_path(dict(os.environ))


@pytest.mark.parametrize("data_home", [None, "/d"])
def test_database_default_agrees_with_store(monkeypatch, data_home):
    from store._engine import default_url

    monkeypatch.setenv("HOME", "/h")
    monkeypatch.delenv("IKIGAI_HOME", raising=False)
    monkeypatch.delenv("IKIGAI_DB_URL", raising=False)
    if data_home is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", data_home)
    assert resolve_paths().db_url == default_url()


def test_paths_module_needs_only_the_standard_library():
    code = (
        "import sys, protocol.paths; "
        "print(sorted(m for m in ('msgspec', 'structlog', 'providers', 'trio') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ ensure_private_dir


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_ensure_private_dir_creates_with_0700(tmp_path):
    target = tmp_path / "a" / "b" / "ikigai"
    old = os.umask(0)
    try:
        assert ensure_private_dir(target) == target
    finally:
        os.umask(old)
    assert target.is_dir()
    assert _mode(target) == 0o700


@pytest.mark.parametrize("mode", [0o755, 0o711, 0o777, 0o500])
def test_ensure_private_dir_fixes_a_wrong_mode_on_our_folder(tmp_path, mode):
    target = tmp_path / "run"
    target.mkdir()
    os.chmod(target, mode)
    ensure_private_dir(target)
    assert _mode(target) == 0o700


def test_ensure_private_dir_refuses_a_file(tmp_path):
    target = tmp_path / "f"
    target.write_text("x")
    with pytest.raises(PathError) as e:
        ensure_private_dir(target)
    assert str(e.value) == f"{target} is not a folder"


def _other_owned_dir(tmp_path: Path) -> tuple[Path, int]:
    if UID == 0:
        d = tmp_path / "theirs"
        d.mkdir(mode=0o755)
        os.chown(d, 65534, 65534)
        return d, 65534
    return Path("/"), os.stat("/").st_uid


def test_ensure_private_dir_refuses_a_folder_owned_by_another_user(tmp_path):
    d, owner = _other_owned_dir(tmp_path)
    before = _mode(d)
    with pytest.raises(PathError) as e:
        ensure_private_dir(d)
    assert str(e.value) == (
        f"{d} is owned by uid {owner}, not by this user (uid {UID}): "
        "refusing to use it; remove it or choose another folder"
    )
    assert _mode(d) == before  # not touched


@pytest.mark.skipif(UID != 0, reason="needs root to make a link owned by someone else")
def test_ensure_private_dir_refuses_a_symlink_planted_by_another_user(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    link = tmp_path / "ikigai-0"
    link.symlink_to(mine)
    os.lchown(link, 65534, 65534)
    with pytest.raises(PathError) as e:
        ensure_private_dir(link)
    assert str(e.value) == (
        f"{link} is a symbolic link owned by uid 65534, not by this user "
        f"(uid {UID}): refusing to use it; remove it and try again"
    )


def test_ensure_private_dir_accepts_our_own_symlink(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o755)
    link = tmp_path / "link"
    link.symlink_to(real)
    ensure_private_dir(link)
    assert _mode(real) == 0o700


# ------------------------------------------------------------------ read_autostart


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, True),  # no file
        (b"", True),
        (b'{"autostart": false}', False),
        (b'{"autostart": true}', True),
        (b'{"default_model": "gpt-4o"}', True),
        (b'{"autostart": "no"}', True),
        (b'{"autostart": 0}', True),
        (b"[false]", True),
        (b'{"autostart": false', True),
        (b"\xff\xfe", True),
    ],
)
def test_read_autostart_is_tolerant(tmp_path, content, expected):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_bytes(content)
    assert read_autostart(path) is expected


def test_read_autostart_on_a_folder_is_true(tmp_path):
    assert read_autostart(tmp_path) is True


def test_read_autostart_agrees_with_load_config(tmp_path):
    from daemon.config import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"autostart": False, "max_tool_turns": 3}))
    assert read_autostart(path) is load_config(path).autostart is False


# ------------------------------------------------------------------ the systemd units

UNITS = Path(__file__).parents[2] / "contrib" / "systemd"


def _unit(name: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (UNITS / name).read_text().splitlines():
        if line and not line.startswith(("#", "[")) and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def test_service_unit():
    unit = _unit("ikigaid.service")
    assert unit["Type"] == "notify"
    assert unit["ExecStart"] == "%h/.local/bin/ikigaid run"
    assert unit["Restart"] == "on-failure"
    assert unit["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert unit["WantedBy"] == "default.target"


def test_socket_unit_listens_where_the_daemon_would():
    unit = _unit("ikigaid.socket")
    assert unit["SocketMode"] == "0600"
    assert unit["DirectoryMode"] == "0700"
    runtime = "/run/user/1000"  # what systemd expands %t to
    listen = unit["ListenStream"].replace("%t", runtime)
    assert Path(listen) == resolve_paths({"HOME": "/h", "XDG_RUNTIME_DIR": runtime}).socket
