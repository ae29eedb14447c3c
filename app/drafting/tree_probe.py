"""Measuring a drafter's token tree at load: E[accepted] per node budget and one tree draft's cost.

One greedy run of the real tree rounds (TREE_NODES_MAX nodes, TREE_DEPTH levels) after the probe
context. A tree drafter ranks its nodes best first and a budget keeps a prefix of that ranking, so
the first n nodes of each probed tree are the tree of budget n. Each node's target mass is known
exactly from the round's one pass, p(path to v) = product of p at each ancestor for its token, so
E[accepted](n) = sum of p(path) over the first n nodes (Section 1 of the tree digest), averaged over
the rounds that proposed a tree. A tree pass's own cost v_tree(n) is timed here too (with_tree_costs):
a 4D-masked pass does not cost what a chain pass of the same length does. No Qt here.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from app.drafting.timing import _interpolate
from app.engine import DecodeParams, Drafter, RoundEvent, generate
from app.engine.kv import forward, head, length, new_cache, rollback
from app.engine.policy import TREE_DEPTH, TREE_NODES_MAX, DrafterProfile, VerifyCosts
from app.engine.tree import make_tree
from app.engine.tree_verify import tree_forward, tree_support
from app.machine.clock import time_interleaved
from app.models.loading import LoadedModel

PROBE_TOKENS = 32


def verify_tokens(gamma_max: int) -> int:
    """The longest verify pass calibration times: a γ chain's γ + 1 tokens, or a tree's nodes + 1."""
    return max(gamma_max, TREE_NODES_MAX) + 1


def probe_tree(nodes: int, width: int = 10):
    """A tree of `nodes` nodes shaped like an expansion's: up to `width` children of the root, then each
    further node under the best (first) node of the level above."""
    parents = [-1 if i < width else (i - width) // width * width for i in range(nodes)]
    return make_tree([0] * nodes, parents)


@torch.inference_mode()
def with_tree_costs(model, ids: torch.Tensor, verify: VerifyCosts, sizes=(2, 9, 17, 33),
                    reps: int = 2) -> VerifyCosts:
    """verify with `tree_seconds`: a tree pass over n tokens (the root, n - 1 nodes, 4D mask, trunk then the
    head on every row, as TreeRounds runs it) timed at `sizes`, interpolated between them as v(n) is; the
    minimum over reps, non-decreasing in n. Unchanged for a target that cannot take a tree."""
    if tree_support(model) is not None:
        return verify
    device = next(model.parameters()).device
    ids = ids.to(device)
    cache = new_cache(model)
    forward(model, cache, ids[:-1], keep=1)
    held = length(model, cache)
    n_max = len(verify.seconds)
    sizes = sorted({n for n in sizes if n < n_max} | {n_max})
    trees = {n: probe_tree(n - 1) for n in sizes}
    runs = {n: (lambda n=n: head(model, tree_forward(model, cache, ids[-1:], trees[n], len(ids), trunk=True)))
            for n in sizes}
    best = time_interleaved(runs, reps=reps, device=device, after=lambda _n: rollback(cache, held)).best
    points, floor = [(1, verify.seconds[0])], verify.seconds[0]
    for n in sizes:
        floor = max(floor, best[n])
        points.append((n, floor))
    seconds = tuple(_interpolate(points, n) for n in range(1, n_max + 1))
    return replace(verify, tree_seconds=seconds)


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
    tree = drafter.tree_form(TREE_NODES_MAX, TREE_DEPTH)
    if tree is None:
        return profile
    params = DecodeParams(gamma=TREE_DEPTH, temperature=0.0, max_new_tokens=PROBE_TOKENS, seed=0)
    rounds = generate(target.model, ids, tree, params, vocab_size=target.vocab_size).rounds[1:]  # no prefill round
    drafted = [r for r in rounds if r.tree_tokens]
    if not drafted:
        return profile
    c = min(r.draft_time for r in drafted) / verify.step  # uncontended, as the chain's c
    return replace(profile, tree_accepted=accepted_by_budget(drafted), tree_c=c)
