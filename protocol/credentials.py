"""credentials.json: API keys by provider name (or by environment variable name).

    {"anthropic": "sk-ant-...", "openai": "sk-...", "GEMINI_API_KEY": "AIza..."}

The providers' usual environment variables win over the file
(``providers.settings.settings_for`` does the lookup). The file must be
private to its owner: one readable or writable by group or others is refused
with the ``chmod`` that fixes it. A malformed file is refused naming the file
and the line, never echoing its content.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from providers.redact import redact

from .jsontext import text_fault, undecodable_field

__all__ = [
    "CredentialsError",
    "load_credentials",
    "secret_values",
    "update_credentials",
    "write_private",
]


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


class CredentialsError(ValueError):
    """credentials.json cannot be used; the message names the file and the fix."""


def load_credentials(path: Path) -> dict[str, str]:
    """The keys in ``path``; a missing file is no keys. Empty values are dropped."""
    path = Path(path)
    raw = _read_private(path)
    return {} if raw is None else _parse(path, raw)


def _read_private(path: Path) -> bytes | None:
    """The file's bytes (None: no file), refusing one that is not private."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        raise CredentialsError(f"{path}: cannot read it: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CredentialsError(f"{path}: not a regular file")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o066:
            raise CredentialsError(
                f"{path} is readable or writable by other users (mode {mode:04o}); "
                f"it holds API keys: run chmod 600 {path}"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    except OSError as e:
        raise CredentialsError(f"{path}: cannot read it: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _parse(path: Path, raw: bytes) -> dict[str, str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        field = undecodable_field(raw)
        where = f"{redact(field)}: " if field else ""
        raise CredentialsError(f"{path}: {where}not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        # e.msg describes the grammar ("Expecting ',' delimiter"), never the text
        raise CredentialsError(
            f"{path}: line {e.lineno} column {e.colno}: not valid JSON ({e.msg}); "
            'write {"PROVIDER": "KEY", ...}'
        ) from None
    except RecursionError:  # json.loads recurses: a hostile file must not end a reload
        raise CredentialsError(f"{path}: not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise CredentialsError(
            f'{path}: expected a JSON object {{"PROVIDER": "KEY", ...}}, got {_kind(data)}'
        )
    fault = text_fault(data)
    if fault is not None:
        raise CredentialsError(f"{path}: {redact(fault)}")
    out: dict[str, str] = {}
    for name, value in data.items():
        if not isinstance(value, str):
            raise CredentialsError(
                f"{path}: the value of {redact(name)!r} must be a string (the key), "
                f"not {_kind(value)}"
            )
        value = value.strip()
        if value:
            out[name] = value
    return out


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a string"


def secret_values(
    credentials: Mapping[str, str],
    env: Mapping[str, str] | None = None,
    key_env: Iterable[str] = (),
) -> list[str]:
    """Every configured key: the credentials' values and the values of the
    environment variables in ``key_env`` (all providers' key variables). The
    daemon passes them to ``daemon.logs.register_secret``."""
    env = os.environ if env is None else env
    found = [v for v in credentials.values() if v]
    found.extend(env[name] for name in key_env if env.get(name))
    return list(dict.fromkeys(found))


def update_credentials(
    path: Path, *, put: Mapping[str, str] | None = None, remove: Iterable[str] = ()
) -> list[str]:
    """Set the entries of ``put`` and drop those named in ``remove``, keeping every
    other entry as written; the names actually removed. The file is replaced
    atomically (``write_private``); one that is not private or not valid is
    refused (CredentialsError) and left as it is, never overwritten."""
    path = Path(os.path.realpath(path))  # a symlinked file stays a symlink
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        dirfd = os.open(path.parent, _DIR_FLAGS)
    except OSError as e:
        raise CredentialsError(f"{path}: cannot write it: {e.strerror or e}") from None
    try:
        # two `ikictl keys set` at once must not lose one of the two keys
        fcntl.flock(dirfd, fcntl.LOCK_EX)
        raw = _read_private(path)
        data: dict[str, str] = {}
        if raw is not None:
            _parse(path, raw)  # the same checks as the daemon's, before any change
            text = raw.decode("utf-8")
            if text.strip():  # the loader's rule: a blank file is no keys
                data = json.loads(text)
        removed = [name for name in remove if name in data]
        for name in removed:
            del data[name]
        data.update(put or {})
        text = json.dumps(data, indent=2) + "\n"
        try:
            write_private(path, text.encode(), dirfd=dirfd)
        except OSError as e:
            raise CredentialsError(f"{path}: cannot write it: {e.strerror or e}") from None
        return removed
    finally:
        os.close(dirfd)


def write_private(path: Path, data: bytes, *, dirfd: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, mode 0600 from its creation: a
    temporary file in the same folder (O_EXCL, so never someone else's), fsync,
    rename over, fsync the folder. A crash leaves the old file or the new one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)  # the umask may only remove bits; be explicit anyway
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    folder = os.open(path.parent, _DIR_FLAGS) if dirfd is None else dirfd
    try:
        os.fsync(folder)  # the rename itself is durable only once the folder is
    finally:
        if dirfd is None:
            os.close(folder)
