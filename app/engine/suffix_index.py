"""A suffix array over many token sequences (earlier conversations, a corpus of the target's own answers):
what suffix decoding (Oliaro et al., ArcticInference) proposes from, in numpy.

`continuation(context, k)` finds the longest suffix of the context (up to MAX_MATCH tokens) that occurs in
the sequences, then follows the most frequent continuation of what it matched, token by token, for as long
as that continuation keeps enough support: (the matched length, the tokens, each token's support share). A
sequence's end is a boundary no match or continuation crosses.

Built once (prefix doubling: O(N log² N) in numpy, ~1 s for a million tokens); a query is a few binary
searches over the array, each comparing at most MAX_MATCH tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

MAX_MATCH = 16  # longest context suffix looked up
SEPARATOR = -1  # between sequences: never a token, so no match or continuation crosses it


@dataclass(frozen=True)
class Continuation:
    matched: int  # tokens of the context's suffix found in the sequences
    tokens: tuple[int, ...]  # the most frequent continuation, one token at a time
    shares: tuple[float, ...]  # each token's share of the occurrences that reached it
    support: tuple[int, ...]  # occurrences behind each token


class SuffixIndex:
    def __init__(self, sequences: Iterable[Sequence[int]]) -> None:
        parts = []
        for seq in sequences:
            if len(seq):
                parts += [np.asarray(seq, dtype=np.int64), np.array([SEPARATOR], dtype=np.int64)]
        self.text = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        self.sa = _suffix_array(self.text)

    def __len__(self) -> int:
        return int((self.text != SEPARATOR).sum())

    def _range(self, pattern: np.ndarray, lo: int = 0, hi: int | None = None) -> tuple[int, int]:
        """[first, last) of the suffixes (within sa[lo:hi]) that start with `pattern`."""
        hi = len(self.sa) if hi is None else hi
        m = len(pattern)

        def prefix(i: int) -> np.ndarray:
            start = self.sa[i]
            return self.text[start : start + m]

        def less(i: int) -> bool:  # suffix i's first m tokens < pattern
            return _compare(prefix(i), pattern) < 0

        def leq(i: int) -> bool:
            return _compare(prefix(i), pattern) <= 0

        a, b = lo, hi
        while a < b:
            mid = (a + b) // 2
            if less(mid):
                a = mid + 1
            else:
                b = mid
        first, b = a, hi
        while a < b:
            mid = (a + b) // 2
            if leq(mid):
                a = mid + 1
            else:
                b = mid
        return first, a

    def continuation(self, context: Sequence[int], k: int, min_support: int = 2,
                     min_share: float = 0.0) -> Continuation:
        """The longest suffix of `context` found (at least one token), then up to k tokens of its most frequent
        continuation, stopping where fewer than `min_support` occurrences or less than `min_share` of them go
        on that way."""
        if not len(self.sa) or not len(context):
            return Continuation(0, (), (), ())
        ctx = np.asarray(context[-MAX_MATCH:], dtype=np.int64)
        found = None
        for n in range(len(ctx), 0, -1):  # longest first: a long match predicts best
            lo, hi = self._range(ctx[-n:])
            if hi - lo >= min_support:
                found = n, lo, hi
                break
        if found is None:
            return Continuation(0, (), (), ())
        n, lo, hi = found
        pattern = ctx[-n:]
        tokens, shares, support = [], [], []
        for _ in range(k):
            starts = self.sa[lo:hi] + len(pattern)
            nexts = self.text[starts[starts < len(self.text)]]
            nexts = nexts[nexts != SEPARATOR]
            if len(nexts) < min_support:
                break
            values, counts = np.unique(nexts, return_counts=True)
            best = int(np.argmax(counts))
            share = counts[best] / (hi - lo)
            if counts[best] < min_support or share < min_share:
                break
            token = int(values[best])
            tokens.append(token)
            shares.append(float(share))
            support.append(int(counts[best]))
            pattern = np.append(pattern, token)
            lo, hi = self._range(pattern, lo, hi)
        return Continuation(n, tuple(tokens), tuple(shares), tuple(support))


def _compare(a: np.ndarray, b: np.ndarray) -> int:
    """Lexicographic order of two token runs (a shorter run that is a prefix sorts first)."""
    m = min(len(a), len(b))
    diff = np.nonzero(a[:m] != b[:m])[0]
    if len(diff):
        i = diff[0]
        return -1 if a[i] < b[i] else 1
    return (len(a) > len(b)) - (len(a) < len(b))


def _suffix_array(text: np.ndarray) -> np.ndarray:
    """Suffixes' start positions in lexicographic order (prefix doubling on ranks)."""
    n = len(text)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    rank = np.unique(text, return_inverse=True)[1].astype(np.int64)
    sa = np.arange(n, dtype=np.int64)
    k = 1
    while True:
        second = np.full(n, -1, dtype=np.int64)
        second[: n - k] = rank[k:] if k < n else second[:0]
        sa = np.lexsort((second, rank))
        key = np.stack([rank[sa], second[sa]], axis=1)
        new = np.empty(n, dtype=np.int64)
        new[sa] = np.concatenate([[0], np.cumsum(np.any(key[1:] != key[:-1], axis=1))])
        rank = new
        if rank.max() == n - 1 or k >= n:
            return sa
        k *= 2
