"""The one registry of secrets (API keys...) that must never leave the process in text.

The daemon registers every configured key; ``scrub`` then replaces each
registered value in a text with ``[REDACTED]`` - and every prefix of one of
at least 8 characters, because providers quote keys cut short ("sk-ant-api03-
AbC...") and error texts are cut at some length, which may split a key.

It lives in the lowest layer so that the provider shell can scrub the errors
it emits and the daemon's log redaction can use the same values.

``scrub`` is linear in the text. The common case (no secret's first 8
characters, its "head", in the text) costs one ``str.find`` per head. Else
one regular expression built from a trie of the secrets finds (in C) the
next place a head starts and the longest prefix of a secret found there;
from the end of that match an Aho-Corasick automaton over the same trie
follows, one character at a time, every prefix that runs on past it (keys
that overlap themselves, keys longer than the regex goes), and hands back to
the regular expression as soon as less than 8 characters are in play.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Iterable
from functools import lru_cache
from typing import TypeAlias

__all__ = ["MIN_SECRET", "REDACTED", "register_secret", "register_secrets", "scrub"]

REDACTED = "[REDACTED]"
MIN_SECRET = 8  # shorter values, and shorter prefixes, would blank ordinary words
# Depth of the trie the regular expression spells out: its nested groups stay
# well within the regex compiler's recursion; the automaton goes further.
_DEPTH = 64


class _Secrets:
    """An immutable set of secrets and the matchers built from it."""

    __slots__ = ("_children", "_depth", "_fail", "_heads", "_node", "_pattern", "values")

    def __init__(self, values: frozenset[str]) -> None:
        self.values = values
        self._heads = tuple(sorted({v[:MIN_SECRET] for v in values}))
        # the trie: node 0 is the root; _node maps each prefix of up to _DEPTH
        # characters to its node
        self._children: list[dict[str, int]] = [{}]
        self._depth = [0]
        self._node: dict[str, int] = {}
        for value in values:
            node = 0
            for i, ch in enumerate(value):
                nxt = self._children[node].get(ch)
                if nxt is None:
                    nxt = self._children[node][ch] = len(self._children)
                    self._children.append({})
                    self._depth.append(i + 1)
                    if i < _DEPTH:
                        self._node[value[: i + 1]] = nxt
                node = nxt
        self._fail = _failure_links(self._children)
        # The lookahead makes the match zero-width at the place a head starts,
        # its group the longest prefix of a secret there.
        self._pattern = re.compile(f"(?=({_trie_regex(values)}))", re.DOTALL) if values else None

    def scrub(self, text: str) -> str:
        if self._pattern is None:
            return text
        found = [i for i in map(text.find, self._heads) if i >= 0]
        if not found:
            return text
        children, fail, depth = self._children, self._fail, self._depth
        search = self._pattern.search
        n = len(text)
        out: list[str] = []
        last = 0  # text before this is copied or redacted
        span_start = span_end = -1  # the span being redacted
        pos = min(found)
        while pos < n:
            m = search(text, pos)
            if m is None:
                break
            prefix = m.group(1)
            start, end, node = m.start(), m.start() + len(prefix), self._node[prefix]
            if start < span_end:
                span_end = max(span_end, end)
            else:
                if span_end >= 0:
                    out.append(text[last:span_start])
                    out.append(REDACTED)
                    last = span_end
                span_start, span_end = start, end
            # Follow the automaton past the match: `node` stays the longest
            # suffix of text[:end] that is a prefix of a secret.
            while end < n:
                ch = text[end]
                while node and ch not in children[node]:
                    node = fail[node]
                node = children[node].get(ch, 0)
                end += 1
                d = depth[node]
                if d < MIN_SECRET:
                    break
                if end - d < span_end:
                    span_end = end
                else:
                    out.append(text[last:span_start])
                    out.append(REDACTED)
                    last = span_end
                    span_start, span_end = end - d, end
            else:
                break
            # nothing that starts before this can run on past `end`
            pos = end - depth[node]
        if span_end >= 0:
            out.append(text[last:span_start])
            out.append(REDACTED)
            last = span_end
        out.append(text[last:])
        return "".join(out)


def _failure_links(children: list[dict[str, int]]) -> list[int]:
    """Aho-Corasick: for each node, the node of its longest proper suffix that is in the trie."""
    fail = [0] * len(children)
    queue = deque(children[0].values())
    while queue:
        node = queue.popleft()
        for ch, child in children[node].items():
            f = fail[node]
            while f and ch not in children[f]:
                f = fail[f]
            fail[child] = children[f].get(ch, 0) if node else 0
            queue.append(child)
    return fail


_Trie: TypeAlias = dict[str, "_Trie"]  # a character -> the node after it


def _trie_regex(values: Iterable[str]) -> str:
    """A regex matching the longest prefix (at least MIN_SECRET characters) of any value.

    Branches of a trie node start with distinct characters, so at most one can
    go on: the greedy optional groups then give the longest prefix present.
    """
    trie: _Trie = {}
    for value in values:
        node = trie
        for ch in value[:_DEPTH]:
            node = node.setdefault(ch, {})

    def build(node: _Trie, depth: int) -> str:
        if not node:
            return ""
        branches = [re.escape(ch) + build(child, depth + 1) for ch, child in sorted(node.items())]
        alt = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{alt})?" if depth >= MIN_SECRET else alt

    return build(trie, 0)


_EMPTY = _Secrets(frozenset())
_current = _EMPTY
_lock = threading.Lock()


@lru_cache(maxsize=64)
def _with(values: frozenset[str]) -> _Secrets:
    return _Secrets(values)


def _clean(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value if len(value) >= MIN_SECRET else None


def register_secret(value: str | None) -> None:
    """Scrub this value (and its prefixes of 8+ characters) from every text from now on.

    Values shorter than 8 characters are ignored: they would blank ordinary words.
    """
    global _current
    value = _clean(value)
    if value is None:
        return
    with _lock:
        current = _current
        if value not in current.values:
            _current = _with(current.values | {value})


def generation() -> object:
    """Changes (by identity) whenever the registered secrets change: a cache
    of scrubbed texts is good for one generation."""
    return _current


def register_secrets(values: Iterable[str | None]) -> None:
    for value in values:
        register_secret(value)


def _forget_secrets() -> None:
    """Tests only: drop every registered secret."""
    global _current
    with _lock:
        _current = _EMPTY


def scrub(text: str, *also: str | None) -> str:
    """``text`` with every registered secret, every one in ``also``, and every
    prefix of 8+ characters of one of them, replaced by ``[REDACTED]``."""
    secrets = _current
    extra = {v for v in map(_clean, also) if v is not None}
    if extra - secrets.values:
        secrets = _with(secrets.values | extra)
    return secrets.scrub(text)
