"""A suffix array over many token sequences (earlier conversations, a corpus of the target's own answers):
what suffix decoding (Oliaro et al., ArcticInference) proposes from, in numpy.

`continuation(context, k)` finds the longest suffix of the context (up to MAX_MATCH tokens) that occurs in
the sequences, then follows the most frequent continuation of what it matched, token by token, for as long
as that continuation keeps enough support: (the matched length, the tokens, each token's support share). A
sequence's end is a boundary no match or continuation crosses.

Built once (prefix doubling: O(N log² N) in numpy, ~1 s for a million tokens); a query is a few binary
searches over the array's packed keys (a few tokens to an int64), the matched length found by bisection.
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
        # Tokens as codes that sort as the suffix array does: past the end 0, a separator 1, token t as t + 2.
        # `width` codes pack into one int64 key, so a query compares `width` tokens per vectorised search
        # (np.searchsorted) instead of one numpy slice per comparison (0.90 -> 0.15 ms a query on the embedded
        # model's corpus).
        self.codes = np.append(self.text + 2, 0)
        self.bits = max(int(self.codes.max()).bit_length(), 1)
        self.width = 63 // self.bits
        self.first = self._keys(self.sa, self.width)  # every suffix's first `width` codes, ascending

    def __len__(self) -> int:
        return int((self.text != SEPARATOR).sum())

    def _keys(self, starts: np.ndarray, r: int) -> np.ndarray:
        """The `r` codes from each of `starts` packed into one int64 (past the end: 0)."""
        end = len(self.text)
        key = np.zeros(len(starts), dtype=np.int64)
        for t in range(r):
            key = (key << self.bits) | self.codes[np.minimum(starts + t, end)]
        return key

    def _range(self, pattern: np.ndarray, lo: int = 0, hi: int | None = None) -> tuple[int, int]:
        """[first, last) of the suffixes (within sa[lo:hi]) that start with `pattern`: `width` tokens at a time,
        each a binary search over the packed keys of the range the earlier tokens left."""
        hi = len(self.sa) if hi is None else hi
        codes = np.asarray(pattern, dtype=np.int64) + 2
        for at in range(0, len(codes), self.width):
            part = codes[at : at + self.width]
            r = len(part)
            want = 0
            for c in part:
                want = (want << self.bits) | int(c)
            if lo == 0 and hi == len(self.sa) and at == 0:  # the whole array: its precomputed keys
                keys, shift = self.first, self.bits * (self.width - r)
                first = int(np.searchsorted(keys, want << shift, "left"))
                last = int(np.searchsorted(keys, (want + 1) << shift, "left"))
                lo, hi = first, last
            else:
                keys = self._keys(self.sa[lo:hi] + at, r)
                lo, hi = lo + int(np.searchsorted(keys, want, "left")), lo + int(np.searchsorted(keys, want, "right"))
            if lo >= hi:
                return lo, lo
        return lo, hi

    def continuation(self, context: Sequence[int], k: int, min_support: int = 2,
                     min_share: float = 0.0) -> Continuation:
        """The longest suffix of `context` found (at least one token), then up to k tokens of its most frequent
        continuation, stopping where fewer than `min_support` occurrences or less than `min_share` of them go
        on that way."""
        if not len(self.sa) or not len(context):
            return Continuation(0, (), (), ())
        ctx = np.asarray(context[-MAX_MATCH:], dtype=np.int64)
        # A longer suffix occurs at most as often as a shorter one, so the longest with enough occurrences
        # is found by bisection over the length.
        best_n, best = 0, (0, 0)
        short, long = 1, len(ctx)
        while short <= long:
            n = (short + long) // 2
            lo, hi = self._range(ctx[-n:])
            if hi - lo >= min_support:
                best_n, best, short = n, (lo, hi), n + 1
            else:
                long = n - 1
        if not best_n:
            return Continuation(0, (), (), ())
        occurrences = self.sa[best[0] : best[1]] + best_n  # where each occurrence's next token is
        end = len(self.text)
        tokens, shares, support = [], [], []
        for _ in range(k):
            nexts = self.codes[np.minimum(occurrences, end)]
            real = nexts[nexts > 1]  # not a separator, not past the end
            if len(real) < min_support:
                break
            values, counts = np.unique(real, return_counts=True)
            top = int(np.argmax(counts))
            share = counts[top] / len(occurrences)
            if counts[top] < min_support or share < min_share:
                break
            tokens.append(int(values[top]) - 2)
            shares.append(float(share))
            support.append(int(counts[top]))
            occurrences = occurrences[nexts == values[top]] + 1
        return Continuation(best_n, tuple(tokens), tuple(shares), tuple(support))


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
