"""``ikictl keys list|set|rm``: the providers' API keys in credentials.json,
and the hint for a turn that failed for a key this shell has but the daemon
does not.

A key is never printed, echoed, logged or put in an error message. Importing
this module costs only ``os`` and ``re``: stream.py imports it for the hint on
every streamed turn; the catalog, config and credentials code is imported by
the commands themselves (rare paths).
"""

from __future__ import annotations

import os
import re
import sys

from ikictl._errors import EXIT_ERROR, EXIT_OK, UsageError

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from providers.catalog import Catalog

__all__ = ["cmd_keys", "read_key", "stale_key_hint", "with_key_hint"]

# providers/settings.py: `no API key for NAME: set VAR or VAR2 or add "NAME" to
# credentials.json`; daemon/methods/api.py (providers.check): `no API key: set VAR`
_NO_KEY = re.compile(
    r"no API key(?: for ([\w./-]+))?: set ([A-Za-z_][A-Za-z0-9_]*(?: or [A-Za-z_][A-Za-z0-9_]*)*)"
)
MAX_KEY = 16384  # far above any provider's key; bounds what is read from stdin


def stale_key_hint(error: str, env: Mapping[str, str]) -> str | None:
    """When ``error`` says the daemon has no key in a variable that ``env`` (this
    shell's environment) has set: the daemon started before it was exported."""
    m = _NO_KEY.search(error)
    if m is None:
        return None
    var = next((v for v in m.group(2).split(" or ") if env.get(v, "").strip()), None)
    if var is None:
        return None
    name = m.group(1) or "PROVIDER"
    return (
        f"the daemon started before {var} was set in this shell: run `ikictl daemon restart` "
        f"(or `ikictl keys set {name}`)"
    )


def with_key_hint(message: str) -> str:
    """``message`` and, on a line of its own, the stale-key hint if there is one."""
    hint = stale_key_hint(message, os.environ)
    return message if hint is None else f"{message}\nhint: {hint}"


# ---------------------------------------------------------------- reading a key


def read_key(provider: str) -> str:
    """The key from the terminal without echo, or from stdin when it is not a
    terminal (one trailing newline stripped). Refused, without the key in the
    message: empty, too long, not UTF-8, a space or control character inside."""
    if sys.stdin.isatty():
        import getpass

        try:
            text = getpass.getpass(f"API key for {provider} (not shown): ")
        except EOFError:
            raise UsageError("no key given (end of input)") from None
        raw = text.encode("utf-8", "surrogateescape")
    else:
        raw = sys.stdin.buffer.read(MAX_KEY + 2)
    return check_key(raw)


def check_key(raw: bytes) -> str:
    if raw.endswith(b"\r\n"):
        raw = raw[:-2]
    elif raw.endswith(b"\n"):
        raw = raw[:-1]
    if not raw:
        raise UsageError("the key is empty: nothing saved")
    if len(raw) > MAX_KEY:
        raise UsageError(f"the key is longer than {MAX_KEY} bytes: nothing saved")
    try:
        key = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"the key is not UTF-8 text (byte {e.start + 1}): nothing saved") from None
    for i, ch in enumerate(key, 1):
        # an API key is printable ASCII: anything else is a paste accident (a
        # second line, a tab, a terminal escape) and would break the HTTP header
        if not "!" <= ch <= "~":
            if ch == " ":
                what = "a space"
            elif ch < " " or ch == "\x7f":
                what = "a control character"  # a line break, a tab, an escape...
            else:
                what = "a non-ASCII character"
            raise UsageError(
                f"the key has {what} at character {i} (a key is printable ASCII without "
                "spaces): nothing saved"
            )
    return key


# ---------------------------------------------------------------- the command


def _paths() -> tuple[Path, Path]:
    from protocol.paths import resolve_paths

    paths = resolve_paths(os.environ)
    return paths.credentials_file, paths.config_file


def _catalog(config_file: Path) -> Catalog:
    """The catalog with config.json's custom providers, as ``models --offline``
    reads it (the daemon names a faulty entry itself)."""
    from ikictl.offline import configured_catalog

    return configured_catalog(config_file)


def _known(catalog: Catalog, provider: str | None, action: str) -> str:
    if not provider:
        raise UsageError(f"keys {action}: which provider? (one of: {', '.join(catalog.providers)})")
    if provider not in catalog.providers:
        raise UsageError(
            f"unknown provider {provider!r} (providers: {', '.join(catalog.providers)})"
        )
    return provider


def cmd_keys(args: argparse.Namespace) -> int:
    if args.action == "list":
        if args.provider is not None:
            raise UsageError("keys list takes no PROVIDER")
        return _list(args)
    return _set(args) if args.action == "set" else _rm(args)


def _update(path: Path, **change: Any) -> list[str]:
    """update_credentials; a file it refuses (not private, not valid) is exit 2."""
    from protocol.credentials import CredentialsError, update_credentials

    try:
        return update_credentials(path, **change)
    except CredentialsError as e:
        raise UsageError(f"{e}; nothing changed") from None


