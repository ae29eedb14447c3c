"""Exact laws of a tree round, by enumeration: what the rule emits, and what the target says it should.

`rule_law` integrates the engine's own `tree_rule` over its coins without sampling: each node's coin
either passes (u below its threshold) or fails, 2^n outcomes with their exact probabilities, each run
through `tree_rule` with a coin just inside that outcome's region and followed by the exact final distribution.
`target_law` is the law the rule must reproduce: a target sample stopped at its first token outside the tree.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import torch

from app.engine import tree_accept
from app.engine.tree import ROOT, Tree

Law = dict[tuple[int, ...], float]
DELTA = 1e-6  # how close to its threshold each enumerated coin is put


def rule_law(p: torch.Tensor, tree: Tree) -> Law:
    """p [n + 1, V] -> P(emitted sequence) under tree_accept.tree_rule (looked up at call time: patchable)."""
    n = len(tree)
    lay = tree_accept.layout(tree)
    # The rule's own thresholds; each coin is put just inside its pass or fail region, so a comparison
    # that disagrees with the reported p'(x) by more than DELTA changes the law.
    thr = tree_accept.tree_rule(p, lay, torch.zeros(n, dtype=torch.float64)).accept_prob.tolist()
    law: Law = defaultdict(float)
    for passes in itertools.product((True, False), repeat=n):
        prob = math.prod(t if ok else 1 - t for t, ok in zip(thr, passes, strict=True))
        if prob == 0:
            continue
        u = torch.tensor([t * (1 - DELTA) if ok else t + DELTA * (1 - t) for t, ok in zip(thr, passes, strict=True)],
                         dtype=torch.float64)
        ok, stop_row, dist = tree_accept.tree_rule(p, lay, u)[:3]
        path, _ = tree_accept.walk(tree, ok.tolist())
        assert (path[-1] + 1 if path else 0) == int(stop_row)
        emitted = tuple(tree.tokens[i] for i in path)
        dist = dist.double() / dist.double().sum()
        for y, p_y in enumerate(dist.tolist()):
            if p_y > 0:
                law[emitted + (y,)] += prob * p_y
    return dict(law)


def target_law(p: torch.Tensor, tree: Tree) -> Law:
    """P_target(s) for every s = (path to a reachable node or the root) + y, y not one of its children."""
    p = p.double() / p.double().sum(-1, keepdim=True)
    law: Law = {}
    for node in [ROOT, *range(len(tree))]:
        path = tree.path(node)
        if any(_shadowed(tree, i) for i in path):
            continue  # a repeated sibling is never reached: its p' is 0 once the first copy is rejected
        prefix = math.prod(p[tree.parents[i] + 1, tree.tokens[i]].item() for i in path)
        children = {tree.tokens[c] for c in tree.children(node)}
        for y, p_y in enumerate(p[node + 1].tolist()):
            if y not in children and prefix * p_y > 0:
                law[tuple(tree.tokens[i] for i in path) + (y,)] = prefix * p_y
    return law


def law_distance(a: Law, b: Law) -> float:
    """The largest absolute difference over all sequences."""
    return max(abs(a.get(s, 0.0) - b.get(s, 0.0)) for s in set(a) | set(b))


def _shadowed(tree: Tree, i: int) -> bool:
    parent = tree.parents[i]
    return any(tree.parents[j] == parent and tree.tokens[j] == tree.tokens[i] for j in range(i))
