"""Prompt lookup where it pays, else a draft, chosen per round (LookupElseDrafter): greedy equals target-only
(fp32, the bf16 packed path, the embedded model), the joint law of the first tokens is exact, the feature
draft stays in sync across lookup rounds, and planted bugs are caught: a choice read from the round's
uniform draw, stale features handed to the feature draft, a commit skipped in lookup rounds."""

from __future__ import annotations

import copy

import pytest
import torch

from app.engine import DecodeParams, ModelDrafter, RoundEvent, decode, decoding, generate
from app.engine.feature_drafter import FeatureDrafter
from app.engine.gated_lookup import GatedLookupDrafter
from app.engine.kv import new_cache, trunk
from app.engine.lookup_else import LookupElseDrafter
from app.engine.policy import (
    DRAFT,
    EXPLORE_EVERY,
    LOOKUP,
    TARGET,
    DrafterProfile,
    LookupElseGamma,
    VerifyCosts,
    best_draft_gamma,
    best_gamma,
    predict,
)
from app.engine.runner import begin_runner
from app.engine.static import StaticDecoder
from engine.feature_helpers import feature_drafter, random_feature_draft
from engine.helpers import PROMPTS, chi_square_p, exact_joint, greedy, reference, sampled_joint

FLAT = VerifyCosts((1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4))  # prepacked bf16: rows nearly free
VOCAB = 8
P_MIN = 1e-3
P_CAUGHT = 1e-6
JOINT = DecodeParams(gamma=3, temperature=1.0, top_k=6, top_p=0.9)
JOINT_PROMPT = [3, 5, 2, 3, 5]


def lookup_else(draft, alpha: float = 0.5, draft_gamma: int = 2, min_ngram: int = 1, cls=LookupElseDrafter):
    return cls(GatedLookupDrafter(FLAT, alpha, min_ngram=min_ngram), draft, draft_gamma)


def both_proposed(drafter: LookupElseDrafter) -> bool:
    """Lookup rounds and draft rounds both happened (the gated lookup counts every round it looked)."""
    lookup = drafter.lookup
    return lookup.proposed > 0 and lookup.rounds - lookup.proposed > 0


def _drafts(target, draft_model):
    return {"feature draft": feature_drafter(target, vocab_k=24, noise=0.1), "model draft": ModelDrafter(draft_model)}


@pytest.mark.parametrize("kind", ["feature draft", "model draft"])
def test_greedy_equals_target_only(vocab34_pair, kind):
    target, draft_model = vocab34_pair
    drafter = lookup_else(_drafts(target, draft_model)[kind], min_ngram=2)
    for prompt in (*PROMPTS, [5, 9, 12, 7, 3, 5, 9, 12, 7, 3, 5]):
        prompt = torch.tensor(prompt)
        expected = reference(target, prompt, 32, stop=1)
        for gamma in (1, 3, 8):
            assert greedy(target, prompt, drafter, gamma, 32, stop=1) == expected, (prompt.tolist(), gamma)
    assert both_proposed(drafter)


def test_greedy_equals_target_only_on_the_packed_path(vocab34_pair):
    from app.drafting.trained_drafts import pack_feature_drafter
    from app.machine import torch_path
    from app.machine.packed import packing_supported
    from app.machine.torch_path import LinearPath

    if not packing_supported():
        pytest.skip("this CPU has no native bf16 (oneDNN)")
    path = LinearPath("bfloat16", packed=True, hint=8)
    target, draft_model = (torch_path.apply_path(copy.deepcopy(m), path).eval() for m in vocab34_pair)
    features = pack_feature_drafter(FeatureDrafter(random_feature_draft(target, 34).to(torch.bfloat16), target), 8)
    for draft in (features, ModelDrafter(draft_model)):
        drafter = lookup_else(draft, min_ngram=2)
        for prompt in (*PROMPTS, [5, 9, 12, 7, 3, 5, 9, 12, 7, 3, 5]):
            prompt = torch.tensor(prompt)
            expected = greedy(target, prompt, None, 1, 24, stop=1)
            for gamma in (2, 5):
                assert greedy(target, prompt, drafter, gamma, 24, stop=1) == expected, (draft.name, gamma)
        assert both_proposed(drafter), draft.name


