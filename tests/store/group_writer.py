"""The process that test_group_commit.py kills with SIGKILL: one thread per
agent, all writing through one real Store, each printing an ack line once
its call has returned (so every ack names a write the Store called committed).

    python tests/store/group_writer.py URL ROUND AGENT_UUID...

Each thread k cycles through: one appended row (``S``), a queued prompt
(``Q``), one row again, three rows in one append_many (``B``: they must land
together). An ack line is ``S|Q|B ROUND k i id...``; a row's text is
``ROUND k i`` (``ROUND k i part p`` for the parts of B).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from providers.types import Message, TextBlock
from store import Entry, Store


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def main() -> None:
    url, rnd, uuids = sys.argv[1], sys.argv[2], sys.argv[3:]
    store = Store(url, upgrade=False, group_commit=True)  # on PostgreSQL too
    out = sys.stdout
    lock = threading.Lock()  # one whole line at a time

    def work(k: int, uuid: str) -> None:
        i = 0
        while True:
            tag = f"{rnd} {k} {i}"
            if i % 4 == 3:
                recs = store.append_many(
                    uuid, [Entry(kind="user", message=user(f"{tag} part {p}")) for p in range(3)]
                )
                line = f"B {tag} " + " ".join(str(r.id) for r in recs)
            elif i % 4 == 1:
                line = f"Q {tag} {store.enqueue_prompt(uuid, f'turn {tag}', tag).id}"
            else:
                line = f"S {tag} {store.append_user(uuid, user(tag)).id}"
            with lock:
                out.write(line + "\n")
                out.flush()
            i += 1

    for k, uuid in enumerate(uuids):
        threading.Thread(target=work, args=(k, uuid), daemon=True).start()
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main()
