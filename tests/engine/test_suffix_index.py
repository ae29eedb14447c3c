"""The suffix array behind suffix decoding, against brute force on random sequences: every range holds
exactly the occurrences of its pattern, the matched suffix is the longest with enough occurrences, and the
continuation is the most frequent next token at each step, never across a sequence's end. Planted twin:
an index whose separators were dropped lets a continuation run from one sequence into the next."""

from __future__ import annotations

import random
from collections import Counter

from app.engine.suffix_index import SuffixIndex


def _occurrences(seqs, pattern):
    return [(s, i) for s, seq in enumerate(seqs) for i in range(len(seq) - len(pattern) + 1)
            if seq[i : i + len(pattern)] == pattern]


def _random_seqs(rng, count=12, vocab=5):
    return [[rng.randrange(vocab) for _ in range(rng.randrange(1, 40))] for _ in range(count)]


def test_ranges_hold_exactly_the_occurrences():
    rng = random.Random(0)
    for _ in range(30):
        seqs = _random_seqs(rng)
        index = SuffixIndex(seqs)
        for _ in range(20):
            pattern = [rng.randrange(5) for _ in range(rng.randrange(1, 5))]
            lo, hi = index._range(__import__("numpy").array(pattern))
            assert hi - lo == len(_occurrences(seqs, pattern))


def test_the_continuation_is_the_brute_force_one():
    rng = random.Random(1)
    checked = 0
    for _ in range(60):
        seqs = _random_seqs(rng)
        index = SuffixIndex(seqs)
        context = [rng.randrange(5) for _ in range(rng.randrange(1, 8))]
        got = index.continuation(context, 4, min_support=2)
        want_n = next((n for n in range(len(context), 0, -1) if len(_occurrences(seqs, context[-n:])) >= 2), 0)
        assert got.matched == want_n
        if not want_n:
            continue
        pattern = context[-want_n:]
        for token, support in zip(got.tokens, got.support, strict=True):
            nexts = Counter(seqs[s][i + len(pattern)] for s, i in _occurrences(seqs, pattern)
                            if i + len(pattern) < len(seqs[s]))
            assert nexts[token] == max(nexts.values()) == support
            pattern = [*pattern, token]
            checked += 1
    assert checked > 20


def test_a_continuation_never_crosses_a_sequences_end():
    seqs = [[1, 2, 3], [4, 5], [1, 2, 3], [4, 5]]
    assert SuffixIndex(seqs).continuation([1, 2, 3], 3).tokens == ()
    joined = [[t for seq in seqs for t in seq]]  # planted: the same tokens with no boundary between sequences
    assert SuffixIndex(joined).continuation([1, 2, 3], 3).tokens == (4, 5)