@pytest.mark.slow
def test_default_model_greedy(default_target):
    """The embedded model as loaded (its kernels chosen at load: native or bf16 packed), with its shipped feature
    draft; the last chat copies from its prompt, so lookup proposes there."""
    from app.drafting.drafts import make_drafter

    target = default_target
    drafter = lookup_else(make_drafter("trained", target), alpha=0.6, draft_gamma=2)
    chats = ("Name three primary colours.",
             "Repeat exactly: the quick brown fox jumps over the lazy dog, and the lazy dog sleeps on.")
    def run(prompt, drafter, gamma):
        params = DecodeParams(gamma=gamma, temperature=0, max_new_tokens=40, seed=0)
        return generate(target.model, prompt, drafter, params, vocab_size=target.vocab_size,
                        stop_token_ids=target.stop_token_ids).token_ids

    for chat in chats:
        prompt = target.encode_chat([{"role": "user", "content": chat}])
        assert run(prompt, drafter, 6) == run(prompt, None, 1), chat
    assert both_proposed(drafter)


@pytest.mark.parametrize("kind", ["feature draft", "model draft"])
def test_joint_law_is_exact(vocab8_pair, kind):
    """T = 1 with top-k and top-p; the feature draft's head covers 6 of the 8 tokens."""
    target, draft_model = vocab8_pair
    inner = feature_drafter(target, vocab_k=6) if kind == "feature draft" else ModelDrafter(draft_model)
    drafter = lookup_else(inner, min_ngram=2)
    counts = sampled_joint(target, drafter, JOINT_PROMPT, JOINT, VOCAB, samples=2500)
    pvalue = chi_square_p(counts, exact_joint(target, JOINT_PROMPT, JOINT, VOCAB))
    print(f"{kind}: chi-square p-value {pvalue:.4g}; lookup rounds {drafter.lookup.proposed} of {drafter.lookup.rounds}")
    assert both_proposed(drafter)
    assert pvalue > P_MIN


class PeekingLookupElse(LookupElseDrafter):
    """Planted bug: it reads the round's first uniform draw (a copy of the main stream, which accept()
    draws next) and keeps the lookup proposal only when that draw is small, i.e. when it would pass."""

    main: torch.Generator | None = None

    def choose(self, device, ids_list, gamma, vocab_size):
        peek = torch.Generator().manual_seed(0)
        peek.set_state(self.main.get_state())
        chosen = super().choose(device, ids_list, gamma, vocab_size)
        if chosen is not None and float(torch.rand(len(chosen[0]), generator=peek)[0]) > 0.3:
            self.proposer = DRAFT
            return None
        return chosen


def test_a_choice_read_from_the_rounds_draw_is_caught(vocab8_pair, monkeypatch):
    target, _ = vocab8_pair
    drafter = lookup_else(feature_drafter(target, vocab_k=6), min_ngram=2, cls=PeekingLookupElse)
    honest = decoding.begin_runner

    def begin(target, prompt, drafter, generator, *args):  # hands the planted drafter the main stream
        drafter.main = generator
        return honest(target, prompt, drafter, generator, *args)

    monkeypatch.setattr(decoding, "begin_runner", begin)
    counts = sampled_joint(target, drafter, JOINT_PROMPT, JOINT, VOCAB, samples=2500)
    pvalue = chi_square_p(counts, exact_joint(target, JOINT_PROMPT, JOINT, VOCAB))
    print(f"peeking choice: chi-square p-value {pvalue:.4g}")
    assert pvalue < P_CAUGHT


class Recording(FeatureDrafter):
    """A feature draft that keeps what its last draft() returned."""

    last = None

    def draft(self, *args):
        self.last = super().draft(*args)
        return self.last


