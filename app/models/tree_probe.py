"""Measuring a drafter's token tree at load: E[accepted] per node budget and one tree draft's cost.

One greedy run of the real tree rounds (TREE_NODES_MAX nodes, TREE_DEPTH levels) after the probe
context. A tree drafter ranks its nodes best first and a budget keeps a prefix of that ranking, so
the first n nodes of each probed tree are the tree of budget n. Each node's target mass is known
exactly from the round's one pass, p(path to v) = product of p at each ancestor for its token, so
E[accepted](n) = sum of p(path) over the first n nodes (Section 1 of the tree digest), averaged over
the rounds that proposed a tree. No Qt here.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from app.engine import DecodeParams, Drafter, RoundEvent, generate
from app.engine.policy import TREE_DEPTH, TREE_NODES_MAX, DrafterProfile, VerifyCosts

from .drafts import tree_form
from .loading import LoadedModel

PROBE_TOKENS = 32


def verify_tokens(gamma_max: int) -> int:
    """The longest verify pass calibration times: a γ chain's γ + 1 tokens, or a tree's nodes + 1."""
    return max(gamma_max, TREE_NODES_MAX) + 1


def path_mass(r: RoundEvent) -> list[float]:
    """p(path to v) for every node of a tree round, in node order (parents come first)."""
    mass: list[float] = []
    for parent, p in zip(r.tree_parents, r.tree_p, strict=True):
        mass.append(p * (1.0 if parent < 0 else mass[parent]))
    return mass


def accepted_by_budget(rounds: list[RoundEvent], nodes_max: int = TREE_NODES_MAX) -> tuple[float, ...]:
    """E[accepted](n) for n = 1..nodes_max over the rounds that proposed a tree; () when none did."""
    trees = [path_mass(r) for r in rounds if r.tree_tokens]
    if not trees:
        return ()
    return tuple(sum(math.fsum(m[:n]) for m in trees) / len(trees) for n in range(1, nodes_max + 1))


def with_tree(target: LoadedModel, drafter: Drafter, ids: torch.Tensor, profile: DrafterProfile,
              verify: VerifyCosts) -> DrafterProfile:
    """The profile with its tree measured (tree_accepted, tree_c), unchanged for a drafter with no tree."""
    tree = tree_form(drafter, TREE_NODES_MAX)
    if tree is None:
        return profile
    params = DecodeParams(gamma=TREE_DEPTH, temperature=0.0, max_new_tokens=PROBE_TOKENS, seed=0)
    rounds = generate(target.model, ids, tree, params, vocab_size=target.vocab_size).rounds[1:]  # no prefill round
    drafted = [r for r in rounds if r.tree_tokens]
    if not drafted:
        return profile
    c = min(r.draft_time for r in drafted) / verify.step  # uncontended, as the chain's c
    return replace(profile, tree_accepted=accepted_by_budget(drafted), tree_c=c)
