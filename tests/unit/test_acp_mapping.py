"""The ACP mapping (ikictl/acp/mapping.py): ikigai's history rows and events as
ACP session updates, every one valid under the official SDK's schema, and ACP
prompt blocks as ikigai's prompt text and attachments."""

from __future__ import annotations

from typing import Any

import pytest
from acp.schema import SessionNotification
from hypothesis import given, settings
from hypothesis import strategies as st

from ikictl.acp import mapping
from ikictl.acp.mapping import PromptError, prompt_parts

PNG = "iVBORw0KGgo="


def valid(update: dict[str, Any]) -> None:
    """The update as the SDK's schema reads it (raises if it is not one)."""
    SessionNotification.model_validate({"sessionId": "s1", "update": update})


ROWS: list[dict[str, Any]] = [
    {
        "role": "user",
        "blocks": [
            {"type": "text", "text": "look at this"},
            {"type": "image", "media_type": "image/png", "bytes": 1234, "url": None},
        ],
    },
    {
        "role": "assistant",
        "blocks": [
            {"type": "thinking", "text": "the user wants", "redacted": False},
            {"type": "text", "text": "Running it."},
            {
                "type": "tool_call",
                "id": "t1",
                "name": "file_read",
                "arguments": {"path": "src/a.py"},
            },
        ],
    },
    {
        "role": "tool",
        "blocks": [
            {
                "type": "tool_result",
                "tool_call_id": "t1",
                "name": "file_read",
                "content": "x = 1",
                "is_error": False,
            }
        ],
    },
    {"role": None, "blocks": []},  # a permission row: nothing to replay
    {
        "role": "tool",
        "blocks": [
            {"type": "tool_result", "tool_call_id": "t2", "content": "boom", "is_error": True}
        ],
    },
]


def test_history_replays_as_user_thought_message_and_tool_updates() -> None:
    updates = mapping.history_updates(ROWS, "/home/me/proj")
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds == [
        "user_message_chunk",
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
    ]
    for u in updates:
        valid(u)
    assert updates[1]["content"]["text"] == "[image: image/png, 1234 bytes]"
    call = updates[4]
    assert call["kind"] == "read" and call["title"] == "Read src/a.py"
    assert call["locations"] == [{"path": "/home/me/proj/src/a.py"}]
    assert updates[5]["status"] == "completed" and updates[6]["status"] == "failed"


def test_a_long_tool_result_is_cut_when_replayed() -> None:
    row = {
        "role": "tool",
        "blocks": [{"type": "tool_result", "tool_call_id": "t", "content": "y" * 50_000}],
    }
    [update] = mapping.history_updates([row], None)
    text = update["content"][0]["content"]["text"]
    assert len(text) < 21_000 and text.endswith("30000 more characters]")


@pytest.mark.parametrize(
    ("name", "args", "kind", "title"),
    [
        ("bash", {"command": "make   test\n"}, "execute", "$ make test"),
        ("file_write", {"path": "/x/y"}, "edit", "Write /x/y"),
        ("file_edit", {"path": "y"}, "edit", "Edit y"),
        ("grep", {"pattern": "TODO"}, "search", "grep TODO"),
        ("fork", {}, "other", "fork"),
        ("web__fetch_url", {}, "fetch", "web__fetch_url"),
        ("bash", {"command": 5}, "execute", "bash"),
    ],
)
def test_tool_kinds_and_titles(name: str, args: dict[str, Any], kind: str, title: str) -> None:
    assert mapping.tool_kind(name) == kind
    assert mapping.tool_title(name, args) == title


def test_a_title_stays_on_one_short_line() -> None:
    title = mapping.tool_title("bash", {"command": "echo " + "a" * 500})
    assert len(title) == 120 and title.endswith("…") and "\n" not in title


def test_locations_are_absolute_and_never_odd_paths() -> None:
    assert mapping.tool_locations({"path": "a/../b.py"}, "/w") == [{"path": "/w/b.py"}]
    assert mapping.tool_locations({"path": "/abs.py", "line": 7}, None) == [
        {"path": "/abs.py", "line": 7}
    ]
    assert mapping.tool_locations({"path": "rel.py"}, None) == []
    assert mapping.tool_locations({"path": "a\x00b"}, "/w") == []
    assert mapping.tool_locations({"path": 3}, "/w") == []


