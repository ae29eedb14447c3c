"""Suffix decoding (engine/suffix_drafter.py): proposals from the index where its match is longer than the
context's own, cut by α as per-round lookup cuts them; greedy output equal to target-only and the sampled
joint law exact. Planted twin: the index's proposals reported at q = 0.1 instead of one-hot are caught."""

from __future__ import annotations

import torch

from app.engine import DecodeParams, generate
from app.engine.policy import VerifyCosts
from app.engine.suffix_drafter import SuffixDrafter
from app.engine.suffix_index import SuffixIndex
from engine.helpers import chi_square_p, exact_joint, sampled_joint

FLAT = VerifyCosts((1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4))


def _index(target, prompt: list[int], vocab: int, runs: int = 6, length: int = 12) -> SuffixIndex:
    """The target's own sampled continuations of the prompt: what a corpus of its answers holds."""
    seqs = []
    for seed in range(runs):
        out = generate(target, torch.tensor(prompt), None, DecodeParams(temperature=0.8, max_new_tokens=length,
                                                                          seed=seed), vocab_size=vocab).token_ids
        seqs.append([*prompt, *out])
    return SuffixIndex(seqs)


def test_the_index_proposes_where_its_match_is_longer(vocab34_pair):
    target, _ = vocab34_pair
    prompt = [5, 9, 12]
    drafter = SuffixDrafter(FLAT, 0.9, _index(target, prompt, 34))
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=24, seed=0)
    expected = generate(target, torch.tensor(prompt), None, params, vocab_size=34).token_ids
    got = generate(target, torch.tensor(prompt), drafter, params, vocab_size=34)
    assert got.token_ids == expected
    assert drafter.from_index > 0 and sum(r.accepted for r in got.rounds) > 0


def test_suffix_rounds_match_the_exact_joint(vocab8_pair):
    target, _ = vocab8_pair
    params = DecodeParams(gamma=3, temperature=0.6, top_p=0.9)
    prompt = [3, 5, 2, 3]
    index = _index(target, prompt, 8, runs=8, length=6)
    counts = sampled_joint(target, SuffixDrafter(FLAT, 0.5, index), prompt, params, 8, samples=1500)
    assert chi_square_p(counts, exact_joint(target, prompt, params, 8)) > 1e-3


def test_a_misreported_suffix_proposal_is_caught(vocab8_pair, monkeypatch):
    target, _ = vocab8_pair
    params = DecodeParams(gamma=3, temperature=0.6, top_p=0.9)
    prompt = [3, 5, 2, 3]
    drafter = SuffixDrafter(FLAT, 0.5, _index(target, prompt, 8, runs=8, length=6))
    honest = drafter.draft

    def misreported(*args):
        tokens, q = honest(*args)
        return tokens, q * 0.1

    monkeypatch.setattr(drafter, "draft", misreported)
    counts = sampled_joint(target, drafter, prompt, params, 8, samples=1000)
    assert chi_square_p(counts, exact_joint(target, prompt, params, 8)) < 1e-6
