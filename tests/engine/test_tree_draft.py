"""Tree drafting: the lookup trie, EAGLE-2's expansion over a real draft model, unions, and greedy
tree decoding token for token equal to target-only greedy."""

from __future__ import annotations

import pytest
import torch

from app.engine import DecodeParams, FinishedEvent, decode, generate
from app.engine.tree import ROOT, make_tree
from app.engine.tree_draft import expand, lookup_tree, union
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter, UnionTreeDrafter, draft_logprobs


def test_lookup_trie_merges_every_match():
    """Suffix (1, 2) occurs three times before: continuations 3 5 1, 4 1 2 and 3 1 2 share their first 3."""
    ids = [1, 2, 3, 1, 2, 4, 1, 2, 3, 5, 1, 2]
    tree = lookup_tree(ids, budget=16, depth=3)
    paths = {tuple(tree.path_tokens(leaf)) for leaf in tree.leaves()}
    assert paths == {(3, 5, 1), (3, 1, 2), (4, 1, 2)}
    assert tree.tokens[0] == 3 and tree.scores[0] == 4.0  # two matches of length 2 pass through it
    small = lookup_tree(ids, budget=3, depth=3)
    assert len(small) == 3 and all(p == ROOT or p < i for i, p in enumerate(small.parents))
    assert lookup_tree([4, 5, 6], budget=8, depth=3) == make_tree((), ())
    assert lookup_tree(ids, budget=16, depth=3) == tree  # deterministic


def test_longer_matches_rank_first():
    ids = [7, 1, 2, 9, 8, 2, 5, 1, 2]  # "1 2" -> 9 (length 2), "2" -> 5 (length 1)
    tree = lookup_tree(ids, budget=1, depth=2)
    assert tree.tokens == (9,)


def test_union_merges_equal_prefixes():
    a = make_tree([1, 2, 3], [ROOT, 0, ROOT], [0.0, -1.0, -2.0])
    b = make_tree([1, 4, 3, 5], [ROOT, 0, ROOT, 2], [9.0, 9.0, 9.0, 9.0])
    u = union(a, b)
    assert u.tokens == (1, 2, 3, 4, 5) and u.parents == (ROOT, 0, ROOT, 0, 2)
    assert u.scores == (0.0, -1.0, -2.0, 9.0, 9.0)


@torch.inference_mode()
def test_model_tree_scores_are_the_drafts_own(vocab34_pair):
    """Each node's score is the cumulative log q of its path by cache-free forwards of the draft: the
    draft's tree passes see exactly their own ancestors. The draft cache keeps the context only."""
    _, draft = vocab34_pair
    params = DecodeParams(temperature=0.3)  # sharp enough that the best 10 nodes reach depth 2
    prompt = [0, 5, 9, 3, 17, 3, 22]
    drafter = ModelTreeDrafter(draft, budget=10, depth=4, top_k=3)
    drafter.begin()
    tree = drafter.draft_tree(torch.tensor(prompt), prompt, 4, params, 34)
    assert len(tree) == 10 and max(tree.depth) >= 2
    assert drafter.cache.get_seq_length() == len(prompt)
    for node in range(len(tree)):
        score, prefix = 0.0, list(prompt)
        for token in tree.path_tokens(node):
            logq = draft_logprobs(draft(input_ids=torch.tensor([prefix])).logits[0, -1], params, 34)
            score += float(logq[token])
            prefix.append(token)
        assert tree.scores[node] == pytest.approx(score, abs=1e-4)
    # the root's children are the draft's top-3 after the context, best first
    top = draft_logprobs(draft(input_ids=torch.tensor([prompt])).logits[0, -1], params, 34).topk(3).indices
    assert [tree.tokens[c] for c in tree.children(ROOT)] == top.tolist()[: len(tree.children(ROOT))]


