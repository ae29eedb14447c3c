"""Tree rounds on static caches (runner.Runner with proposals.TREE and static.StaticRoundCache): target-only greedy token for token, the dynamic
tree rounds' tokens and events for the same seed at T = 1, one host sync a round for a lookup trie, and a
padded pass whose compacted buffers continue like a fresh prefill. Each check has a planted twin that fails.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tiny_models import tiny_model

from app.engine import DecodeParams, generate, tree_accept
from app.engine import static as static_module
from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_tree import FeatureTreeDrafter
from app.engine.proposals import TreeRule
from app.engine.runner import Runner, begin_runner
from app.engine.static import StaticDecoder, StaticRoundCache
from app.engine.static_kv import StaticModel
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter, UnionTreeDrafter
from engine.feature_helpers import random_feature_draft
from engine.helpers import PROMPTS, chi_square_p, exact_joint, reference, sampled_joint

KINDS = ["lookup", "model", "union", "feature", "feature+lookup"]
REPETITIVE = [0, 5, 9, 3, 17, 5, 9, 3, 22, 5, 9]  # the lookup trie branches here
SAMPLED = DecodeParams(gamma=4, temperature=1.0, top_k=12, top_p=0.9, max_new_tokens=40)


def tree_drafter(kind: str, target, draft, budget: int = 8):
    lookup = LookupTreeDrafter(budget=budget, depth=4)
    if kind == "lookup":
        return lookup
    if kind.startswith("feature"):
        vocab = target.config.vocab_size
        feature = FeatureTreeDrafter(FeatureDrafter(random_feature_draft(target, vocab_k=vocab - 2, noise=0.1), target),
                                     budget=budget, depth=4, top_k=3)
        return feature if kind == "feature" else UnionTreeDrafter(feature, LookupTreeDrafter(budget=4, depth=4))
    model = ModelTreeDrafter(draft, budget=budget, depth=4, top_k=3)
    return model if kind == "model" else UnionTreeDrafter(LookupTreeDrafter(budget=4, depth=4), model)


def run(target, prompt, drafter, params, static=None):
    return generate(target, torch.tensor(prompt), drafter, params, stop_token_ids=(1,), static=static)


def signature(result) -> tuple:
    """Tokens, statuses and each round's tree and tests as the events report them."""
    rounds = [(r.drafted, r.accepted, r.emitted, r.drafts, r.next_token, r.tree_tokens, r.tree_parents,
               r.tree_tested, r.tree_u, r.tree_path) for r in result.rounds]
    return result.token_ids, result.statuses, rounds


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("prompt", [PROMPTS[1], REPETITIVE], ids=["plain", "repetitive"])
def test_greedy_static_tree_equals_target_greedy(vocab34_pair, kind, prompt):
    target, draft = vocab34_pair
    static = StaticDecoder(target, min_capacity=64)
    result = run(target, prompt, tree_drafter(kind, target, draft), DecodeParams(gamma=4, temperature=0,
                                                                                 max_new_tokens=40), static)
    assert result.token_ids == reference(target, torch.tensor(prompt), 40, stop=1)
    assert sum(len(r.tree_path) for r in result.rounds) > 0  # drafts were accepted: compaction ran


def test_static_tree_without_compaction_is_caught(vocab34_pair, monkeypatch):
    """Planted: the accepted nodes stay in tree order in the buffers (no index copy)."""
    target, draft = vocab34_pair
    monkeypatch.setattr(StaticModel, "compact", lambda self, past_len, path: None)
    static = StaticDecoder(target, min_capacity=64)
    greedy = DecodeParams(gamma=4, temperature=0, max_new_tokens=40)
    differs = [run(target, prompt, tree_drafter(kind, target, draft), greedy, static).token_ids
               != reference(target, torch.tensor(prompt), 40, stop=1)
               for kind in ("model", "feature") for prompt in (PROMPTS[1], REPETITIVE)]
    assert any(differs), differs


