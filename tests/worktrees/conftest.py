"""Real git repositories made by the tests, and a daemon whose tools run in
the real bubblewrap sandbox (policy "box": everything allowed, workdir
sandbox), for the worktree tests (issue 36)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.daemon.conftest import DaemonProcess, daemon_home, write_home
from tests.fakes.script import Reply, ToolCall

__all__ = ["daemon_home"]  # the fixture, for the tests here

BOX = {"rules": [{"tool": "*", "action": "allow"}], "sandbox": "workdir"}


def git(cwd: Path | str, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"},
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")
    for name, text in (files or {"README": "hello\n", "shared.txt": "line 1\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def box_daemon(daemon_home: Path, fake_provider):
    write_home(daemon_home, fake_provider, policy="box", policies={"box": BOX})
    d = DaemonProcess(daemon_home)
    yield d
    d.stop()


# ---- tests/worktrees/test_lifecycle.py and test_bad_input.py (issue 36)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine_box_daemon(request: pytest.FixtureRequest, daemon_home: Path, fake_provider):
    """``box_daemon`` on SQLite and on PostgreSQL (IKIGAI_TEST_PG_URL): the
    worktree rows must survive a restart on both."""
    config: dict[str, str] = {}
    dropped = None
    if request.param == "postgres":
        import secrets

        from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

        admin = _pg_admin_url()
        name = f"ikigai_wt_{secrets.token_hex(6)}"
        config["database_url"] = create_pg_database(admin, name)
        dropped = lambda: drop_pg_database(admin, name)  # noqa: E731
    write_home(daemon_home, fake_provider, policy="box", policies={"box": BOX}, **config)
    d = DaemonProcess(daemon_home)
    try:
        yield d
    finally:
        d.stop()
        if dropped is not None:
            dropped()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    """Write ``files`` in the checkout ``repo``, commit them; the new HEAD."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def repo_state(repo: Path) -> dict[str, str]:
    """What a refused call must leave as it was in a checkout: HEAD, branches
    with their commits, worktrees, status, and whether a merge is under way."""
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "branches": git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "status": git(repo, "status", "--porcelain", "--untracked-files=all"),
        "merging": " ".join(
            n for n in ("MERGE_HEAD", "SQUASH_MSG", "MERGE_MSG") if (repo / ".git" / n).exists()
        ),
    }


# A policy that lets tools run unasked in the workdir sandbox, but denies the
# file tools any path outside the agent's folder (symlinks resolved): the
# fence a worktree agent's file tools keep, as bash's sandbox does.
FENCE = {
    "rules": [
        {"tool": "file_write", "action": "deny", "path": "outside"},
        {"tool": "file_edit", "action": "deny", "path": "outside"},
        {"tool": "*", "action": "allow"},
    ],
    "sandbox": "workdir",
}
ISOLATING = {**FENCE, "fork_isolation": "worktree"}


@pytest.fixture
def open_repo() -> Path:
    """A repository outside /tmp (which the sandbox replaces by an empty
    tmpfs): like a user's repository in $HOME, the sandbox shows it, read-only,
    so an attempt to write it meets the sandbox, not a missing folder."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="ikr-", dir="/var/tmp"))
    yield make_repo(top / "repo")
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def fenced_daemon(daemon_home: Path, fake_provider):
    """Default policy "fence"; "isolating" is the same with fork_isolation: worktree."""
    write_home(
        daemon_home,
        fake_provider,
        policy="fence",
        policies={"fence": FENCE, "isolating": ISOLATING},
    )
    d = DaemonProcess(daemon_home)
    yield d
    d.stop()


class Jobs:
    """The fake provider's answers chosen by each conversation's last prompt,
    so that agents working at once each get their own tool calls whatever
    order their requests arrive in: the calls of ``add(prompt, ...)`` one
    per request, then a text reply. Set as ``fake_provider.responder``."""

    def __init__(self) -> None:
        self.calls: dict[str, list[ToolCall]] = {}

    def add(self, prompt: str, *calls: ToolCall) -> None:
        self.calls[prompt] = list(calls)

    def __call__(self, request) -> Reply | None:
        messages = (request.json or {}).get("messages") or []
        done = 0
        for m in reversed(messages):
            content = m.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if m.get("role") == "user" and not results:
                text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                calls = self.calls.get(text)
                if calls is None:
                    return None
                return Reply(tool_calls=[calls[done]]) if done < len(calls) else Reply(text="done")
            done += len(results)
        return None


def tool_result(fake_provider, call_id: str) -> tuple[str, bool]:
    """The tool result (text, is_error) the daemon sent back for ``call_id``."""
    for req in reversed(fake_provider.requests):
        for m in (req.json or {}).get("messages", []):
            for block in m["content"] if isinstance(m["content"], list) else []:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                    content = block["content"]
                    text = (
                        content
                        if isinstance(content, str)
                        else "".join(c.get("text", "") for c in content)
                    )
                    return text, bool(block.get("is_error"))
    raise AssertionError(f"no tool result for {call_id}")


def worktree_list(repo: Path) -> dict[str, str | None]:
    """``git worktree list --porcelain``: each checkout's real path -> its
    branch (refs/heads/...; None when detached)."""
    out: dict[str, str | None] = {}
    path = None
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = os.path.realpath(line[len("worktree ") :])
            out[path] = None
        elif line.startswith("branch ") and path is not None:
            out[path] = line[len("branch ") :]
    return out


def files_of(folder: Path, *, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under ``folder`` (symlinks as their target text), by
    relative path, but for the relative folders or names in ``skip``."""
    out: dict[str, bytes] = {}
    for dirpath, dirs, names in os.walk(folder):
        rel_dir = os.path.relpath(dirpath, folder)
        dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel_dir, d)) not in skip]
        for n in names:
            rel = os.path.normpath(os.path.join(rel_dir, n))
            if rel in skip or n in skip:
                continue
            full = os.path.join(dirpath, n)
            out[rel] = (
                os.readlink(full).encode() if os.path.islink(full) else Path(full).read_bytes()
            )
    return out


def tree_folders(home: Path) -> list[str]:
    """What the daemon's worktrees folder holds: each worktree folder, and
    each agent object folder as ``.objects/NAME`` (an empty ``.objects``
    counts as nothing)."""
    root = home / "worktrees"
    if not root.exists():
        return []
    out = [x.name for x in root.iterdir() if x.name != ".objects"]
    objects = root / ".objects"
    if objects.exists():
        out += [f".objects/{x.name}" for x in objects.iterdir()]
    return sorted(out)
