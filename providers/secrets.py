"""The one registry of secrets (API keys...) that must never leave the process in text.

The daemon registers every configured key; ``scrub`` then replaces each
registered value in a text with ``[REDACTED]`` - and every prefix of one of
at least 8 characters, because providers quote keys cut short ("sk-ant-api03-
AbC...") and error texts are cut at some length, which may split a key - and
every piece of at least 12 characters cut from anywhere in one, because texts
quote keys from the middle or the end too ("key ending in ...xYz12") and a
cut may fall on both sides of one. (Pieces from the middle start with no
telling prefix, so they need 12 characters before they cannot be mistaken
for an ordinary word.)

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

Pieces from anywhere: a piece of 12+ characters is covered by its windows of
exactly 12, each in the set of the secrets' 12-character windows, so the
pieces in a text are its windows found in that set, merged where they
overlap. Looking up every window of every text would cost a log line dearly;
instead 8-character samples, taken every 5 characters, are looked up in the
set of the secrets' 8-character grams. Every window of 12 holds one sample
whole, so a text none of whose samples is such a gram holds no piece: the
common case, settled by a few lookups. Only around a sample that is one are
the windows looked up. A short text is sampled all along; a long one only in
its runs of 12+ characters of the secrets' alphabet (found by bytes.translate
and bytes.find, in C), where any piece must lie.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import TypeAlias

__all__ = ["MIN_FRAGMENT", "MIN_SECRET", "REDACTED", "register_secret", "register_secrets", "scrub"]

REDACTED = "[REDACTED]"
MIN_SECRET = 8  # shorter values, and shorter prefixes, would blank ordinary words
# A piece from the middle of a secret has no telling start ("sk-ant-..."):
# this long, it is no word or id that a text holds by chance.
MIN_FRAGMENT = 12
# Samples of _SAMPLE characters every _STRIDE characters: each window of
# MIN_FRAGMENT characters holds one whole, as _SAMPLE + _STRIDE - 1 == MIN_FRAGMENT.
_SAMPLE = 8
_STRIDE = MIN_FRAGMENT - _SAMPLE + 1
# Texts up to this long are sampled all along; longer ones only in their runs
# of MIN_FRAGMENT+ characters of the secrets' alphabet (finding the runs costs
# more than it saves below some 400 characters of prose, and far more in a
# timestamp or an id).
_SHORT = 256
# where a short text of each length is sampled, and its samples in one call
# (and an empty one: itemgetter of a single item would give it bare, not in a tuple)
_SAMPLED = {n: range(0, n - _SAMPLE + 1, _STRIDE) for n in range(MIN_FRAGMENT, _SHORT + 1)}
_SLICES = [slice(p, p + _SAMPLE) for p in _SAMPLED[_SHORT]]
_SAMPLERS = {n: itemgetter(*_SLICES[: len(firsts)], slice(0, 0)) for n, firsts in _SAMPLED.items()}
_RUN = b"a" * MIN_FRAGMENT  # a run, in a text translated by _Secrets._table
_GAP = b" "  # any other character, translated
# Depth of the trie the regular expression spells out: its nested groups stay
# well within the regex compiler's recursion; the automaton goes further.
_DEPTH = 64


class _Secrets:
    """An immutable set of secrets and the matchers built from it."""

    __slots__ = (
        "_children",
        "_depth",
        "_fail",
        "_grams",
        "_heads",
        "_node",
        "_pattern",
        "_table",
        "_windows",
        "values",
    )

    def __init__(self, values: frozenset[str]) -> None:
        self.values = values
        long = [v for v in values if len(v) >= MIN_FRAGMENT]
        self._windows = frozenset(
            v[i : i + MIN_FRAGMENT] for v in long for i in range(len(v) - MIN_FRAGMENT + 1)
        )
        self._grams = frozenset(
            v[i : i + _SAMPLE] for v in long for i in range(len(v) - _SAMPLE + 1)
        )
        # Latin-1 bytes translated by this table spell each character of the
        # alphabet "a" and any other " ". A character beyond Latin-1 is
        # encoded "?": if the alphabet has such characters, "?" counts as one.
        alphabet = set().union(*long)
        if "?" in alphabet or any(ord(ch) > 0xFF for ch in alphabet):
            alphabet.add("?")
        self._table = bytes(b"a"[0] if chr(i) in alphabet else _GAP[0] for i in range(256))
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
        spans = self.spans(text)
        return redact_spans(text, spans) if spans else text

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where ``text`` holds a secret, a prefix of 8+ or a piece of 12+
        characters of one: disjoint (start, end) spans, in order."""
        if self._pattern is None:
            return []
        heads = self._heads
        found = any(map(text.__contains__, heads))  # in C: no list for the common case
        # Where the text is sampled for pieces; None when no sample is a gram
        # of a secret (the common case, kept to a few lookups in C).
        n, grams = len(text), self._grams
        sampled: Sequence[int] | None = None
        if MIN_FRAGMENT <= n <= _SHORT:
            if not grams.isdisjoint(_SAMPLERS[n](text)):
                sampled = _SAMPLED[n]
        elif n > _SHORT and grams:
            firsts = self._runs(text)
            if not grams.isdisjoint([text[p : p + _SAMPLE] for p in firsts]):
                sampled = firsts
        if not found and sampled is None:
            return []
        spans: list[tuple[int, int]] = []
        if found:
            spans = self._prefixes(text, min(i for i in map(text.find, heads) if i >= 0))
        if sampled is not None:
            pieces = self._pieces(text, sampled)
            if pieces:
                spans = _merge(spans, pieces) if spans else pieces
        return spans

    def _pieces(self, text: str, sampled: Sequence[int]) -> list[tuple[int, int]]:
        """The spans of ``text`` covered by windows of MIN_FRAGMENT characters
        of a secret, merged where they overlap, in order; ``sampled``: where
        the text's samples start."""
        grams = self._grams
        windows = self._windows
        starts: list[int] = []  # of the windows found, in order
        for p in sampled:
            if text[p : p + _SAMPLE] in grams:
                # the windows holding this sample whole (those of two samples
                # never meet: each window is looked up once, in order)
                for x in range(max(0, p - _STRIDE + 1), p + 1):
                    if text[x : x + MIN_FRAGMENT] in windows:
                        starts.append(x)
        spans: list[tuple[int, int]] = []
        if not starts:
            return spans
        # windows closer than MIN_FRAGMENT overlap: one span
        first = prev = starts[0]
        for x in starts:
            if x - prev >= MIN_FRAGMENT:
                spans.append((first, prev + MIN_FRAGMENT))
                first = x
            prev = x
        spans.append((first, prev + MIN_FRAGMENT))
        return spans

    def _runs(self, text: str) -> list[int]:
        """Where to sample a long text: every _STRIDE characters from the start
        of each run of MIN_FRAGMENT+ characters of the secrets' alphabet.

        The runs are found in the text translated to "a" (of the alphabet) and
        " " (not), by bytes.translate and bytes.find: loops in C over the
        text, Python going round once per run.
        """
        spelled = text.encode("latin-1", "replace").translate(self._table)
        find, n = spelled.find, len(spelled)
        firsts: list[int] = []
        a = find(_RUN)
        while a >= 0:
            b = find(_GAP, a + MIN_FRAGMENT)
            if b < 0:
                b = n
            firsts += range(a, b - _SAMPLE + 1, _STRIDE)
            a = find(_RUN, b)
        return firsts

    def _prefixes(self, text: str, pos: int) -> list[tuple[int, int]]:
        """The spans of ``text`` covered by prefixes of MIN_SECRET+ characters
        of a secret, merged where they overlap, in order; none starts before ``pos``."""
        children, fail, depth = self._children, self._fail, self._depth
        search = self._pattern.search  # type: ignore[union-attr]
        n = len(text)
        spans: list[tuple[int, int]] = []
        span_start = span_end = -1  # the span being redacted
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
                    spans.append((span_start, span_end))
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
                    spans.append((span_start, span_end))
                    span_start, span_end = end - d, end
            else:
                break
            # nothing that starts before this can run on past `end`
            pos = end - depth[node]
        if span_end >= 0:
            spans.append((span_start, span_end))
        return spans


def _merge(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Two lists of spans as one, in order, spans that overlap merged."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(a + b):
        if out and start < out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


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
    """Scrub this value (its prefixes of 8+ characters, and its pieces of 12+
    characters cut from anywhere) from every text from now on.

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


def redact_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each of ``spans`` (disjoint, in order) replaced by ``[REDACTED]``."""
    out: list[str] = []
    last = 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)


def secret_spans(text: str) -> list[tuple[int, int]]:
    """The spans ``scrub`` replaces: disjoint, in order (for redactors that
    combine them with spans of their own before replacing anything)."""
    return _current.spans(text)


def scrub(text: str, *also: str | None) -> str:
    """``text`` with every registered secret, every one in ``also``, every
    prefix of 8+ characters of one of them and every piece of 12+ characters
    cut from anywhere in one, replaced by ``[REDACTED]``."""
    secrets = _current
    if also:  # the log's calls give none: they skip building a set
        extra = {v for v in map(_clean, also) if v is not None}
        if extra - secrets.values:
            secrets = _with(secrets.values | extra)
    return secrets.scrub(text)