@pytest.mark.parametrize("kind", KINDS)
def test_static_tree_equals_dynamic_tree_for_a_seed(vocab34_pair, kind):
    """T = 1 with top-k and top-p: the same tokens, trees, coins and paths on both caches, seed for seed."""
    target, draft = vocab34_pair
    static = StaticDecoder(target, min_capacity=64)
    paths = 0
    for seed in range(4):
        params = replace(SAMPLED, seed=seed)
        expected = run(target, REPETITIVE, tree_drafter(kind, target, draft), params)
        got = run(target, REPETITIVE, tree_drafter(kind, target, draft), params, static)
        assert signature(got) == signature(expected), seed
        paths += sum(bool(r.tree_path) and r.tree_path != tuple(range(len(r.tree_path))) for r in got.rounds)
    assert paths > 0  # some accepted paths left node order, so the compaction's gather mattered


def test_padding_seen_by_the_tree_is_caught(vocab34_pair, monkeypatch):
    """Planted: every real row also sees the padding rows (stale keys of earlier rounds); the seeded
    equality with the dynamic run must break."""
    target, draft = vocab34_pair
    honest = static_module.static_tree_inputs

    def leaky(tree, past_len, size, device=None):
        pos, block = honest(tree, past_len, size, device)
        block[:, len(tree) + 1 :] = True
        return pos, block

    monkeypatch.setattr(static_module, "static_tree_inputs", leaky)
    static = StaticDecoder(target, min_capacity=64)
    differs = [run(target, REPETITIVE, tree_drafter("lookup", target, draft, budget=5), replace(SAMPLED, seed=s), static).token_ids
               != run(target, REPETITIVE, tree_drafter("lookup", target, draft, budget=5), replace(SAMPLED, seed=s)).token_ids
               for s in range(4)]
    assert any(differs)


VOCAB8_PROMPT = [3, 5, 2, 3, 6, 1, 3]
VOCAB8_PARAMS = DecodeParams(gamma=3, temperature=1.0, top_k=6, top_p=0.9)
JOINT_SAMPLES = 600


