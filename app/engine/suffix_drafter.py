"""Suffix decoding (Oliaro et al.; ArcticInference, vLLM): prompt lookup that also looks beyond the context,
in a suffix array over earlier conversations and a corpus of the target's own answers (suffix_index.py),
proposing the continuation most often seen after the longest matching suffix.

It costs no model pass, so whether a round proposes, and how much, is the per-round lookup's question
(gated_lookup.py): the proposal is cut to the prefix whose predicted acceptance pays for its verify rows,
with α learned live for each kind of match: in the context by n-gram length, as before, and in the index
by matched length (capped at LONG) and by the continuation's share of the occurrences (SHARES), which is
how often what was seen after this text went on this way. A continuation is followed only while at least
MIN_SUPPORT occurrences agree, so a phrase seen once proposes nothing. q stays one-hot on each proposed
token and only the length of a proposal depends on α, so the output stays exact.
"""

from __future__ import annotations

from collections.abc import Iterable

from .drafters import before_any
from .gated_lookup import GatedLookupDrafter
from .policy.cost import AUTO_GAMMA_MAX, VerifyCosts
from .suffix_index import SuffixIndex

LONG = 8  # matched lengths past this share one α
SHARES = (0.5, 0.8)  # a continuation's share of occurrences: below 0.5, 0.5 to 0.8, above
MIN_SUPPORT = 2


class SuffixDrafter(GatedLookupDrafter):
    """A Drafter: per-round prompt lookup over the context and a suffix index of other text."""

    name = "suffix decoding"

    def __init__(self, verify: VerifyCosts, alpha: float, index: SuffixIndex, max_ngram: int = 3,
                 never: Iterable[int] = (), index_alpha: float | None = None) -> None:
        super().__init__(verify, alpha, max_ngram=max_ngram, never=never)
        self.index = index
        start = alpha if index_alpha is None else index_alpha
        for length in range(1, LONG + 1):
            for band in range(len(SHARES) + 1):
                self.by_length[("index", length, band)] = [start] * AUTO_GAMMA_MAX
        self.from_index = 0  # rounds whose proposal came from the index

    def match(self, ids_list: list[int], gamma: int):
        """(key, continuation): the context's own match (key its n-gram length), or the index's where its
        matched suffix is longer (key ("index", length, share band))."""
        n, found = super().match(ids_list, gamma)
        seen = self.index.continuation(ids_list, gamma, min_support=MIN_SUPPORT)
        tokens = before_any(list(seen.tokens), self.never)
        if tokens and seen.matched > n:
            band = sum(seen.shares[0] >= s for s in SHARES)
            return ("index", min(seen.matched, LONG), band), tokens
        return n, found

    def propose(self, ids_list: list[int], gamma: int) -> list[int]:
        proposal = super().propose(ids_list, gamma)
        if proposal and self._last is not None and isinstance(self._last[1], tuple):
            self.from_index += 1
        return proposal
