"""The live controller of lookup-else-draft (lookup_else.LookupElseDrafter): who proposes, and at which γ.

The draft's AutoGamma learns from the rounds the draft proposed and sets its γ; its live rate is the
bar a lookup proposal must beat. While that rate is below a target step's, the draft is off (γ 0: the
rounds without a lookup proposal are target steps) but for one round in EXPLORE_EVERY. γ for the round
is the longest proposal the gate wants at the live α (at least the draft's γ, and 1). Lookup rounds
update the lookup share and its tokens and cost per round. Like AutoGamma it changes lengths only, never
q, and only between rounds, so it changes speed, not the output.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..events import RoundEvent
from .cost import AUTO_GAMMA_MAX, DrafterProfile, VerifyCosts
from .live import LIVE_WEIGHT, AutoGamma
from .live_verify import LiveVerify
from .lookup_cost import mixed_speedup, round_yield, worth_proposing

if TYPE_CHECKING:
    from ..protocols import GatedLookup, LookupElse

LOOKUP, DRAFT, TARGET = "lookup", "draft", "target"  # who proposed a round (TARGET: nobody, a target step)
EXPLORE_EVERY = 16  # while the draft is off, every this many target-only rounds one drafts, so its live rate can recover


def lookup_gamma(lookup: GatedLookup, gamma_max: int, verify: VerifyCosts) -> int:
    """The longest proposal the gated lookup's live α wants, and never 0: a round with γ 0 never asks the
    drafter, so the lookup could neither propose nor learn."""
    return max(1, worth_proposing(gamma_max, lookup.alphas, verify, lookup.baseline))


class LookupElseGamma:
    """A LiveController with AutoGamma's attributes (callers need not ask which)."""

    def __init__(self, drafter: LookupElse, lookup: DrafterProfile, draft: DrafterProfile,
                 verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX, weight: float = LIVE_WEIGHT) -> None:
        self.drafter, self.verify, self.gamma_max, self.weight = drafter, verify, gamma_max, weight
        self.live = LiveVerify(verify, weight)  # v(n) as this chat's rounds pay it
        drafter.lookup.verify = verify  # the gate prices its proposals with the controller's costs
        self.draft = AutoGamma(draft, verify, gamma_max, weight)
        self.name, self.label = draft.name, drafter.name
        self.share = lookup.coverage  # live share of rounds the lookup proposed in
        k = max(1, worth_proposing(gamma_max, lookup.alpha, verify))
        self.lookup_round = round_yield(replace(lookup, per_position=()), k, verify)  # (tokens, cost) live
        self.rounds = 0
        self.idle = 0  # target-only rounds since the draft last drafted
        self._sync()

    @property
    def profile(self) -> DrafterProfile:
        """The draft's live profile, labelled with the drafter's name."""
        return replace(self.draft.profile, label=self.label)

    @property
    def draft_pays(self) -> bool:
        return self.draft.predicted >= 1.0

    def _sync(self) -> None:
        on = self.draft_pays or self.idle >= EXPLORE_EVERY
        self.drafter.draft_gamma = self.draft.gamma() if on else 0
        self.drafter.lookup.baseline = max(1.0, self.draft.predicted)

    def observe_step(self, seconds: float) -> None:
        """A target-only step of the real loop in this chat (the window's speedup baseline)."""
        self.live.observe(1, seconds)
        self._price()

    def _price(self) -> None:
        self.verify = self.drafter.lookup.verify = self.draft.verify = self.live.costs

    def observe(self, r: RoundEvent) -> None:
        who = self.drafter.proposer
        if r.round > 0:
            self.live.observe(r.drafted + 1, r.verify_time, r.context)
            self._price()
        if r.round > 0 and who is not None:
            w = self.weight
            self.share += w * ((1.0 if who == LOOKUP else 0.0) - self.share)
            if who == LOOKUP:
                tokens, cost = self.lookup_round
                self.lookup_round = (tokens + w * (r.accepted + 1 - tokens), cost + w * (self.verify.v(r.drafted + 1) - cost))
            elif who == DRAFT:
                self.draft.observe(r)
                self._price()  # the draft's rounds alone have no live step: the costs are this controller's
                self.idle = 0
            else:
                self.idle += 1
            self.rounds += 1
        self._sync()

    def gamma(self) -> int:
        return max(self.drafter.draft_gamma, lookup_gamma(self.drafter.lookup, self.gamma_max, self.verify))

    @property
    def predicted(self) -> float:
        """Predicted speedup over target-only from the live estimates of both kinds of round (the rest
        are target steps while the draft is off)."""
        other = round_yield(self.draft.profile, self.draft.gamma(), self.verify) if self.draft_pays else (1.0, 1.0)
        return mixed_speedup(self.share, self.lookup_round, other)

    @property
    def tokens_per_round(self) -> float:
        """E[tokens a round] over both kinds of round, weighted by the live share of lookup rounds."""
        other = round_yield(self.draft.profile, self.draft.gamma(), self.verify)[0] if self.draft_pays else 1.0
        return self.share * self.lookup_round[0] + (1 - self.share) * other


class GatedLookupGamma(AutoGamma):
    """AutoGamma for prompt lookup decided per round (gated_lookup.GatedLookupDrafter), but γ is the longest
    proposal the drafter's own α wants. AutoGamma's α learns only the positions a round proposed, so from
    γ 1 it never learned that a copy goes on: the "lookup shines" example stayed at γ 1 with α 0.94 a round.
    The gate learns every position of a match, proposed or not, and cuts each proposal to what pays, at
    verify costs learned from this chat's own rounds (live_verify.py)."""

    def __init__(self, lookup: GatedLookup, profile: DrafterProfile, verify: VerifyCosts,
                 gamma_max: int = AUTO_GAMMA_MAX, weight: float = LIVE_WEIGHT) -> None:
        super().__init__(profile, verify, gamma_max, weight)
        self.lookup = lookup
        lookup.verify = verify  # the gate prices its proposals with the controller's costs

    def observe(self, r: RoundEvent) -> None:
        super().observe(r)  # its target steps and proposals teach the live v(n) (AutoGamma.live)
        self.lookup.verify = self.verify

    def observe_step(self, seconds: float) -> None:
        super().observe_step(seconds)
        self.lookup.verify = self.verify

    def gamma(self) -> int:
        return lookup_gamma(self.lookup, self.gamma_max, self.verify)
