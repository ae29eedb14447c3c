"""Prompt lookup where its match is worth verifying, else a draft: one Drafter that chooses per round.

Each round the gated lookup (gated_lookup.py) looks for a match in the context and keeps the prefix
predicted to beat a round of the draft (a feature draft or a draft model); when it keeps one, that
one-hot proposal is verified, otherwise the draft drafts the round. The choice reads the context and
estimates from earlier rounds only, never a random draw of this round, so every round is an exact chain
round of whichever drafter proposed it. The draft sees every round's commit (a feature draft gets the
target's features of every kept position, whoever proposed), so it resumes in sync after lookup rounds.

On copying prompts (summarise, rewrite) this gets lookup's long accepted runs; elsewhere the draft's.
Its live controller is policy.live_lookup.LookupElseGamma (the round's γ bounds the lookup, the draft
keeps its own γ); its cost is policy.lookup_cost; its static form lookup_else_static.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import torch

from .gated_lookup import GatedLookupDrafter
from .lookup_else_static import StaticLookupElse
from .policy.live_lookup import DRAFT, LOOKUP, TARGET, LookupElseGamma
from .protocols import Drafter, StaticDraft

if TYPE_CHECKING:
    from .policy.cost import DrafterProfile, VerifyCosts
    from .protocols import LiveController


class LookupElseDrafter:
    """A Drafter: the gated lookup's proposal when it has one, else `draft`'s chain of up to `draft_gamma`."""

    proposes: Literal["chain"] = "chain"

    def __init__(self, lookup: GatedLookupDrafter, draft: Drafter, draft_gamma: int,
                 lookup_profile: DrafterProfile | None = None) -> None:
        self.lookup, self.draft_with = lookup, draft
        self.lookup_profile = lookup_profile  # prompt lookup's measured profile: where its live controller starts
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

    def static_form(self) -> StaticDraft:
        return StaticLookupElse(self, self.draft_with.static_form())

    def tree_form(self, budget: int, depth: int) -> None:
        return None  # who proposes is decided per round, between two chains

    def chain_form(self) -> LookupElseDrafter:
        return self

    def controller(self, profile: DrafterProfile, verify: VerifyCosts, gamma_max: int) -> LiveController:
        """Who proposes, and the draft's γ (policy.LookupElseGamma); `profile` is the draft's."""
        if self.lookup_profile is None:
            raise ValueError(f"{self.name} was made without prompt lookup's measured profile, so it has no live γ")
        return LookupElseGamma(self, self.lookup_profile, profile, verify, gamma_max)