def test_expansion_keeps_the_best_ancestor_closed_nodes():
    """A synthetic draft whose log q after any node prefers token (depth + parent) % V."""
    vocab = 6

    def logq_after(tokens):
        logits = torch.full((vocab,), -3.0)
        logits[(sum(tokens) + len(tokens)) % vocab] = 0.0
        logits[(sum(tokens) + 2) % vocab] = -1.0
        return logits.log_softmax(-1)

    fed: list[list[int]] = []

    def step_fn(tokens, parents):
        rows = []
        for token, parent in zip(tokens, parents, strict=True):
            fed.append((fed[parent] if parent != ROOT else []) + [token])
            rows.append(logq_after(fed[-1]))
        return torch.stack(rows)

    tree = expand(step_fn, logq_after([]), budget=7, depth=4, top_k=2)
    assert len(tree) == 7
    for node in range(len(tree)):
        path = tree.path_tokens(node)
        expected = sum(float(logq_after(path[:i])[path[i]]) for i in range(len(path)))
        assert tree.scores[node] == pytest.approx(expected)
        if tree.parents[node] != ROOT:
            assert tree.scores[tree.parents[node]] >= tree.scores[node]


GREEDY = DecodeParams(gamma=4, temperature=0, max_new_tokens=40)


def target_greedy(model, prompt, params, vocab=None) -> list[int]:
    events = decode(model, torch.tensor(prompt), None, params, vocab_size=vocab)
    return list(next(e for e in events if isinstance(e, FinishedEvent)).token_ids)


@pytest.mark.parametrize("kind", ["lookup", "model", "union"])
def test_greedy_tree_decoding_equals_target_greedy(vocab34_pair, kind):
    target, draft = vocab34_pair
    prompt = [0, 5, 9, 3, 17, 5, 9, 3, 22, 5, 9]
    model = ModelTreeDrafter(draft, budget=8, depth=4, top_k=3)
    drafter = {"lookup": LookupTreeDrafter(), "model": model, "union": UnionTreeDrafter(LookupTreeDrafter(), model)}
    result = generate(target, torch.tensor(prompt), drafter[kind], GREEDY, vocab_size=34)
    assert result.token_ids == target_greedy(target, prompt, GREEDY)
    assert sum(len(r.tree_path) for r in result.rounds) > 0  # some drafts were accepted, so compaction ran


def test_greedy_tree_decoding_on_the_embedded_model(default_target):
    prompt = default_target.encode_chat([{"role": "user", "content": "Repeat after me: red green blue, red green blue."}])
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=24)
    result = generate(default_target.model, prompt, LookupTreeDrafter(budget=8, depth=4), params)
    assert result.token_ids == target_greedy(default_target.model, prompt.tolist(), params)
    assert sum(len(r.tree_path) for r in result.rounds) > 0


def test_pruned_expansion_keeps_the_same_tree():
    """expand skips children, frontier nodes and levels that cannot enter the budget: the tree of budget n
    is still the first n nodes of the unbounded expansion (what tree_probe's per-budget sums rely on)."""
    vocab = 9

    def logq_after(tokens):
        gen = torch.Generator().manual_seed(hash(tuple(tokens)) % 2**31)
        return (torch.randn(vocab, generator=gen) * 2).log_softmax(-1)

    def run(budget):
        fed: list[list[int]] = []

        def step_fn(tokens, parents):
            rows = []
            for token, parent in zip(tokens, parents, strict=True):
                fed.append((fed[parent] if parent != ROOT else []) + [token])
                rows.append(logq_after(fed[-1]))
            return torch.stack(rows)

        return expand(step_fn, logq_after([]), budget=budget, depth=5, top_k=4), len(fed)

    full, fed_full = run(10_000)
    assert len(full) == 4 + 4 * 4 * 4  # depth 5: 4 root children, then 4 x 4 candidates per level
    for n in range(1, 25):
        tree, fed = run(n)
        assert tree.tokens == full.tokens[:n] and tree.parents == full.parents[:n] and tree.scores == full.scores[:n]
        assert fed <= fed_full
    assert run(2)[1] < fed_full  # the small budget fed fewer nodes
