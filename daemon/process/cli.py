"""``ikigaid``: the ikigai daemon's command line.

ikigaid [run]            run in the foreground (what systemd and a terminal want)
ikigaid run --detach     start in the background and return once it answers
ikigaid migrate          upgrade the database to the newest schema and say which
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from protocol.version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ikigaid",
        description=(
            "The ikigai daemon: runs LLM agents, one actor per agent, with every "
            "message kept in SQL history, and serves the control socket ikictl talks to. "
            "Paths follow XDG; IKIGAI_HOME=DIR puts config, credentials, database, logs "
            "and socket under DIR; IKIGAI_SOCKET, IKIGAI_DB_URL and IKIGAI_CONFIG "
            "override one each."
        ),
    )
    parser.add_argument("--version", action="version", version=f"ikigaid {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="run the daemon (the default command)",
        description=(
            "Run the daemon in the foreground until SIGTERM or SIGINT (SIGHUP reloads the config)."
        ),
    )
    run.add_argument(
        "--detach",
        action="store_true",
        help="start in the background and return once the socket answers",
    )
    run.add_argument(
        "--log-level",
        default=None,
        help="debug, info, warning or error (default: config log_level)",
    )
    sub.add_parser(
        "migrate",
        help="upgrade the database schema to the newest revision",
        description=(
            "Upgrade the database (IKIGAI_DB_URL, config database_url or the default "
            "SQLite file) to the newest schema revision and print it."
        ),
    )
    return parser


def _fail(message: str, code: int = 1) -> int:
    print(f"ikigaid: {message}", file=sys.stderr)
    return code


def _detach(log_level: str | None) -> int:
    from daemon.process.service import socket_in_use
    from protocol.paths import resolve_paths

    paths = resolve_paths()
    if socket_in_use(paths.socket):
        return _fail(f"another ikigaid is already running on {paths.socket}")
    paths.log_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.log_dir / "ikigaid.out", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    out = os.fdopen(fd, "ab")  # handed to the child: its early output, before logging starts
    cmd = [sys.executable, "-m", "daemon", "run"]
    if log_level:
        cmd += ["--log-level", log_level]
    child = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
    )
    out.close()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if socket_in_use(paths.socket):
            print(f"ikigaid started (pid {child.pid}), socket {paths.socket}")
            return 0
        if child.poll() is not None:
            return _fail(
                f"the daemon exited at start (code {child.returncode}); "
                f"see {paths.log_dir / 'ikigaid.out'}"
            )
        time.sleep(0.05)
    return _fail(f"the daemon did not answer on {paths.socket} within 15 s; see {paths.log_dir}")


def _not_dumpable() -> None:
    """Tools run as the same user: without this, a tool's `cat /proc/$PPID/environ`
    (or reading the daemon's memory) would show the keys it holds. A process
    that is not dumpable has those /proc files owned by root (as ssh-agent does)."""
    if sys.platform != "linux":
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass  # no prctl: the sandbox issue is the real fix


def _set_title(name: str = "ikigaid") -> None:
    """Show as ``ikigaid``, not ``python -m daemon run``: setproctitle rewrites
    argv (what ``ps -o args`` and ``pgrep -f`` show), PR_SET_NAME the kernel's
    comm (what ``pgrep -x ikigaid`` and ``top`` match). Each is optional."""
    try:
        import setproctitle
    except ImportError:
        pass
    else:
        setproctitle.setproctitle(name)  # sets comm too on Linux; PR_SET_NAME below if not
    if sys.platform != "linux":
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME (15 bytes at most)
    except (OSError, AttributeError):
        pass


def _run(log_level: str | None) -> int:
    import trio

    from daemon.config import ConfigError, load_config
    from daemon.process.lock import LockError
    from daemon.process.logs import close_logging, configure_logging
    from daemon.process.service import AlreadyRunning, Daemon, StartupError
    from protocol.credentials import CredentialsError
    from protocol.paths import resolve_paths
    from store import StoreError

    _not_dumpable()
    _set_title()
    paths = resolve_paths()
    try:
        level = log_level or load_config(paths.config_file).log_level
    except ConfigError as e:
        return _fail(str(e))
    configure_logging(
        paths.log_dir,
        foreground=sys.stderr.isatty() or os.environ.get("IKIGAI_LOG_STDERR") == "1",
        level=level,
    )
    try:
        trio.run(Daemon(paths).run)
    except (
        AlreadyRunning,
        LockError,
        StartupError,
        ConfigError,
        CredentialsError,
        StoreError,
    ) as e:
        close_logging()  # its log lines on stderr before the message
        return _fail(str(e))
    except KeyboardInterrupt:
        return 130
    finally:
        close_logging()  # the writer thread's queue, written out before the exit
    return 0


def _migrate() -> int:
    from daemon.config import ConfigError, load_config
    from protocol.paths import resolve_paths
    from store import StoreError
    from store.migrate import upgrade

    paths = resolve_paths()
    try:
        url = (
            os.environ.get("IKIGAI_DB_URL")
            or load_config(paths.config_file).database_url
            or paths.db_url
        )
        revision = upgrade(url)
    except ConfigError as e:
        return _fail(str(e))
    except StoreError as e:
        return _fail(str(e))
    print(f"database at revision {revision}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "run"
    if command == "migrate":
        return _migrate()
    if getattr(args, "detach", False):
        return _detach(args.log_level)
    return _run(getattr(args, "log_level", None))


if __name__ == "__main__":
    sys.exit(main())
