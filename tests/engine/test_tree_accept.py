"""The one-hot tree rule, checked without noise: its exact emitted law (every accept/reject branch
enumerated) equals the target's, and each known trap, planted, is caught by the same check."""

from __future__ import annotations

import pytest
import torch

from app.engine import tree_accept
from app.engine.acceptance import decide
from app.engine.tree import ROOT, chain, make_tree, tree_mask, tree_positions
from app.engine.tree_accept import accept_tree
from engine.tree_helpers import law_distance, rule_law, target_law

EXACT = 1e-9


def probs(*rows) -> torch.Tensor:
    p = torch.tensor(rows, dtype=torch.float64)
    return (p / p.sum(-1, keepdim=True)).float()


def random_p(rows: int, vocab: int, seed: int, zeros=()) -> torch.Tensor:
    """Random rows of p; `zeros` lists (row, token) entries masked out, as top-k or top-p would."""
    logits = torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed)) * 2
    for row, token in zeros:
        logits[row, token] = float("-inf")
    return logits.softmax(-1)


# Trees over a vocabulary of 5 with p per node; each exercises a different branch of the rule.
TREES = {
    "siblings": (make_tree([0, 1, 2], [ROOT, ROOT, ROOT]), ()),
    "chain": (chain([3, 1, 4]), ()),
    # depth 3, branching at two levels, a repeated sibling token (4 under node 0), a child p gives
    # no mass (token 1 after node 0) and masked tokens outside the tree
    "branching": (make_tree([0, 2, 4, 1, 4, 3, 0], [ROOT, ROOT, 0, 0, 0, 2, 1]), ((0, 3), (1, 1), (2, 2), (3, 1))),
    # the root's children cover p's whole support: a rejection of all of them is impossible
    "covering": (make_tree([0, 1, 2, 3], [ROOT, ROOT, ROOT, ROOT]), ((0, 4),)),
}


def _p_for(name: str) -> torch.Tensor:
    tree, zeros = TREES[name]
    return random_p(len(tree) + 1, 5, seed=len(name), zeros=zeros)


@pytest.mark.parametrize("name", list(TREES))
def test_enumerated_law_equals_target(name):
    tree, _ = TREES[name]
    p = _p_for(name)
    law = rule_law(p, tree)
    assert abs(sum(law.values()) - 1) < EXACT
    assert law_distance(law, target_law(p, tree)) < EXACT


def test_worked_example_three_siblings():
    """p = (.5, .3, .2) with children a, b: P(a) = .5, P(b) = .3, c is then the only corrected token."""
    tree = make_tree([0, 1], [ROOT, ROOT])
    p = probs([0.5, 0.3, 0.2], [1, 1, 1], [1, 1, 1])
    first = _first_token_law(rule_law(p, tree))
    root = p[0].double()
    assert first == pytest.approx((root / root.sum()).tolist(), abs=EXACT)  # (.5, .3, .2) as float32 holds it


def test_no_renormalisation_is_caught(monkeypatch):
    """Planted trap 2: testing b against p(b) instead of p'(b) = p(b) / (1 - p(a)) gives P(b) = .15."""
    tree = make_tree([0, 1], [ROOT, ROOT])
    p = probs([0.5, 0.3, 0.2], [1, 1, 1], [1, 1, 1])
    monkeypatch.setattr(tree_accept, "sibling_mass", lambda total, earlier, p_eff: total)
    law = rule_law(p, tree)
    assert _first_token_law(law)[1] == pytest.approx(0.15, abs=1e-6)
    assert law_distance(law, target_law(p, tree)) > 0.1
    for name in TREES:  # and the general check sees it wherever siblings exist
        tree_n, _ = TREES[name]
        if name != "chain":
            assert law_distance(rule_law(_p_for(name), tree_n), target_law(_p_for(name), tree_n)) > 1e-3


def test_corrected_from_full_p_is_caught(monkeypatch):
    """Planted trap 6: after rejected siblings the corrected token drawn from the full p, not p'."""
    monkeypatch.setattr(tree_accept, "stop_distribution", lambda p_row, kid_tokens, kid: p_row)
    for name in ("siblings", "branching"):
        tree, _ = TREES[name]
        assert law_distance(rule_law(_p_for(name), tree), target_law(_p_for(name), tree)) > 1e-3


