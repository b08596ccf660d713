"""A subscription's inbox on the client (ikigai._inbox): bounded, and a
reader that falls behind is told where to resume, in the daemon's shape."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ikigai._inbox import Inbox


def event(seq: int) -> dict:
    return {"jsonrpc": "2.0", "method": "agent.event", "params": {"subscription": 1, "agent": "a", "turn": "t", "seq": seq, "event": {"type": "text_delta", "text": str(seq)}}}


END = {"jsonrpc": "2.0", "method": "agent.subscription_end", "params": {"subscription": 1, "reason": "agent ended"}}


@given(st.integers(1, 30), st.integers(0, 60), st.booleans())
def test_past_the_limit_the_rest_is_one_lagged_event_then_the_end(limit, n, ended):
    box = Inbox(limit)
    for seq in range(1, n + 1):
        box.put(event(seq))
    if ended:
        box.put(END)
    out = [box.get() for _ in range(len(box))]
    assert len(box) == 0
    kept = min(n, limit)
    assert [m["params"]["seq"] for m in out[:kept]] == list(range(1, kept + 1))
    rest = out[kept:]
    if n > limit:
        lag = rest.pop(0)["params"]
        assert lag["event"] == {"type": "lagged", "resume_from": limit + 1, "oldest_kept": limit + 1}
        assert lag["seq"] == limit + 1 and lag["subscription"] == 1
    assert rest == ([END] if ended else [])
