"""Where ikigai keeps things: config, credentials, database, logs, socket.

Standard library only: ``ikictl`` imports this module at start-up (to find the
socket and read ``autostart``), and must stay fast.

- config:       $XDG_CONFIG_HOME/ikigai/config.json       IKIGAI_HOME/config.json
- credentials:  $XDG_CONFIG_HOME/ikigai/credentials.json  IKIGAI_HOME/credentials.json
- database:     $XDG_DATA_HOME/ikigai/ikigai.db           IKIGAI_HOME/ikigai.db
- logs:         $XDG_STATE_HOME/ikigai/                   IKIGAI_HOME/logs/
- socket:       $XDG_RUNTIME_DIR/ikigai/ikigai.sock       IKIGAI_HOME/run/ikigai.sock
- worktrees:    $XDG_DATA_HOME/ikigai/worktrees/          IKIGAI_HOME/worktrees/

XDG_CONFIG_HOME defaults to ~/.config, XDG_DATA_HOME to ~/.local/share,
XDG_STATE_HOME to ~/.local/state; without XDG_RUNTIME_DIR the socket folder is
/tmp/ikigai-$UID. IKIGAI_CONFIG, IKIGAI_DB_URL and IKIGAI_SOCKET override one
each, over IKIGAI_HOME. An empty variable counts as unset.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CONFIG_FILE",
    "CREDENTIALS_FILE",
    "DB_FILE",
    "LOG_FILE",
    "SOCKET_FILE",
    "PathError",
    "Paths",
    "ensure_private_dir",
    "read_autostart",
    "resolve_paths",
    "runtime_dir",
]

APP = "ikigai"
CONFIG_FILE = "config.json"
CREDENTIALS_FILE = "credentials.json"
DB_FILE = "ikigai.db"  # the same name as store._engine.DB_FILE
LOG_FILE = "ikigaid.log"
SOCKET_FILE = "ikigai.sock"

ENV_HOME = "IKIGAI_HOME"
ENV_CONFIG = "IKIGAI_CONFIG"
ENV_DB_URL = "IKIGAI_DB_URL"
ENV_SOCKET = "IKIGAI_SOCKET"


class PathError(OSError):
    """A folder ikigai cannot use safely (owned by someone else, not a folder...)."""


@dataclass(frozen=True)
class Paths:
    config_file: Path
    credentials_file: Path
    db_url: str  # IKIGAI_DB_URL, else the SQLite default; see database_url()
    log_dir: Path
    socket: Path
    home: Path | None = None  # IKIGAI_HOME when set
    db_url_from_env: bool = False  # db_url came from IKIGAI_DB_URL
    # where agents' git worktrees are made (agent.fork {worktree})
    worktrees: Path | None = None

    def database_url(self, configured: str | None = None) -> str:
        """The database to use: IKIGAI_DB_URL, else the config's
        ``database_url``, else the SQLite file (under IKIGAI_HOME or XDG_DATA_HOME)."""
        if self.db_url_from_env or not configured:
            return self.db_url
        return configured

    @property
    def log_file(self) -> Path:
        return self.log_dir / LOG_FILE


def _get(env: Mapping[str, str], name: str) -> str | None:
    return env.get(name) or None


def _home(env: Mapping[str, str]) -> Path:
    h = _get(env, "HOME")
    return Path(h) if h else Path.home()


def _xdg(env: Mapping[str, str], name: str, *default: str) -> Path:
    value = _get(env, name)
    return Path(value) if value else _home(env).joinpath(*default)


def runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_RUNTIME_DIR/ikigai, or /tmp/ikigai-$UID without one (as
    ``protocol.runtime_dir``, but reading ``env``)."""
    env = os.environ if env is None else env
    base = _get(env, "XDG_RUNTIME_DIR")
    if base:
        return Path(base) / APP
    return Path(f"/tmp/ikigai-{os.getuid()}")


def resolve_paths(env: Mapping[str, str] | None = None) -> Paths:
    """Every path ikigai uses, from the environment (``os.environ`` by default)."""
    env = os.environ if env is None else env
    home_text = _get(env, ENV_HOME)
    home = Path(home_text) if home_text else None
    if home is not None:
        config_file = home / CONFIG_FILE
        credentials_file = home / CREDENTIALS_FILE
        db_file = home / DB_FILE
        log_dir = home / "logs"
        socket = home / "run" / SOCKET_FILE
        worktrees = home / "worktrees"
    else:
        config_dir = _xdg(env, "XDG_CONFIG_HOME", ".config") / APP
        config_file = config_dir / CONFIG_FILE
        credentials_file = config_dir / CREDENTIALS_FILE
        db_file = _xdg(env, "XDG_DATA_HOME", ".local", "share") / APP / DB_FILE
        worktrees = db_file.parent / "worktrees"
        log_dir = _xdg(env, "XDG_STATE_HOME", ".local", "state") / APP
        socket = runtime_dir(env) / SOCKET_FILE
    if _get(env, ENV_CONFIG):
        config_file = Path(env[ENV_CONFIG])
    if _get(env, ENV_SOCKET):
        socket = Path(env[ENV_SOCKET])
    db_env = _get(env, ENV_DB_URL)
    return Paths(
        config_file=config_file,
        credentials_file=credentials_file,
        db_url=db_env or f"sqlite:///{db_file}",
        log_dir=log_dir,
        socket=socket,
        home=home,
        db_url_from_env=db_env is not None,
        worktrees=worktrees,
    )


def ensure_private_dir(path: Path) -> Path:
    """Make ``path`` a folder only this user can enter (mode 0700) and return it.

    Missing folders are created (parents with the default mode); a folder of
    ours with a looser mode is tightened to 0700. A folder, or a symbolic link
    to one, owned by another user is refused with PathError: in a shared /tmp
    someone else may have made it first.
    """
    path = Path(path)
    uid = os.getuid()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        pass  # something that is not a folder: said below
    except OSError as e:
        raise PathError(f"cannot create folder {path}: {e.strerror or e}") from None
    try:
        link = os.lstat(path)
    except OSError as e:
        raise PathError(f"cannot use folder {path}: {e.strerror or e}") from None
    if stat.S_ISLNK(link.st_mode) and link.st_uid != uid:
        raise PathError(
            f"{path} is a symbolic link owned by uid {link.st_uid}, not by this user "
            f"(uid {uid}): refusing to use it; remove it and try again"
        )
    try:
        st = os.stat(path)
    except OSError as e:
        raise PathError(f"cannot use folder {path}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise PathError(f"{path} is not a folder")
    if st.st_uid != uid:
        raise PathError(
            f"{path} is owned by uid {st.st_uid}, not by this user (uid {uid}): "
            "refusing to use it; remove it or choose another folder"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        try:
            os.chmod(path, 0o700)
        except OSError as e:
            raise PathError(f"cannot set mode 0700 on {path}: {e.strerror or e}") from None
    return path


def read_autostart(path: Path) -> bool:
    """The config's ``autostart`` (default true), read with the standard
    library for ``ikictl``. Tolerant: any problem reading it means True; the
    daemon reports a bad config file itself."""
    try:
        data = json.loads(Path(path).read_bytes() or b"{}")
    except (OSError, ValueError):
        return True
    if isinstance(data, dict):
        value = data.get("autostart", True)
        if isinstance(value, bool):
            return value
    return True