@pytest.mark.parametrize(
    ("status", "finish", "reason"),
    [
        ("completed", "stop", "end_turn"),
        ("completed", "length", "max_tokens"),
        ("completed", "content_filter", "refusal"),
        ("cancelled", None, "cancelled"),
        ("interrupted", None, "cancelled"),
        ("tool_limit", "tool_use", "max_turn_requests"),
        ("error", None, None),
        ("budget_exceeded", None, None),
    ],
)
def test_stop_reasons(status: str, finish: str | None, reason: str | None) -> None:
    assert mapping.stop_reason(status, finish) == reason


def test_a_prompt_with_context_and_a_picture() -> None:
    parts = prompt_parts(
        [
            {"type": "text", "text": "Fix the bug in"},
            {"type": "resource_link", "uri": "file:///p/a.py", "name": "a.py"},
            {"type": "resource", "resource": {"uri": "file:///p/b.py", "text": "x = ```1```"}},
            {"type": "image", "mimeType": "image/JPG", "data": PNG},
        ]
    )
    assert parts.text.startswith(
        "Fix the bug in\n\n[a.py](file:///p/a.py)\n\nfile:///p/b.py:\n````\n"
    )
    assert parts.attachments == [{"media_type": "image/jpeg", "data": PNG}]


def test_a_picture_alone_gets_a_line_of_text() -> None:
    parts = prompt_parts([{"type": "image", "mimeType": "image/png", "data": PNG}])
    assert parts.text == "(see the attached image)" and len(parts.attachments) == 1


@pytest.mark.parametrize(
    ("block", "said"),
    [
        (
            {"type": "image", "mimeType": "image/bmp", "data": PNG},
            "prompt[0]: an image of type 'image/bmp'",
        ),
        ({"type": "image", "mimeType": "image/png", "uri": "http://x"}, "only as data"),
        (
            {"type": "audio", "mimeType": "audio/wav", "data": "AA=="},
            "prompt[0]: a block of type 'audio' is not taken",
        ),
        (
            {
                "type": "resource",
                "resource": {"uri": "x", "blob": "AA==", "mimeType": "application/pdf"},
            },
            "binary content of type 'application/pdf'",
        ),
    ],
)
def test_blocks_ikigai_cannot_take_are_named(block: dict[str, Any], said: str) -> None:
    with pytest.raises(PromptError, match="prompt") as e:
        prompt_parts([block])
    assert said in str(e.value)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "resource", "resource_link", "audio", "x"])},
    optional={
        "text": _json,
        "mimeType": st.sampled_from(["image/png", "image/gif", "text/plain", ""]) | _json,
        "data": _json,
        "uri": _json,
        "name": _json,
        "resource": st.dictionaries(
            st.sampled_from(["uri", "text", "blob", "mimeType"]), _json, max_size=4
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_block, max_size=5))
def test_any_prompt_is_taken_or_refused_by_name(blocks: list[dict[str, Any]]) -> None:
    try:
        parts = prompt_parts(blocks)
    except PromptError as e:
        assert str(e).startswith("prompt[")
        return
    assert isinstance(parts.text, str)
    assert all(set(a) == {"media_type", "data"} for a in parts.attachments)


_row = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", None, "x"]),
        "blocks": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(
                        ["text", "thinking", "tool_call", "tool_result", "image", "x"]
                    )
                },
                optional={
                    "text": st.text(max_size=30),
                    "id": _json,
                    "name": _json,
                    "arguments": _json,
                    "tool_call_id": _json,
                    "content": _json,
                    "is_error": _json,
                    "media_type": _json,
                    "bytes": _json,
                },
            ),
            max_size=4,
        ),
    }
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_row, max_size=6), st.sampled_from([None, "/w"]))
def test_any_history_replays_as_valid_updates(rows: list[dict[str, Any]], cwd: str | None) -> None:
    for update in mapping.history_updates(rows, cwd):
        valid(update)
