"""Prompt lookup decided per round: propose only the part of a match that is predicted to pay.

A lookup proposal costs nothing to make, so the only question each round is whether verifying k
proposed tokens beats a plain target step: with α_i the acceptance at match position i (the earlier ones
accepted), k tokens give E(k) = 1 + α_1 + α_1α_2 + … + α_1…α_k tokens for v(k + 1) target steps, against
1 token for 1 step. The drafter
proposes the k (0..len(match)) with the best E(k) / v(k + 1), and nothing (a target-only round) when
no k beats 1 (or `baseline`, the rate of the round that runs instead: lookup_else.py drafts with a
draft there). α_i starts at the measured acceptance of lookup proposals and is updated live from how much of the last
match the context now holds, proposed or not: an unproposed match's next token is sampled from p, so it
equals the match with the probability a one-hot proposal of it is accepted. Only the length of a
proposal changes, never its q, and the length is read from the context alone, so the output stays exact.

α is kept apart for each length of the matched n-gram. On the embedded model's greedy and T 0.7 answers to
the bench and chat-heldout prompts, a match of the last token alone was right at position 1 in 16% of 727
matches, of the last two tokens in 42% of 222, of the last three in 75% of 451 (docs/engine-notes.md):
one α for all proposed on one-token matches that lose, and held back the three-token copies that pay.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING

from .drafters import PromptLookupDrafter
from .policy.cost import AUTO_GAMMA_MAX, VerifyCosts
from .policy.live import LIVE_WEIGHT
from .policy.live_lookup import GatedLookupGamma
from .policy.lookup_cost import worth_proposing

if TYPE_CHECKING:
    from .policy.cost import DrafterProfile
    from .protocols import LiveController

__all__ = ["GatedLookupDrafter", "worth_proposing"]


class GatedLookupDrafter(PromptLookupDrafter):
    """A Drafter: prompt lookup whose proposal is cut to what verify costs make worth testing."""

    name = "prompt lookup (per round)"

    def __init__(self, verify: VerifyCosts, alpha: float, max_ngram: int = 3, min_ngram: int = 1,
                 weight: float = LIVE_WEIGHT, never: Iterable[int] = ()) -> None:
        super().__init__(max_ngram, min_ngram, never)
        self.verify = verify
        # α per matched n-gram length and match position, given the earlier positions agreed: a copy that
        # starts right tends to go on (docs/engine-notes.md), which one α would hide.
        self.by_length: dict[Hashable, list[float]] = {
            n: [alpha] * AUTO_GAMMA_MAX for n in range(min_ngram, max_ngram + 1)}  # keyed by the kind of match
        self.weight = weight
        self.baseline = 1.0  # tokens per target step of the round run instead of a proposal
        self.rounds = self.proposed = 0
        self._last: tuple[int, int, list[int]] | None = None  # (context length, n, match) of the last round

    @property
    def alphas(self) -> list[float]:
        """α per match position for the likeliest-to-pay match length: what sizes a round's γ before the
        round's match is known (the proposal itself is cut by its own length's α)."""
        return [max(row[i] for row in self.by_length.values()) for i in range(AUTO_GAMMA_MAX)]

    def begin(self) -> None:
        self._last = None

    def controller(self, profile: DrafterProfile, verify: VerifyCosts, gamma_max: int) -> LiveController:
        """γ is the longest proposal its own live α wants (policy.GatedLookupGamma)."""
        return GatedLookupGamma(self, profile, verify, gamma_max)

    def _learn(self, ids_list: list[int]) -> None:
        """Update α from the last match: the context now holds the accepted prefix of what was proposed,
        then a corrected token (never the rejected one: its residual excludes it) or a token sampled
        from p (a bonus, or whatever the round emitted where nothing was proposed)."""
        if self._last is None:
            return
        start, n, match = self._last
        alphas = self.by_length[n]
        got = ids_list[start : start + len(match)]
        agreed = next((i for i, (a, b) in enumerate(zip(got, match, strict=False)) if a != b), len(got))
        for i in range(min(agreed + 1, len(got), len(alphas))):  # after a disagreement: never tested
            alphas[i] += self.weight * ((1.0 if i < agreed else 0.0) - alphas[i])

    def propose(self, ids_list: list[int], gamma: int) -> list[int]:
        """The match, cut to its worthwhile prefix (the one-hot q of the chain rule is unchanged)."""
        self._learn(ids_list)
        # The match as far as α is learnt, whatever this round's γ: a γ cut to what α predicts to pay
        # must not stop α learning the positions past it (it would never learn that they pay).
        n, match = self.match(ids_list, max(gamma, AUTO_GAMMA_MAX))
        verify = self.verify.at(len(ids_list))  # this round's own context
        worth = worth_proposing(len(match), self.by_length[n], verify, self.baseline) if match else 0
        proposal = match[: min(gamma, worth)]
        self._last = (len(ids_list), n, match) if match else None
        self.rounds += 1
        self.proposed += bool(proposal)
        return proposal