def test_q_rule_on_deterministic_children_is_caught():
    """Trap 1: the chain's q-based rule (acceptance.decide) on a deterministic child, argmax q = a, with
    p = (.5, .5), q = (.6, .4): a passes with .5/.6 and the residual max(p - q, 0) is all b, so
    P(a) = .833. The one-hot rule on the same child gives .5."""
    p = probs([0.5, 0.5], [0.5, 0.5])
    q = torch.tensor([[0.6, 0.4]])
    x = torch.tensor([0])
    ratio = residual = None
    for seed in range(100):  # read the rule's own acceptance and residual off a rejected run
        n, _, _, _, ratio_t, dist, _ = decide(p, q, x, torch.Generator().manual_seed(seed))
        if int(n) == 0:
            ratio, residual = float(ratio_t[0]), (dist / dist.sum()).tolist()
            break
    q_rule_a = ratio + (1 - ratio) * residual[0]
    assert q_rule_a == pytest.approx(5 / 6, abs=1e-6)
    one_hot_a = _first_token_law(rule_law(p, chain([0])))[0]
    assert one_hot_a == pytest.approx(0.5, abs=EXACT)
    assert abs(q_rule_a - one_hot_a) > 0.3


def test_greedy_follows_the_argmax_path():
    """One-hot p (temperature 0): accepted while the argmax is a child, then the argmax itself."""
    tree, _ = TREES["branching"]
    for seed in range(20):
        p = torch.nn.functional.one_hot(random_p(len(tree) + 1, 5, seed).argmax(-1), 5).float()
        node, expected = ROOT, []
        while True:
            best = int(p[node + 1].argmax())
            expected.append(best)
            child = next((c for c in tree.children(node) if tree.tokens[c] == best), None)
            if child is None:
                break
            node = child
        v = accept_tree(p, tree, torch.Generator().manual_seed(seed), greedy=True)
        assert [tree.tokens[i] for i in v.path] + [v.next_token] == expected


def test_verdict_records_every_test():
    """u, p'(x) and the residual per tested node agree with the path, and with p."""
    tree, _ = TREES["branching"]
    p = _p_for("branching")
    for seed in range(30):
        v = accept_tree(p, tree, torch.Generator().manual_seed(seed))
        assert v.p_x == pytest.approx([float(p[par + 1, t]) for t, par in zip(tree.tokens, tree.parents, strict=True)])
        for i, u, a in zip(v.tested, v.u, v.accept_prob, strict=True):
            assert (i in v.path) == (u < a)
        for before, after in zip(v.tested, v.tested[1:], strict=False):
            if before not in v.path and tree.parents[before] == tree.parents[after]:
                # the next sibling is tested against what the rejection left
                k, k2 = v.tested.index(before), v.tested.index(after)
                mass = v.residual[k]
                eff = 0.0 if tree.tokens[after] in _earlier_tokens(tree, after) else v.p_x[after]
                assert v.accept_prob[k2] == pytest.approx(min(1, eff / mass), rel=1e-6)
        assert len(v.top_p) == len(v.path) + 1
        assert v.corrected == (v.stop in tree.parents)
        assert v.next_token not in {tree.tokens[c] for c in tree.children(v.stop)} or not v.corrected


def test_tree_shape_helpers():
    tree = make_tree([5, 2, 6, 7], [ROOT, ROOT, 0, 2])
    assert tree.depth == (0, 0, 1, 2) and tree.path(3) == [0, 2, 3] and tree.leaves() == [1, 3]
    visible = tree_mask(tree, past_len=3, fresh=1)[0, 0] == 0  # [1 + 4, 3 + 4]
    assert visible.tolist() == [
        [True, True, True, False, False, False, False],  # the root (position 2), causal
        [True, True, True, True, False, False, False],
        [True, True, True, False, True, False, False],  # a sibling never sees node 0
        [True, True, True, True, False, True, False],
        [True, True, True, True, False, True, True],
    ]
    assert tree_positions(tree, past_len=3, fresh=1).tolist() == [2, 3, 3, 4, 5]
    with pytest.raises(ValueError):
        make_tree([1, 2], [1, ROOT])  # a parent after its child


def _first_token_law(law) -> list[float]:
    out = [0.0] * (1 + max(s[0] for s in law))
    for s, prob in law.items():
        out[s[0]] += prob
    return out


def _earlier_tokens(tree, i) -> set[int]:
    return {tree.tokens[j] for j in range(i) if tree.parents[j] == tree.parents[i]}


def test_children_holding_all_of_p_leave_a_defined_draw():
    """Rejecting children that hold all of p has probability 0, but rounding can get there: p is used."""
    p_row = torch.tensor([0.7, 0.3, 0.0])
    kids = torch.tensor([0, 1])
    assert tree_accept.stop_distribution(p_row, kids, torch.tensor([True, True])).tolist() == p_row.tolist()
    assert tree_accept.stop_distribution(p_row, kids, torch.tensor([True, False])).tolist() == [0.0, p_row[1].item(), 0.0]