def sync_faults(target, model, cls=LookupElseDrafter, rounds: int = 24) -> tuple[list[str], int]:
    """Every draft round after a lookup round, a fresh feature draft fed the committed tokens' target
    features in one go must draft exactly what the feature draft inside the drafter drafts (same q, same
    tokens from the same random state). -> (faults, draft rounds checked after a lookup round)."""
    params = DecodeParams(gamma=4, temperature=1.0)
    vocab = target.config.vocab_size
    inner = Recording(model, target)
    drafter = lookup_else(inner, alpha=0.9, draft_gamma=3, min_ngram=2, cls=cls)
    drafter.seed(1)
    drafter.begin()
    ids_list = [5, 9, 12, 7, 3, 5, 9, 12, 7, 3, 5]
    runner = begin_runner(target, ids_list, drafter, torch.Generator().manual_seed(0), 0)
    faults, checked, before = [], 0, None
    for r in range(rounds):
        ids = torch.tensor(ids_list)
        fresh = FeatureDrafter(model, target)
        fresh.begin()
        features = trunk(target, new_cache(target), ids[:-1])  # [N - 1, H]
        fresh.commit(len(features), features, 0)
        fresh.generator.set_state(inner.generator.get_state())
        expected = fresh.draft(ids, ids_list, min(params.gamma, drafter.draft_gamma), params, vocab)
        verdict = runner.step(ids_list, params.gamma, params, vocab).verdict
        if r > 0 and drafter.proposer == DRAFT and before == LOOKUP:
            checked += 1
            got = inner.last
            if got[0].tolist() != expected[0].tolist() or not torch.allclose(got[1], expected[1], atol=1e-5):
                faults.append(f"round {r}: the feature draft differs from a fresh recompute over the committed tokens")
        before = drafter.proposer
        ids_list = ids_list + list(verdict.drafts[: verdict.n_accepted]) + [verdict.next_token]
    return faults, checked


def test_the_feature_draft_stays_in_sync_across_lookup_rounds(vocab34_pair):
    target, _ = vocab34_pair
    faults, checked = sync_faults(target, random_feature_draft(target, 30, noise=0.05))
    assert checked >= 2, "the check needs draft rounds right after lookup rounds"
    assert faults == []


class StaleFeatures(LookupElseDrafter):
    """Planted bug: a lookup round hands the feature draft the last row it was given, repeated, in place
    of the target's features of the positions the round kept."""

    held = None

    def commit(self, kept, features, start):
        if self.proposer == LOOKUP and self.held is not None:
            features = self.held.expand(len(features), -1)
        self.held = features[-1:]
        super().commit(kept, features, start)


def test_stale_features_are_caught(vocab34_pair):
    """Stale features only cost acceptance (q is still what the draft sampled from, so the output stays
    exact and no χ² can see them): the fresh recompute is the check that catches them."""
    target, _ = vocab34_pair
    faults, checked = sync_faults(target, random_feature_draft(target, 30, noise=0.05), StaleFeatures)
    print(faults)
    assert checked and faults


class SkippedCommit(LookupElseDrafter):
    """Planted bug: the feature draft hears of draft rounds only."""

    def commit(self, kept, features, start):
        if self.proposer != LOOKUP:
            super().commit(kept, features, start)


def test_a_commit_skipped_in_lookup_rounds_is_refused(vocab34_pair):
    target, _ = vocab34_pair
    drafter = lookup_else(feature_drafter(target, 30), alpha=0.9, min_ngram=2, cls=SkippedCommit)
    with pytest.raises(RuntimeError, match="features (for position|up to)"):
        for prompt in (*PROMPTS, [5, 9, 12, 7, 3, 5, 9, 12, 7, 3, 5]):
            greedy(target, torch.tensor(prompt), drafter, 4, 32, stop=1)


def test_static_form(vocab34_pair):
    """With a draft model: lookup rounds skip the draft's static cache, which catches up later; greedy
    equals target-only. With a feature draft: the feature draft's one-line refusal."""
    target, draft_model = vocab34_pair
    static = StaticDecoder(target, min_capacity=16)
    drafter = lookup_else(ModelDrafter(draft_model), min_ngram=2)
    for prompt in (*PROMPTS, [5, 9, 12, 7, 3, 5, 9, 12, 7, 3, 5]):
        prompt = torch.tensor(prompt)
        params = DecodeParams(gamma=4, temperature=0, max_new_tokens=24, seed=0)
        got = generate(target, prompt, drafter, params, stop_token_ids=(1,), static=static).token_ids
        assert got == reference(target, prompt, 24, stop=1), prompt.tolist()
    assert both_proposed(drafter)
    assert static.supports(lookup_else(feature_drafter(target, 30))) == \
        "the static cache does not support the feature draft drafter yet"


