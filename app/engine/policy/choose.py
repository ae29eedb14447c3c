"""The load-time choice: the drafter and its form (γ chain or sized tree) predicted fastest, or target-only.

Everything comes back as data (`Choice`, its `Option`s and their `Limit`s); the words for people are
the front ends' (app/drafting/reasons.py in English, app/gui/model_flow.py in the user's language).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .cost import (
    AUTO_GAMMA_MAX,
    TREE_DEPTH,
    DrafterProfile,
    VerifyCosts,
    best_gamma,
    best_nodes,
    tree_accepted,
)

MARGIN = 1.03  # a drafter must be predicted this much faster than target-only, or it is not worth the risk
# A front end's token-tree switch as the policy's `tree` argument: None lets the measurement choose.
TREE_MODES: dict[str, bool | None] = {"auto": None, "on": True, "off": False}


@dataclass(frozen=True, slots=True)
class Limit:
    """What limits a drafter, as data (app.drafting.reasons words it in English, the window in the user's language)."""

    kind: str  # "cost" (c), "coverage" (share of rounds it proposes in), "acceptance" (α against v(γ+1)),
    # or "tree": why its best tree loses to its chain (value: E[accepted] of that tree, verify: v_tree(nodes + 1))
    value: float  # c, the coverage, α, or the tree's E[accepted]
    verify: float  # v(γ+1) in target steps (a tree: v_tree(nodes + 1))
    device: str  # "CPU", "CUDA", "MPS"
    nodes: int = 0  # "tree": the best tree's node budget


@dataclass(frozen=True, slots=True)
class Option:
    name: str
    label: str
    gamma: int  # γ, or a tree's depth
    predicted: float
    limit: Limit
    nodes: int = 0  # a tree's node budget; 0: a chain
    tree: Limit | None = None  # why its tree lost to its chain, when it has a measured tree


@dataclass(frozen=True, slots=True)
class Choice:
    drafter: str | None  # the chosen profile's name; None: target-only
    gamma: int  # the best γ for it (the live controller moves it later); a tree's depth
    predicted: float  # predicted speedup over target-only (1.0 for target-only)
    reason: str = ""  # one line for people, filled by the caller that words it (app.drafting.reasons)
    options: tuple[Option, ...] = field(default=())  # every drafter's best, fastest first
    nodes: int = 0  # the chosen tree's node budget; 0: a chain (or target-only)
    device: str = "CPU"  # where it was measured: "CPU", "GPU", ...

    @property
    def tree(self) -> bool:
        return self.nodes > 0

    @property
    def tree_limit(self) -> Limit | None:
        """Why the chosen drafter runs a chain although it has a tree (None otherwise)."""
        return self.options[0].tree if self.options and not self.tree and not self.target_only else None

    @property
    def target_only(self) -> bool:
        return self.drafter is None


def limit_of(profile: DrafterProfile, gamma: int, verify: VerifyCosts, device: str = "CPU") -> Limit:
    """The main reason a drafter does not pay: its cost, its acceptance, or the verify pass."""
    v = verify.v(gamma + 1)
    if profile.c >= 0.5:
        return Limit("cost", profile.c, v, device)
    if profile.coverage < 0.5:
        return Limit("coverage", profile.coverage, v, device)
    return Limit("acceptance", profile.alpha, v, device)


def option_for(profile: DrafterProfile, verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX,
               device: str = "CPU", tree: bool | None = None) -> Option:
    """A drafter's best form: its best chain, or its best tree when it has one and it is predicted faster.
    tree: None chooses by prediction, True forces the tree (when measured), False the chain."""
    gamma, s = best_gamma(profile, verify, gamma_max)
    chain = Option(profile.name, profile.label, gamma, s, limit_of(profile, gamma, verify, device))
    nodes, t = best_nodes(profile, verify)
    if not nodes or tree is False:
        return chain
    if tree or t > s + 1e-9:
        limit = limit_of(profile, TREE_DEPTH, verify, device)
        return Option(profile.name, profile.label, TREE_DEPTH, t, limit, nodes)
    why = Limit("tree", tree_accepted(profile, nodes), verify.v_tree(nodes + 1), device, nodes)
    return Option(chain.name, chain.label, chain.gamma, chain.predicted, chain.limit, 0, why)


def choose(
    profiles: Sequence[DrafterProfile], verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX,
    margin: float = MARGIN, device: str = "CPU", tree: bool | None = None,
) -> Choice:
    """The drafter and its form (γ chain or sized tree) with the best predicted speedup, or target-only
    when none beats it by `margin`. tree: None (auto) lets the prediction choose chain or tree."""
    options = [option_for(p, verify, gamma_max, device, tree) for p in profiles]
    options.sort(key=lambda o: -o.predicted)
    if options and options[0].predicted >= margin:
        best = options[0]
        return Choice(best.name, best.gamma, best.predicted, options=tuple(options), nodes=best.nodes, device=device)
    return Choice(None, 1, 1.0, options=tuple(options), device=device)