def _set(args: argparse.Namespace) -> int:
    creds, config_file = _paths()
    catalog = _catalog(config_file)
    provider = _known(catalog, args.provider, "set")
    key = read_key(provider)
    _update(creds, put={provider: key})
    del key
    if not args.json:
        print(f"saved the key for {provider} in {creds} (mode 0600)")
    _after_change(args, catalog, provider, "saved", creds)
    return EXIT_OK


def _rm(args: argparse.Namespace) -> int:
    creds, config_file = _paths()
    catalog = _catalog(config_file)
    provider = _known(catalog, args.provider, "rm")
    # a key may be filed under the provider's name or its variable's name
    removed = _update(creds, remove=[provider, *catalog.providers[provider].key_env])
    if not removed:
        if args.json:
            import json

            print(json.dumps({"provider": provider, "removed": [], "reloaded": None}))
        else:
            print(f"no key for {provider} in {creds}: nothing removed")
        return EXIT_OK
    if not args.json:
        print(f"removed the key for {provider} from {creds}")
    _after_change(args, catalog, provider, "removed", creds, removed)
    return EXIT_OK


def _after_change(
    args: argparse.Namespace,
    catalog: Catalog,
    provider: str,
    what: str,
    creds: Path,
    removed: list[str] | None = None,
) -> None:
    """Reload a running daemon (never start one for this) and say what the
    daemon will use now."""
    from ikictl._errors import DaemonUnreachable
    from ikictl.client import connect

    reloaded: bool | None = None
    try:
        c = connect(args.socket, autostart=False)
    except DaemonUnreachable:
        pass
    else:
        with c:
            answer = c.reload()
        reloaded = not (
            isinstance(answer, dict) and (answer.get("ok") is False or answer.get("error"))
        )
    shadow = [v for v in catalog.providers[provider].key_env if os.environ.get(v, "").strip()]
    if args.json:
        import json

        out: dict[str, object] = {"provider": provider, what: True, "reloaded": reloaded}
        if removed is not None:
            out["removed"] = removed
        print(json.dumps(out))
        return
    if reloaded is None:
        print("no daemon is running: the next one reads it when it starts")
    elif reloaded:
        print("the running daemon reloaded its keys")
    else:
        print("ikictl: the daemon refused the reload: see `ikictl daemon logs`", file=sys.stderr)
    if shadow:
        print(
            f"note: {shadow[0]} is set in this shell; a daemon started from it uses that "
            "variable, which wins over credentials.json"
        )


def _list(args: argparse.Namespace) -> int:
    from protocol.credentials import CredentialsError, load_credentials

    creds_file, config_file = _paths()
    catalog = _catalog(config_file)
    code = EXIT_OK
    try:
        creds = load_credentials(creds_file)
    except CredentialsError as e:
        print(f"ikictl: {e}", file=sys.stderr)
        creds, code = {}, EXIT_ERROR
    daemon = _daemon_keys(args.socket)
    names = list(catalog.providers)
    names += [n for n in daemon or {} if n not in catalog.providers]
    rows: list[dict[str, object]] = []
    table: list[tuple[str, str, str, str]] = []
    for name in names:
        entry = catalog.providers.get(name)
        key_env = list(entry.key_env) if entry else (daemon or {})[name][1]
        in_file = name in creds or any(v in creds for v in key_env)
        sources = ["credentials.json"] if in_file else []
        sources += [f"env {v}" for v in key_env if os.environ.get(v, "").strip()]
        held = daemon[name][0] if daemon is not None and name in daemon and key_env else None
        if held and not in_file:
            sources.append("daemon env")  # the daemon's only other source is its environment
        rows.append(
            {
                "provider": name,
                "key_env": key_env,
                "needs_key": bool(key_env),
                "set": bool(sources),
                "sources": sources,
                "daemon_has_key": held,
            }
        )
        if not key_env and not sources:
            state, source = "-", "(needs no key)"
        else:
            state = "set" if sources else "not set"
            how = f"(set {' or '.join(key_env)} or `ikictl keys set {name}`)"
            source = ", ".join(sources) or how
        table.append(
            (name, state, "-" if held is None else "has key" if held else "no key", source)
        )
    if args.json:
        import json

        print(json.dumps(rows, indent=2))
        return code
    width = max(len(t[0]) for t in table) + 2
    print(f"{'PROVIDER':<{width}}{'KEY':<9}{'DAEMON':<9}FROM")
    for name, state, held_text, source in table:
        print(f"{name:<{width}}{state:<9}{held_text:<9}{source}".rstrip())
    if daemon is None:
        print("(no daemon is running: DAEMON would show whether it holds a key)")
    return code


def _daemon_keys(sock: str | None) -> dict[str, tuple[bool, list[str]]] | None:
    """provider -> (the daemon holds a key, its key variables); None: no daemon."""
    from ikictl._errors import DaemonUnreachable
    from ikictl.client import connect

    try:
        c = connect(sock, autostart=False)
    except DaemonUnreachable:
        return None
    with c:
        rows = c.providers()
    return {
        r["name"]: (bool(r.get("key_set")), list(r.get("key_env") or []))
        for r in rows
        if isinstance(r, dict) and isinstance(r.get("name"), str)
    }