DRAFT_PROFILE = DrafterProfile("trained", "trained draft", 0.1, 0.5)


def test_the_prediction_never_falls_below_the_draft_alone():
    alone = best_gamma(DRAFT_PROFILE, FLAT)
    never = DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.05, coverage=0.9)
    assert predict(never, DRAFT_PROFILE, alone[0], FLAT) == (0, pytest.approx(alone[1]))
    copying = DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.8, coverage=0.5)
    k, mixed = predict(copying, DRAFT_PROFILE, alone[0], FLAT)
    assert k > 1 and mixed > alone[1]
    gamma, best = best_draft_gamma(copying, DRAFT_PROFILE, FLAT)
    assert best >= mixed and 1 <= gamma <= 8


def _proposers(target, drafter, live, prompts, new_tokens: int = 48) -> list[str]:
    """Who proposed each round after the first, with `live` choosing γ between rounds."""
    read = lambda: DecodeParams(gamma=live.gamma(), temperature=0, max_new_tokens=new_tokens, seed=0)  # noqa: E731
    seen = []
    for prompt in prompts:
        for event in decode(target, torch.tensor(prompt), drafter, read, stop_token_ids=(1,)):
            if isinstance(event, RoundEvent):
                live.observe(event)
                if event.round > 0:
                    seen.append(drafter.proposer)
    return seen


LOOKUP_PROFILE = DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.5, coverage=0.5)


def test_the_live_controller_routes_rounds_to_their_proposer(vocab34_pair):
    target, draft_model = vocab34_pair
    drafter = lookup_else(ModelDrafter(draft_model), min_ngram=2)
    live = LookupElseGamma(drafter, LOOKUP_PROFILE, DrafterProfile("model", "model draft", 0.3, 0.6), FLAT)
    seen = _proposers(target, drafter, live, (*PROMPTS, [5, 9, 12, 7, 3, 5, 9, 12, 7, 3, 5]))
    assert seen.count(LOOKUP) and len(seen) > seen.count(LOOKUP) and live.rounds == len(seen)
    assert live.draft.rounds == seen.count(DRAFT)  # the draft's γ learns from its own rounds only
    on = live.draft_pays or live.idle >= EXPLORE_EVERY
    assert drafter.draft_gamma == (live.draft.gamma() if on else 0)
    assert drafter.lookup.baseline == max(1.0, live.draft.predicted)
    assert live.gamma() >= max(1, drafter.draft_gamma) and live.predicted > 0


@pytest.mark.parametrize("c", [0.05, 5.0])
def test_a_draft_slower_than_a_target_step_is_off_but_for_exploring(vocab34_pair, c):
    """Estimates frozen (weight 0), so only the drafter's cost decides: at c 5 target steps the rounds
    without a lookup proposal are target steps, but for one in EXPLORE_EVERY; at c 0.05 it always drafts."""
    target, draft_model = vocab34_pair
    drafter = lookup_else(ModelDrafter(draft_model), min_ngram=3)
    live = LookupElseGamma(drafter, LOOKUP_PROFILE, DrafterProfile("model", "model draft", c, 0.6), FLAT, weight=0.0)
    seen = [who for who in _proposers(target, drafter, live, PROMPTS, 64) if who != LOOKUP]
    off = live.share * live.lookup_round[0] + (1 - live.share)  # E[tokens a round] with target steps for draft rounds
    if c < 1:
        assert live.draft_pays and seen and set(seen) == {DRAFT}
        assert live.tokens_per_round > off  # the draft's rounds yield more than one token
        return
    assert live.tokens_per_round == pytest.approx(off)
    assert not live.draft_pays and seen.count(TARGET) > EXPLORE_EVERY and seen.count(DRAFT) >= 1
    runs = "".join("d" if who == DRAFT else "t" for who in seen).split("d")
    assert all(len(run) == EXPLORE_EVERY for run in runs[:-1]), runs
