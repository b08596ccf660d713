"""A prompt with files for an agent another daemon runs. On another host
(two daemons of this machine play two hosts: cluster.host) the daemon asked
reads each path and URL itself and forwards the bytes, since a path means
nothing on the owner's machine; on this host the owner reads them. Either
way the daemon asked refuses its own protected files (its keys) first, the
owner checks the files against its model, and the turn sends them."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import Cluster
from tests.daemon.attach_helpers import PNG, TEXT, picture_in, text_in, web
from tests.daemon.rpc import RpcFailure
from tests.fakes.script import Raw, Reply

pytestmark = pytest.mark.postgres

SECRET = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("hosts", [False, True], ids=["one-host", "two-hosts"])
async def test_files_for_an_agent_elsewhere_reach_its_model(cluster: Cluster, tmp_path, hosts) -> None:
    far = {"host": "host-b", "listen": "127.0.0.1:0", "secret": SECRET} if hosts else {}
    near = {"host": "host-a", "listen": "127.0.0.1:0", "secret": SECRET} if hosts else {}
    a = await cluster.add("a", **near)
    b = await cluster.add("b", **far)
    await a.call("agent.create", name="far", on=b.id)
    (tmp_path / "notes.md").write_text(TEXT)
    cluster.fake.default = Reply(text="both")
    async with web({"/dot.png": Raw(PNG, content_type="image/png")}) as site:
        sent = [{"url": f"{site.base_url}/dot.png"}, {"path": str(tmp_path / "notes.md"), "name": "n.md"}]
        done = await a.call("agent.prompt", agent="far", text="look", attachments=sent, wait=True)
        assert len(site.requests) == 1
    assert done["status"] == "completed"
    body = cluster.fake.requests[-1].json
    assert picture_in("messages", body) and text_in(body, name="n.md")
    history = await b.call("agent.history", agent="far", blocks=True)
    [user] = [m for m in history["messages"] if m.get("role") == "user"]
    assert [(x["type"], x["name"], x["media_type"]) for x in user["blocks"][1:]] == [
        ("image", "dot.png", "image/png"),
        ("document", "n.md", "text/markdown"),
    ]
    # the keys of the daemon asked are not attached through the other one
    keys = str(a.home / "credentials.json")
    with pytest.raises(RpcFailure) as e:
        await a.call("agent.prompt", agent="far", text="x", attachments=[{"path": keys}])
    assert e.value.error["message"] == f"attachments[0].path: {keys} holds ikigai's API keys: it cannot be attached"
    with pytest.raises(RpcFailure) as e:
        await a.call("agent.prompt", agent="far", text="x", attachments=[{"path": str(tmp_path / "gone")}])
    assert e.value.error["message"].startswith("attachments[0].path: no such file: ")
    assert len(cluster.fake.requests) == 1
