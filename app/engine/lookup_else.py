"""Prompt lookup where its match is worth verifying, else a draft: one Drafter that chooses per round.

Each round the gated lookup (gated_lookup.py) looks for a match in the context and keeps the prefix
predicted to beat a round of the draft (a feature draft or a draft model); when it keeps one, that
one-hot proposal is verified, otherwise the draft drafts the round. The choice reads the context and
estimates from earlier rounds only, never a random draw of this round, so every round is an exact chain
round of whichever drafter proposed it. The draft sees every round's commit (a feature draft gets the
target's features of every kept position, whoever proposed), so it resumes in sync after lookup rounds.

On copying prompts (summarise, rewrite) this gets lookup's long accepted runs; elsewhere the draft's.
`LookupElseGamma` is its live controller: the round's γ bounds the lookup, the draft keeps its own γ,
and γ 0 for the draft (while its live rate is below a target step's) makes the other rounds target-only.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from .events import RoundEvent
from .gated_lookup import GatedLookupDrafter, worth_proposing
from .policy import (
    AUTO_GAMMA_MAX,
    LIVE_WEIGHT,
    AutoGamma,
    DrafterProfile,
    VerifyCosts,
    expected_tokens,
    speedup,
)
from .rounds import DynamicRounds, Rounds

LOOKUP, DRAFT, TARGET = "lookup", "draft", "target"  # who proposed a round (TARGET: nobody, a target step)
EXPLORE_EVERY = 16  # while the draft is off, every this many target-only rounds one drafts, so its live rate can recover


class LookupElseDrafter:
    """A Drafter: the gated lookup's proposal when it has one, else `draft`'s chain of up to `draft_gamma`."""

    def __init__(self, lookup: GatedLookupDrafter, draft, draft_gamma: int) -> None:
        self.lookup, self.draft_with = lookup, draft
        self.name = f"prompt lookup, else {draft.name}"
        self.wants_features = draft.wants_features
        self.draft_gamma = draft_gamma  # the draft's own γ, 0: off; the round's γ bounds the lookup (LookupElseGamma)
        self.proposer: str | None = None  # who proposed the last round (read by LookupElseGamma.observe)

    def seed(self, seed: int) -> None:
        self.draft_with.seed(seed)

    def begin(self) -> None:
        self.lookup.begin()
        self.draft_with.begin()
        self.proposer = None

    def choose(self, device: torch.device, ids_list: list[int], gamma: int, vocab_size: int):
        """(x [k], q [k, V]) of a lookup proposal (one-hot q) or of a target-only round (k = 0, the draft
        off), else None: the draft drafts. Decided from the context and earlier rounds alone (the
        proposal's length is host data, so reading it waits on nothing)."""
        x, q = self.lookup.draft_on(device, ids_list, gamma, vocab_size)
        if len(x):
            self.proposer = LOOKUP
            return x, q
        self.proposer = DRAFT if self.draft_gamma > 0 else TARGET
        return None if self.draft_gamma > 0 else (x, q)

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        chosen = self.choose(ids.device, ids_list, gamma, vocab_size)
        if chosen is not None:
            return chosen
        return self.draft_with.draft(ids, ids_list, min(gamma, self.draft_gamma), params, vocab_size)

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        # Every round, whoever proposed: the draft's state must cover every kept position.
        self.draft_with.commit(kept, features, start)

    def static_form(self, decoder):
        form = self.draft_with.static_form(decoder)
        return form if isinstance(form, str) else _StaticLookupElse(self, form)

    def dynamic_rounds(self, target, prompt, generator) -> Rounds:
        return DynamicRounds(target, prompt, self, generator)


class _StaticLookupElse:
    """LookupElseDrafter on static caches: the draft's static form, skipped in rounds the lookup proposes
    (it catches up on the positions it missed at its next draft)."""

    def __init__(self, drafter: LookupElseDrafter, form) -> None:
        self.drafter, self.form = drafter, form
        self.models = form.models
        self.runner = form.runner  # a chain's: the draft's own chain runner

    def begin(self, rounds, prompt_len: int) -> None:
        self.form.begin(rounds, prompt_len)

    def draft(self, rounds, ids_list, gamma, params, vocab_size):
        chosen = self.drafter.choose(rounds.device, ids_list, gamma, vocab_size)
        if chosen is not None:
            return chosen
        return self.form.draft(rounds, ids_list, min(gamma, self.drafter.draft_gamma), params, vocab_size)

    def commit(self, kept: int) -> None:
        self.form.commit(kept)


def round_yield(profile: DrafterProfile, gamma: int, verify: VerifyCosts) -> tuple[float, float]:
    """(E[tokens], cost in target steps) of one round in which `profile` proposes γ tokens: policy.speedup
    at full coverage is their ratio."""
    tokens = expected_tokens(profile, gamma)
    return tokens, tokens / speedup(replace(profile, coverage=1.0), gamma, verify)


def mixed_speedup(share: float, lookup: tuple[float, float], draft: tuple[float, float]) -> float:
    """Tokens per target step when a `share` of rounds are lookup rounds and the rest draft rounds, each
    given as (E[tokens], cost in target steps)."""
    tokens = share * lookup[0] + (1 - share) * draft[0]
    return tokens / (share * lookup[1] + (1 - share) * draft[1])


def predict(lookup: DrafterProfile, draft: DrafterProfile, gamma: int, verify: VerifyCosts,
            lookup_max: int = AUTO_GAMMA_MAX) -> tuple[int, float]:
    """(lookup proposal length k, predicted speedup) with the draft at γ: lookup rounds in the share of
    rounds it found a match in (its measured coverage), proposing the k its α predicts to beat a draft
    round (0: it never proposes, so the draft's own speedup); draft rounds elsewhere."""
    drafted = round_yield(draft, gamma, verify)
    k = worth_proposing(lookup_max, lookup.alpha, verify, max(1.0, drafted[0] / drafted[1]))
    if k == 0:
        return 0, drafted[0] / drafted[1]
    return k, mixed_speedup(lookup.coverage, round_yield(replace(lookup, per_position=()), k, verify), drafted)


def best_draft_gamma(lookup: DrafterProfile, draft: DrafterProfile, verify: VerifyCosts,
                     gamma_max: int = AUTO_GAMMA_MAX) -> tuple[int, float]:
    """(the draft's γ, predicted speedup) maximising `predict` over 1..gamma_max; the smaller γ on ties."""
    best = (1, predict(lookup, draft, 1, verify, gamma_max)[1])
    for gamma in range(2, gamma_max + 1):
        s = predict(lookup, draft, gamma, verify, gamma_max)[1]
        if s > best[1] + 1e-9:
            best = (gamma, s)
    return best


class LookupElseGamma:
    """The live controller of a LookupElseDrafter, with AutoGamma's attributes (callers need not ask which).

    The draft's AutoGamma learns from the rounds the draft proposed and sets its γ; its live rate is the
    bar a lookup proposal must beat. While that rate is below a target step's, the draft is off (γ 0:
    the rounds without a lookup proposal are target steps) but for one round in EXPLORE_EVERY. γ for the
    round is the longest proposal the gate wants at the live α (at least the draft's γ, and 1). Lookup rounds
    update the lookup share and its tokens and cost per round. Like AutoGamma it changes lengths only,
    never q, and only between rounds, so it changes speed, not the output.
    """

    def __init__(self, drafter: LookupElseDrafter, lookup: DrafterProfile, draft: DrafterProfile,
                 verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX, weight: float = LIVE_WEIGHT) -> None:
        self.drafter, self.verify, self.gamma_max, self.weight = drafter, verify, gamma_max, weight
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

    def observe(self, r: RoundEvent) -> None:
        who = self.drafter.proposer
        if r.round > 0 and who is not None:
            w = self.weight
            self.share += w * ((1.0 if who == LOOKUP else 0.0) - self.share)
            if who == LOOKUP:
                tokens, cost = self.lookup_round
                self.lookup_round = (tokens + w * (r.accepted + 1 - tokens), cost + w * (self.verify.v(r.drafted + 1) - cost))
            elif who == DRAFT:
                self.draft.observe(r)
                self.idle = 0
            else:
                self.idle += 1
            self.rounds += 1
        self._sync()

    def gamma(self) -> int:
        lookup = self.drafter.lookup
        # Never 0: a round with γ 0 never asks the drafter, so the lookup could neither propose nor learn.
        return max(1, self.drafter.draft_gamma, worth_proposing(self.gamma_max, lookup.alphas, self.verify, lookup.baseline))

    @property
    def predicted(self) -> float:
        """Predicted speedup over target-only from the live estimates of both kinds of round (the rest
        are target steps while the draft is off)."""
        other = round_yield(self.draft.profile, self.draft.gamma(), self.verify) if self.draft_pays else (1.0, 1.0)
        return mixed_speedup(self.share, self.lookup_round, other)