@pytest.mark.parametrize("kind", ["union", "feature+lookup"])
def test_static_tree_joint_is_the_dynamic_one(vocab8_pair, kind):
    """The first 3 tokens' counts over seeded runs equal the dynamic tree rounds' cell for cell (whose law
    test_tree_joint checks), and their chi-square against the exact joint passes too."""
    target, draft = vocab8_pair
    static = StaticDecoder(target, min_capacity=16)

    def drafter():
        if kind == "union":
            return UnionTreeDrafter(LookupTreeDrafter(budget=4, depth=3), ModelTreeDrafter(draft, budget=6, depth=3,
                                                                                           top_k=3))
        feature = FeatureTreeDrafter(FeatureDrafter(random_feature_draft(target, vocab_k=6), target), budget=6,
                                     depth=3, top_k=3)
        return UnionTreeDrafter(feature, LookupTreeDrafter(budget=4, depth=3))

    counts = sampled_joint(target, drafter(), VOCAB8_PROMPT, VOCAB8_PARAMS, 8, JOINT_SAMPLES, static=static)
    dynamic = sampled_joint(target, drafter(), VOCAB8_PROMPT, VOCAB8_PARAMS, 8, JOINT_SAMPLES)
    assert (counts == dynamic).all()
    exact = exact_joint(target, VOCAB8_PROMPT, VOCAB8_PARAMS, 8)
    found = [chi_square_p(counts.reshape(8**k, -1).sum(1), exact.reshape(8**k, -1).sum(1)) for k in (1, 2, 3)]
    print(f"static {kind} tree: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) > 1e-3 / 3


def test_planted_rule_bug_is_caught_on_static_caches(vocab8_pair, monkeypatch):
    """Planted: no renormalisation between siblings, through the static runner: the chi-square must fail."""
    target, draft = vocab8_pair
    monkeypatch.setattr(tree_accept, "sibling_mass", lambda total, earlier, p_eff: total)
    drafter = UnionTreeDrafter(LookupTreeDrafter(budget=4, depth=3), ModelTreeDrafter(draft, budget=6, depth=3, top_k=3))
    counts = sampled_joint(target, drafter, VOCAB8_PROMPT, VOCAB8_PARAMS, 8, JOINT_SAMPLES,
                           static=StaticDecoder(target, min_capacity=16))
    exact = exact_joint(target, VOCAB8_PROMPT, VOCAB8_PARAMS, 8)
    found = [chi_square_p(counts.reshape(8**k, -1).sum(1), exact.reshape(8**k, -1).sum(1)) for k in (1, 2, 3)]
    print(f"no-renormalisation on static caches: chi-square p-values {found}")
    assert min(found) < 1e-6


def test_one_host_sync_per_lookup_tree_round(vocab34_pair, monkeypatch):
    """A lookup trie is host data: each static tree round reads the device exactly once (the packed verdict)."""
    target, _ = vocab34_pair
    reads = []
    honest_step = Runner.step

    def counted_step(self, *args):
        reads.append(0)
        return honest_step(self, *args)

    for name in ("tolist", "item", "__int__", "__float__", "__bool__", "__index__", "numpy", "cpu"):
        honest = getattr(torch.Tensor, name)

        def counting(tensor, *a, _honest=honest, **k):
            if reads:
                reads[-1] += 1
            return _honest(tensor, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, counting)
    monkeypatch.setattr(Runner, "step", counted_step)
    run(target, REPETITIVE, LookupTreeDrafter(budget=8), SAMPLED, StaticDecoder(target, min_capacity=64))
    assert reads and set(reads) == {1}, reads


def test_the_dispatch_runs_tree_drafters_as_tree_rounds_on_static_caches(vocab34_pair):
    """A drafter declares a tree; the one round dispatch (proposals.rule_for), not the drafter, picks tree rounds
    on the static cache, bound to the drafter's static form."""
    target, draft = vocab34_pair
    static = StaticDecoder(target, min_capacity=64)
    for kind in KINDS:
        drafter = tree_drafter(kind, target, draft)
        assert static.supports(drafter) is None and drafter.proposes == "tree"
        runner = begin_runner(target, [5, 9, 12], drafter, torch.Generator(), 8, static)
        assert isinstance(runner.rule, TreeRule) and runner.rule.proposer is drafter.static_form()
        assert isinstance(runner.cache, StaticRoundCache)
    assert begin_runner(target, [5, 9, 12], None, torch.Generator(), 8, static).rule.kind == "chain"


def test_target_without_a_4d_mask_is_refused_in_one_line():
    target = tiny_model()
    target.config._attn_implementation = "flash_attention_2"  # takes no arbitrary 4D mask
    reason = StaticDecoder(target, min_capacity=64).supports(LookupTreeDrafter())
    assert reason and "token trees" in reason and "\n" not in reason


def test_compiled_static_tree_matches(vocab34_pair):
    """The tree pass through torch.compile (aot_eager: tracing and the functionalised cache writes), after
    warm-up ran every padded size the budget needs."""
    target, draft = vocab34_pair
    static = StaticDecoder(target, compile=True, backend="aot_eager", min_capacity=64)
    seen = []
    drafter = tree_drafter("lookup", target, draft, budget=6)
    static.warm_up(drafter, 4, progress=lambda done, total, what: seen.append(what))
    assert [w for w in seen if w.startswith("verify")] == [f"verify step, {s} tokens" for s in (1, 2, 4, 8)]
    compiled = static.compile_seconds
    assert compiled > 0
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=30, seed=0)
    assert signature(run(target, REPETITIVE, drafter, params, static)) == signature(run(target, REPETITIVE, drafter,
                                                                                          params))
    assert static.compile_seconds == compiled  # nothing compiled after warm-up


def test_greedy_static_trees_on_the_embedded_model(torch_default_target):
    """The shipped model and its trained feature draft: lookup trie, feature tree and their union on static
    caches give target-only greedy token for token."""
    from app.drafting.drafts import make_drafter

    target = torch_default_target
    prompt = target.encode_chat([{"role": "user", "content": "Name three primary colours, then repeat them."}])
    stop = target.stop_token_ids[0]
    expected = reference(target.model, prompt, 32, stop)
    static = StaticDecoder(target.model)
    feature = FeatureTreeDrafter(make_drafter("trained", target), budget=12, depth=5, top_k=4)
    params = DecodeParams(gamma=5, temperature=0, max_new_tokens=32)
    for drafter in (LookupTreeDrafter(budget=8), feature, UnionTreeDrafter(feature, LookupTreeDrafter(budget=4))):
        result = generate(target.model, prompt, drafter, params, stop_token_ids=(stop,), vocab_size=target.vocab_size,
                          static=static)
        assert result.token_ids == expected, drafter.name
        assert sum(r.accepted for r in result.rounds) > 0, drafter.name
