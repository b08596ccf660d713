"""The commands scripts compose: ``-q`` ids, ``--format`` templates,
``rm``/``prune``/``rename``, ``send -c``/``chat -c``, ``history --json``/
``--tools`` and ``export``/``import``, each the real ikictl against the real
daemon (and the fake provider)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ikictl._errors import UsageError
from ikictl.fields import Template, plain_float

from .conftest import IKICTL, Daemon, clean_env
from .ptyexpect import PtyProcess

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _uuid(d: Daemon, ref: str) -> str:
    return d.ikictl("show", ref, "--format", "{uuid}").out.strip()


def _rows(d: Daemon, ref: str) -> list[dict]:
    return d.ikictl("history", ref, "--json").json()["messages"]  # type: ignore[index]


# ---------------------------------------------------------------- -q


def test_quiet_prints_ids_only(daemon: Daemon) -> None:
    r = daemon.ikictl("new", "-q", "--name", "quiet1")
    assert UUID.fullmatch(r.out.strip()) and r.out.count("\n") == 1 and r.err == ""
    uuid = r.out.strip()
    # with a prompt: the uuid once the turn has ended, and nothing else
    r = daemon.ikictl("new", "-q", "--name", "quiet2", "hi")
    assert UUID.fullmatch(r.out.strip()) and r.err == ""
    assert (
        daemon.ikictl("show", r.out.strip(), "--format", "{last_turn.status}").out == "completed\n"
    )
    kid = daemon.ikictl("fork", "-q", "quiet1", "--name", "quiet1-kid").out.strip()
    assert UUID.fullmatch(kid) and kid != uuid
    listed = daemon.ikictl("ls", "-q").lines
    assert {uuid, kid} <= set(listed) and all(UUID.fullmatch(u) for u in listed)


def test_quiet_new_keeps_the_turns_exit_code(daemon: Daemon) -> None:
    r = daemon.ikictl(
        "new", "-q", "--name", "quietfail", "--model", "deepseek-chat/none", "hi", code=1
    )
    assert UUID.fullmatch(r.out.strip())
    assert "no API key for deepseek" in r.err


def test_ls_quiet_follows_the_filters(daemon: Daemon) -> None:
    dead = daemon.ikictl("new", "-q", "--name", "quietdead").out.strip()
    daemon.ikictl("kill", dead)
    assert dead not in daemon.ikictl("ls", "-q").lines
    assert dead in daemon.ikictl("ls", "-q", "--all").lines
    r = daemon.ikictl("ls", "-q", "--format", "{uuid}", code=2)
    assert "not allowed with" in r.err


# ---------------------------------------------------------------- --format


def test_format_ls_and_show(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "fmt", "--model", "claude-sonnet-4-5/med", "hi")
    lines = daemon.ikictl(
        "ls", "--format", r"{name}\t{model}/{thinking_level}\t{usage.cost_usd}"
    ).lines
    row = next(line for line in lines if line.startswith("fmt\t"))
    _, model, cost = row.split("\t")
    assert model == "claude-sonnet-4-5/med"
    assert re.fullmatch(r"0\.\d+", cost), cost  # plain: no exponent
    out = daemon.ikictl(
        "show", "fmt", "--format", "{{{name}}} {parent}|{last_turn.status}|{policy}"
    ).out
    assert out == "{fmt} |completed|yolo\n"  # None is empty; a list is comma-joined


def test_format_unknown_field_lists_the_fields(daemon: Daemon) -> None:
    r = daemon.ikictl("ls", "--format", "{uuid} {nmae}", code=2)
    assert "unknown field {nmae}" in r.err
    assert "name" in r.err and "usage.cost_usd" in r.err
    r = daemon.ikictl("show", "fmt", "--format", "{usage.nope}", code=2)
    assert "unknown field {usage.nope}" in r.err and "usage.input_tokens" in r.err
    # no object access of str.format's: only keys
    for bad in ("{uuid.__class__}", "{name[0]}", "{0}", "{name!r}", "{name:>9}"):
        r = daemon.ikictl("ls", "--format", bad, code=2)
        assert r.err.startswith("ikictl: --format: "), (bad, r.err)
    assert "not closed" in daemon.ikictl("ls", "--format", "{uuid", code=2).err
    assert "single }" in daemon.ikictl("ls", "--format", "uuid}", code=2).err


def test_format_values_are_plain_and_one_line() -> None:
    t = Template(r"{a}|{b.c}|{d}|{e}|{f}|{g}\n")
    row = {
        "a": None,
        "b": {"c": 1e-05},
        "d": True,
        "e": ["x", "y"],
        "f": "two\nlines\x1b",
        "g": 3.0,
    }
    assert t.render(row) == "|0.00001|true|x,y|two^Jlines^[|3\n"
    assert t.render({}) == "|||||\n"  # a path that is missing is empty, not an error
    assert [plain_float(x) for x in (0.1, 2.5e-07, 1e21, -0.0)] == [
        "0.1",
        "0.00000025",
        "1000000000000000000000",
        "0",
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("{}\\.tna_0[]!:x \x00\n"), max_size=24), st.text(max_size=20)
)
def test_any_template_renders_or_is_refused_clearly(text: str, value: str) -> None:
    try:
        t = Template(text)
    except UsageError as e:
        assert str(e).startswith("--format: ")
        return
    out = t.render({f: value for f in t.fields})
    literal = "".join(p for p in t.parts if isinstance(p, str))
    # a value never breaks the line or drives the terminal: its controls are made visible
    for control in "\n\t\x00\x1b":
        assert out.count(control) == literal.count(control)


# ---------------------------------------------------------------- rename, rm, prune


def test_rename(daemon: Daemon) -> None:
    uuid = daemon.ikictl("new", "-q", "--name", "before").out.strip()
    r = daemon.ikictl("rename", "before", "after")
    assert r.out == f"renamed before -> after ({uuid})\n"
    assert _uuid(daemon, "after") == uuid
    assert daemon.ikictl("show", "before", code=4).err.startswith("ikictl: ")
    info = daemon.ikictl("rename", "after", "again", "--json").json()
    assert info["name"] == "again" and info["uuid"] == uuid  # type: ignore[index]


def test_rm_refuses_a_live_agent_unless_forced(daemon: Daemon) -> None:
    uuid = daemon.ikictl("new", "-q", "--name", "rmlive").out.strip()
    r = daemon.ikictl("rm", "rmlive", code=2)
    assert "ikictl: " in r.err
    assert uuid in daemon.ikictl("ls", "-q").lines
    assert daemon.ikictl("rm", "rmlive", "--force", "-q").lines == [uuid]
    assert uuid not in daemon.ikictl("ls", "-q", "--all").lines


def test_rm_goes_on_after_a_bad_name_and_purges(daemon: Daemon) -> None:
    a = daemon.ikictl("new", "-q", "--name", "rma", "hi").out.strip()
    b = daemon.ikictl("new", "-q", "--name", "rmb").out.strip()
    daemon.ikictl("kill", a)
    daemon.ikictl("kill", b)
    r = daemon.ikictl("rm", a, "no-such-agent-here", b, "--purge", "--json", code=4)
    res = json.loads(r.out)
    assert res["removed"] == [a, b] and res["purged_rows"] >= 2  # a's prompt and answer at least
    assert "no-such-agent-here" in json.loads(r.err)["error"]["message"]
    listed = daemon.ikictl("ls", "-q", "--all").lines
    assert a not in listed and b not in listed


def test_prune_needs_yes_off_a_terminal(daemon: Daemon) -> None:
    dead = daemon.ikictl("new", "-q", "--name", "prunable").out.strip()
    daemon.ikictl("kill", dead)
    r = daemon.ikictl("prune", code=2)
    assert "-y" in r.err and "--dry-run" in r.err
    r = daemon.ikictl("prune", "--dry-run")
    assert r.lines[0].startswith("would remove ") and any(dead in line for line in r.lines)
    assert dead in daemon.ikictl("ls", "-q", "--all").lines  # a dry run removes nothing
    live = daemon.ikictl("ls", "-q").lines
    removed = daemon.ikictl("prune", "-y", "-q").lines
    assert dead in removed and not set(removed) & set(live)
    assert daemon.ikictl("ls", "-q").lines == live  # no live agent is touched
    assert daemon.ikictl("prune", "-y", "-q").out == ""


def test_prune_asks_on_a_terminal(daemon: Daemon) -> None:
    dead = daemon.ikictl("new", "-q", "--name", "askme").out.strip()
    daemon.ikictl("kill", dead)
    pty = PtyProcess([*IKICTL, "prune"], daemon.env)
    try:
        pty.expect(dead)
        pty.expect(r"remove (this dead agent|these \d+ dead agents)\? \[y/N\]")
        pty.sendline("n")
        pty.expect("nothing removed")
        assert pty.wait() == 0
    finally:
        pty.close()
    assert dead in daemon.ikictl("ls", "-q", "--all").lines
    pty = PtyProcess([*IKICTL, "prune"], daemon.env)
    try:
        pty.expect(r"\[y/N\]")
        pty.sendline("y")
        pty.expect(r"removed \d+ dead agent")
        assert pty.wait() == 0
    finally:
        pty.close()
    assert dead not in daemon.ikictl("ls", "-q", "--all").lines


# ---------------------------------------------------------------- -c


def test_send_and_chat_continue_the_agent_used_last(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "cont-old")
    daemon.ikictl("new", "--name", "cont-new")
    daemon.ikictl("send", "cont-old", "--no-thinking", "hi")  # now the one used last
    r = daemon.ikictl("send", "-c", "--no-thinking", "What is ikigai?")
    assert r.out.startswith("Ikigai is a Japanese idea")
    assert _rows(daemon, "cont-old")[-1]["content"].startswith("Ikigai is a Japanese idea")
    assert not [m for m in _rows(daemon, "cont-new") if m["kind"] == "user"]
    r = daemon.ikictl("chat", "-c", input="/exit\n")
    assert "chatting with cont-old (" in r.out
    assert "not both" in daemon.ikictl("chat", "-c", "cont-new", code=2).err
    assert "only the PROMPT" in daemon.ikictl("send", "-c", "cont-new", "hi", code=2).err
    assert "required: PROMPT" in daemon.ikictl("send", "-c", code=2).err
    assert "required: AGENT, PROMPT" in daemon.ikictl("send", code=2).err
    assert "required: PROMPT" in daemon.ikictl("send", "cont-new", code=2).err


def test_continue_with_no_live_agent_says_how_to_make_one(home: Path) -> None:
    d = Daemon(home, clean_env(home))
    r = d.ikictl("send", "-c", "hi", code=4)
    assert "no live agent to continue" in r.err and "ikictl new" in r.err


# ---------------------------------------------------------------- history


def test_history_json_has_the_blocks_of_a_tool_turn(daemon: Daemon) -> None:
    daemon.ikictl("new", "--name", "histo", "--model", "claude-sonnet-4-5/med")
    daemon.ikictl("send", "histo", "Please run a tool to say hello")
    rows = _rows(daemon, "histo")
    blocks = [b for r in rows for b in r["blocks"]]
    kinds = [b["type"] for b in blocks]
    assert kinds.count("thinking") == 2 and "tool_call" in kinds and "tool_result" in kinds
    call = next(b for b in blocks if b["type"] == "tool_call")
    assert call["name"] == "bash" and call["arguments"] == {"command": "echo hello from a tool"}
    result = next(b for b in blocks if b["type"] == "tool_result")
    assert result["tool_call_id"] == call["id"] and result["is_error"] is False
    assert "hello from a tool" in result["content"]
    thinking = next(b for b in blocks if b["type"] == "thinking")
    assert thinking["signed"] is True and "signature" not in thinking
    turns = {r["turn"] for r in rows if r["kind"] in ("user", "assistant", "tool_result")}
    assert len(turns) == 1 and all(r["turn_status"] == "completed" for r in rows if r["turn"])
    with_sigs = daemon.ikictl("history", "histo", "--json", "--signatures").json()
    signed = [b for r in with_sigs["messages"] for b in r["blocks"] if b["type"] == "thinking"]  # type: ignore[index]
    assert signed and all(b["signature"] for b in signed)
    assert "--json" in daemon.ikictl("history", "histo", "--signatures", code=2).err


def test_history_tools_view(daemon: Daemon) -> None:
    out = daemon.ikictl("history", "histo", "--tools").out
    assert re.search(r"^── turn \S+ · completed ──$", out, re.M), out
    assert "[thinking, signed] The user wants a tool run" in out
    assert "[tool_call bash " in out and '{"command": "echo hello from a tool"}' in out
    assert "[tool_result bash ok]" in out and "\n      hello from a tool\n" in out
    assert "    The tool ran and printed: hello from a tool\n" in out


# ---------------------------------------------------------------- export, import


def test_export_import_round_trip(daemon: Daemon, tmp_path: Path) -> None:
    daemon.ikictl(
        "new", "--name", "expo", "--model", "claude-sonnet-4-5/med", "--system", "Be brief."
    )
    daemon.ikictl("send", "expo", "Please run a tool to say hello")
    daemon.ikictl("fork", "expo", "--name", "expo-kid", "What is ikigai?")
    path = tmp_path / "kid.json"
    r = daemon.ikictl("export", "expo-kid", "-o", str(path))
    assert r.out.startswith("exported expo-kid (") and str(path) in r.out
    doc = json.loads(path.read_text())
    assert doc["format"] == "ikigai-agent" and doc["agent"]["name"] == "expo-kid"
    # the fork's export holds its inherited history: the parent's tool turn
    assert any("hello from a tool" in json.dumps(m) for m in doc["messages"])
    new = daemon.ikictl("import", str(path), "--name", "expo-back", "-q").out.strip()
    assert UUID.fullmatch(new)
    info: dict = daemon.ikictl("show", new, "--json").json()  # type: ignore[assignment]
    assert info["provider"] == "anthropic" and info["model"] == "claude-sonnet-4-5"
    assert info["thinking_level"] == "med" and info["system_prompt"] == "Be brief."

    def shape(rows: list[dict]) -> list[tuple]:
        # an imported agent is not a fork: the inherited rows are its own, with no fork row
        return [(r["kind"], r["content"], r["blocks"]) for r in rows if r["kind"] != "fork"]

    assert shape(_rows(daemon, new)) == shape(_rows(daemon, "expo-kid"))
    # the imported agent goes on from there
    r = daemon.ikictl("send", new, "--no-thinking", "hi")
    assert r.out == "Hello! I am the offline demo model. Ask me anything.\n"
    # from stdin too
    r = daemon.ikictl("import", "-", "--json", input=path.read_text())
    assert r.json()["agent"]["name"]  # type: ignore[index]


def test_export_markdown_is_a_transcript(daemon: Daemon) -> None:
    md = daemon.ikictl("export", "expo", "--format", "markdown").out
    assert md.startswith("# expo\n")
    assert "claude-sonnet-4-5/med" in md
    assert "## 1. Prompt\n\nPlease run a tool to say hello\n" in md
    assert "> **Thinking**" in md and "> The user wants a tool run" in md
    assert '```json\n{\n  "command": "echo hello from a tool"\n}\n```' in md
    assert "The tool ran and printed: hello from a tool" in md


def test_import_refuses_what_is_not_the_json_export(daemon: Daemon, tmp_path: Path) -> None:
    md = tmp_path / "t.md"
    md.write_text(daemon.ikictl("export", "expo", "--format", "markdown").out)
    r = daemon.ikictl("import", str(md), code=2)
    assert "import takes the json export" in r.err
    (tmp_path / "x.json").write_text('{"format": "something-else"}')
    assert "not an ikigai export" in daemon.ikictl("import", str(tmp_path / "x.json"), code=2).err
    assert "cannot read" in daemon.ikictl("import", str(tmp_path / "nope.json"), code=2).err


def test_import_over_the_line_limit_is_a_usage_error(daemon: Daemon, tmp_path: Path) -> None:
    doc = json.loads(daemon.ikictl("export", "expo").out)
    doc["agent"]["system_prompt"] = "x" * (2 << 20)  # over the default 1 MiB max_line_bytes
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    r = daemon.ikictl("import", str(big), code=2)
    assert "too large" in r.err and "max_line_bytes" in r.err
