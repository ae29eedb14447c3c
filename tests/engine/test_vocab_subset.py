"""A draft model over a token subset S (FR-Spec's draft vocabulary: ModelDrafter's vocab_ids, its head cut to
S's rows) stays exact: its q is 0 outside S, the residual carries every token outside it.

The joint law of the first 3 emitted tokens equals the target's (chi-square over all 8^3 continuations, S of
5 tokens of 8, so the target often wants a token the draft cannot propose); greedy equals target-only token
for token; the sliced head gives the full head's logits of S. Planted twins must be caught: (a) q reported as
a softmax over the whole vocabulary (the tokens outside S at logit 0) while the draft samples only from S,
(b) a residual that leaves out the tokens outside S.
"""

from __future__ import annotations

import pytest
import torch

from app.engine import DecodeParams, ModelDrafter, acceptance, drafters, generate
from app.engine.drafters import subset_head
from app.engine.sampling import logits_to_probs, sample
from engine.helpers import GAMMAS, PROMPTS, chi_square_p, exact_joint, greedy, reference, sampled_joint

VOCAB = 8
SUBSET = torch.tensor([0, 2, 3, 5, 6])  # 1, 4 and 7 only through the residual
P_MIN = 1e-3  # seeded runs; honest p-values are printed (pytest -rP)
# A law a case: the planted twins below are rejected at p < 1e-6 from 2,000; tests/engine/test_joint_distribution.py
# holds the full-vocabulary draft's law at 6,000.
SAMPLES = 3_000
P_CAUGHT = 1e-6  # planted bugs must be rejected far beyond chance

# γ 3 only: the subset changes q alone, and a γ-3 round's first position is a γ-1 round (the bonus, from p, is
# the same code with or without a subset: tests/engine/test_joint_distribution.py).
CASES = {
    "gamma3-T1": DecodeParams(gamma=3, temperature=1.0),
    "gamma3-T0.6-top-k3-top-p0.9": DecodeParams(gamma=3, temperature=0.6, top_k=3, top_p=0.9),
}


def subset_drafter(draft, ids: torch.Tensor = SUBSET) -> ModelDrafter:
    return ModelDrafter(subset_head(draft, ids), name="subset draft", vocab_ids=ids)


def test_the_sliced_head_gives_the_full_heads_logits_of_the_subset(vocab8_pair):
    _, draft = vocab8_pair
    ids = torch.tensor([[3, 5, 2, 3, 6]])
    with torch.inference_mode():
        full = draft(input_ids=ids).logits[0]
        cut = subset_head(draft, SUBSET)(input_ids=ids).logits[0]
    assert cut.shape == (5, len(SUBSET))
    torch.testing.assert_close(cut, full[:, SUBSET], rtol=0, atol=1e-6)  # a [5, H] product, not [8, H]: BLAS rounds
    assert draft.get_output_embeddings().weight.shape[0] == VOCAB  # the draft itself is left as it was


def test_q_is_zero_outside_the_subset_and_drafts_stay_inside(vocab8_pair):
    target, draft = vocab8_pair
    drafter = subset_drafter(draft)
    drafter.seed(0)
    x, q = drafter.draft(torch.tensor([3, 5]), [3, 5], 4, DecodeParams(gamma=4, temperature=1.0), VOCAB)
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[SUBSET] = False
    assert q.shape == (4, VOCAB) and float(q[:, outside].abs().max()) == 0.0
    torch.testing.assert_close(q.sum(-1), torch.ones(4))
    assert set(x.tolist()) <= set(SUBSET.tolist())


@pytest.mark.parametrize("case", list(CASES))
def test_subset_drafter_matches_exact_joint(vocab8_pair, case):
    target, draft = vocab8_pair
    params = CASES[case]
    counts = sampled_joint(target, subset_drafter(draft), [3], params, VOCAB, samples=SAMPLES)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB))
    print(f"{case}: chi-square p-value {pvalue:.4g}")
    assert pvalue > P_MIN


def _full_vocab_q_chain(feed, first, gamma, params, vocab_size, generator, vocab_ids=None):
    """Planted twin of draft_chain: draws from S, but reports q as a softmax over the whole vocabulary, the
    tokens outside S at logit 0 (a zero-filled scatter where -inf belongs)."""
    tokens, qs = [], []
    step = first
    for _ in range(gamma):
        logits = feed(step)
        x_i = vocab_ids[sample(logits_to_probs(logits, params), generator, params.greedy)]
        scattered = logits.new_zeros(vocab_size).index_copy_(0, vocab_ids, logits)
        tokens.append(x_i)
        qs.append(logits_to_probs(scattered, params))
        step = x_i.view(1)
    return torch.stack(tokens), torch.stack(qs)


def test_q_misreported_over_the_full_vocabulary_is_caught(vocab8_pair, monkeypatch):
    target, draft = vocab8_pair
    params = CASES["gamma3-T1"]
    monkeypatch.setattr(drafters, "draft_chain", _full_vocab_q_chain)
    counts = sampled_joint(target, subset_drafter(draft), [3], params, VOCAB, samples=2000)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB))
    print(f"q misreported over the full vocabulary: chi-square p-value {pvalue:.4g}")
    assert pvalue < P_CAUGHT


def residual_inside(subset: torch.Tensor):
    """Planted twin of acceptance.residual: norm(max(p - q, 0)) over S only (the tokens outside S left out)."""
    honest = acceptance.residual

    def inside(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        keep = torch.zeros(p.shape[-1], dtype=p.dtype, device=p.device)
        keep[subset.to(p.device)] = 1
        return honest(p * keep, q)

    return inside


def test_a_residual_without_the_tokens_outside_the_subset_is_caught(vocab8_pair, monkeypatch):
    target, draft = vocab8_pair
    params = CASES["gamma3-T1"]
    monkeypatch.setattr(acceptance, "residual", residual_inside(SUBSET))
    counts = sampled_joint(target, subset_drafter(draft), [3], params, VOCAB, samples=2000)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB))
    print(f"residual over the subset only: chi-square p-value {pvalue:.4g}")
    assert pvalue < P_CAUGHT


@pytest.mark.parametrize("prompt", PROMPTS, ids=["plain", "repetitive"])
def test_subset_greedy_equals_target_only(vocab34_pair, prompt):
    """S holds the even tokens and 1 (the stop token): the target's greedy answer leaves S, so rejections
    and corrections outside it happen."""
    target, draft = vocab34_pair
    prompt = torch.tensor(prompt)
    expected = reference(target, prompt, 24, stop=1)
    ids = torch.tensor([1, *range(0, 34, 2)]).sort().values
    assert set(expected) - set(ids.tolist())  # some answer token is outside S
    drafter = subset_drafter(draft, ids)
    for gamma in GAMMAS:
        assert greedy(target, prompt, drafter, gamma, 24, stop=1) == expected, gamma


def test_subset_greedy_drafts_the_argmax_over_the_subset(vocab34_pair):
    target, draft = vocab34_pair
    ids = torch.tensor([1, *range(0, 34, 2)]).sort().values
    result = generate(target, torch.tensor(PROMPTS[0]), subset_drafter(draft, ids),
                      DecodeParams(gamma=4, temperature=0, max_new_tokens=16, seed=0), vocab_size=34)
    drafted = [t for r in result.rounds for t in r.drafts]
    assert drafted and set(drafted) <= set(ids.tolist())


def test_static_and_tree_forms_are_refused(vocab8_pair):
    _, draft = vocab8_pair
    drafter = subset_drafter(draft)
    assert drafter.tree_form(8, 3) is None
    with pytest.raises(drafters.Unsupported):
        drafter.static_form()
