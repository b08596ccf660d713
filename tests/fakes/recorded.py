"""What the fake server received: every request, in order."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs


@dataclass
class RecordedRequest:
    method: str
    target: str  # path and query as sent
    headers: dict[str, str]  # lower-case names
    body: bytes
    index: int = 0  # order of arrival, from 0
    json: Any = field(default=None)
    tokens: int | None = None  # input tokens, counted for a model with a window (tests/fakes/window.py)
    # trio clock when it arrived, and when its answer ended (sent, or the client gone)
    arrived: float = 0.0
    finished: float | None = None

    def __post_init__(self) -> None:
        if self.body and self.json is None:
            try:
                self.json = json.loads(self.body)
            except ValueError:
                self.json = None

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> dict[str, str]:
        q = self.target.split("?", 1)[1] if "?" in self.target else ""
        return {k: v[-1] for k, v in parse_qs(q).items()}
