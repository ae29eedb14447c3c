"""Tree rounds as events: the accepted path is the round's drafts, every test is recorded, and each emitted
draft names its node; chain rounds carry no tree fields."""

from __future__ import annotations

import torch

from app.engine import DecodeParams, ModelDrafter, Status, generate
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter, UnionTreeDrafter

PROMPT = [0, 5, 9, 3, 17, 5, 9, 3, 22, 5, 9]


def test_tree_round_events_describe_the_tree(vocab34_pair):
    target, draft = vocab34_pair
    drafter = UnionTreeDrafter(LookupTreeDrafter(budget=4), ModelTreeDrafter(draft, budget=6, depth=3, top_k=3))
    result = generate(target, torch.tensor(PROMPT), drafter, DecodeParams(gamma=3, temperature=1.0, max_new_tokens=60,
                                                                            seed=3))
    by_round = {}
    for t in result.tokens + result.rejected:
        by_round.setdefault(t.round, []).append(t)
    corrected = bonus = 0
    for r in result.rounds:
        n = len(r.tree_tokens)
        assert n == r.tree_nodes and len(r.tree_parents) == len(r.tree_scores) == len(r.tree_p) == n
        assert len(r.tree_u) == len(r.tree_accept_prob) == len(r.tree_residual) == len(r.tree_tested)
        path_tokens = tuple(r.tree_tokens[i] for i in r.tree_path)
        assert r.drafts[: r.accepted] == path_tokens and r.accepted == len(r.tree_path)
        for parent, child in zip((-1, *r.tree_path), r.tree_path, strict=False):  # the path is a chain of the tree
            assert r.tree_parents[child] == parent
        tests = dict(zip(r.tree_tested, zip(r.tree_u, r.tree_accept_prob, strict=True), strict=True))
        for i in r.tree_path:
            assert tests[i][0] < tests[i][1]  # accepted: u < p'(x)
        assert all(r.decisions[: r.accepted]) and (r.accepted == r.drafted or not r.decisions[r.accepted])
        stop = r.tree_path[-1] if r.tree_path else -1
        children = [i for i, p in enumerate(r.tree_parents) if p == stop]
        for c in children:  # every child of the stop node was tested and rejected
            assert c in tests and tests[c][0] >= tests[c][1]
        corrected += bool(children)
        bonus += r.bonus
        assert r.bonus == (not children and n > 0) or r.emitted <= r.accepted
        for t in by_round.get(r.round, []):
            if t.status in (Status.ACCEPTED, Status.REJECTED):
                assert t.node is not None and r.tree_tokens[t.node] == t.token_id
                assert (t.status is Status.ACCEPTED) == (t.node in r.tree_path)
            else:
                assert t.node is None
    assert corrected and bonus


def test_chain_rounds_carry_no_tree(vocab34_pair):
    target, draft = vocab34_pair
    result = generate(target, torch.tensor(PROMPT), ModelDrafter(draft), DecodeParams(gamma=3, max_new_tokens=20, seed=0))
    assert all(r.tree_nodes == 0 and not r.tree_path for r in result.rounds)
    assert all(t.node is None for t in result.tokens + result.rejected)
