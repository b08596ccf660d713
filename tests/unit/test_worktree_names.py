"""``agents.worktrees.branch_problem`` against git's own rule
(``git check-ref-format --branch``), and ``slug``'s names (issue 36)."""

from __future__ import annotations

import os
import subprocess
import tempfile

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.worktrees import branch_problem, default_branch, slug

_OUTSIDE = tempfile.mkdtemp(prefix="ikigai-refname-")  # in no repository: '@{-1}' means nothing
_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": _OUTSIDE,
    "GIT_CEILING_DIRECTORIES": os.path.dirname(_OUTSIDE),
}
# where branch_problem is stricter than git on purpose: '@' alone is HEAD in a
# revision (git check-ref-format --branch takes it), and names over the
# protocol's 250 characters
STRICTER = {"@"}
LIMIT = 250


def git_accepts(name: str) -> bool:
    done = subprocess.run(
        ["git", "check-ref-format", "--branch", name],
        cwd=_OUTSIDE, env=_ENV, capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


HOSTILE = "/.@{}~^:?*[\\ -\t\x7f\x01" + "ab"
names = st.one_of(
    st.text(alphabet=st.sampled_from(HOSTILE), max_size=12),
    st.text(alphabet=st.sampled_from(HOSTILE + "xyzé中\u200b\U0001f600"), max_size=24),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=16,
    ),
    st.lists(
        st.sampled_from(["a", ".", "..", "lock", ".lock", "@", "{", "}", "/", "-", "HEAD"]),
        max_size=8,
    ).map("".join),
)


@settings(
    max_examples=int(os.environ.get("IKIGAI_NAMES_EXAMPLES", "600")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(names)
@example("@")
@example("HEAD")
@example("a.lock/b")
@example("a/.b")
@example("-x")
@example("a@{b")
@example("@{-1}")
@example("a..b")
@example("x/")
@example("/x")
@example("x.")
@example("ä/ok")
@example("@a")
@example("a@")
@example("{}")
@example(".")
@example("a/./b")
def test_branch_problem_agrees_with_git(name: str) -> None:
    ours = branch_problem(name) is None
    if name in STRICTER or len(name) > LIMIT:
        assert not ours
        return
    assert ours == git_accepts(name), (name, branch_problem(name))


def test_a_nul_or_an_empty_name_is_refused() -> None:
    assert branch_problem("a\x00b") is not None
    assert branch_problem("") is not None
    assert branch_problem("a" * (LIMIT + 1)) is not None
    assert branch_problem("a" * LIMIT) is None


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(max_size=120))
@example("")
@example("...")
@example("x.lock")
@example("x.lock.lock")
@example("a..lock")
@example("-.-")
@example("@")
def test_slug_makes_names_git_and_branch_problem_accept(name: str) -> None:
    made = slug(name)
    assert made and "/" not in made
    assert branch_problem(made) is None, (name, made, branch_problem(made))
    assert branch_problem(default_branch(name)) is None
    assert git_accepts(default_branch(name)), (name, made)


def test_slug_of_head_is_a_branch_name() -> None:
    # an agent named HEAD: its slug must still be a name branch_problem takes
    assert branch_problem(slug("HEAD")) is None, slug("HEAD")
