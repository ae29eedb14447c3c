"""Shared by the engine tests: pooled chi-square, exact enumeration, the accepted-count law, greedy references."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import torch
from scipy.stats import chisquare

from app.engine import DecodeParams, FinishedEvent, RoundEvent, decode, generate, logits_to_probs

MIN_EXPECTED = 5.0  # chi-square needs about 5 expected counts per cell; smaller cells are pooled


def chi_square_p(observed, probs) -> float:
    """p-value of observed counts against probabilities; a hit on a zero-probability cell gives 0."""
    observed = np.asarray(observed, dtype=np.float64).ravel()
    probs = np.asarray(probs, dtype=np.float64).ravel()
    if observed[probs <= 0].sum() > 0:
        return 0.0
    keep = probs > 0
    observed, expected = observed[keep], probs[keep] / probs[keep].sum() * observed.sum()
    order = np.argsort(expected)
    observed, expected = observed[order], expected[order]
    # Pool every cell below MIN_EXPECTED, adding the next smallest until the pool itself reaches it.
    split = int((expected < MIN_EXPECTED).sum())
    while 0 < split < len(expected) and expected[:split].sum() < MIN_EXPECTED:
        split += 1
    cells_o = np.concatenate([[observed[:split].sum()], observed[split:]])[0 if split else 1 :]
    cells_e = np.concatenate([[expected[:split].sum()], expected[split:]])[0 if split else 1 :]
    if len(cells_e) < 2:
        return 1.0
    return float(chisquare(cells_o, cells_e).pvalue)


@torch.inference_mode()
def exact_joint(model, prompt: list[int], params: DecodeParams, vocab: int, depth: int = 3) -> np.ndarray:
    """P(t1..t_depth | prompt) over all vocab^depth continuations, by plain (cache-free) forward passes."""
    probs = torch.ones(1, dtype=torch.float64)
    prefixes: list[list[int]] = [[]]
    for _ in range(depth):
        batch = torch.tensor([prompt + pre for pre in prefixes])
        logits = model(input_ids=batch, use_cache=False).logits[:, -1, :vocab]
        p = logits_to_probs(logits, params).double()
        probs = (probs[:, None] * p).reshape(-1)
        prefixes = [pre + [t] for pre in prefixes for t in range(vocab)]
    return probs.numpy()


def sampled_joint(target, drafter, prompt: list[int], params: DecodeParams, vocab: int, samples: int,
                  depth: int = 3, **decode_kwargs) -> np.ndarray:
    """Counts of the first `depth` emitted tokens over `samples` seeded generations (decode_kwargs: static=...)."""
    counts = np.zeros(vocab**depth, dtype=np.int64)
    ids = torch.tensor(prompt)
    for i in range(samples):
        run = replace(params, max_new_tokens=depth, seed=i)
        finished = [e for e in decode(target, ids, drafter, run, vocab_size=vocab, **decode_kwargs) if isinstance(e, FinishedEvent)]
        index = 0
        for tok in finished[0].token_ids:
            index = index * vocab + tok
        counts[index] += 1
    return counts


def accepted_count_law(overlaps) -> list[float]:
    """P(n) for n = 0..gamma: a1..an (1 - a_{n+1}) for n < gamma, a1..a_gamma for n = gamma."""
    law, prefix = [], 1.0
    for a in overlaps:
        law.append(prefix * (1.0 - a))
        prefix *= a
    law.append(prefix)
    return law


def law_deviations(rounds: list[RoundEvent]) -> list[float]:
    """Per accepted count n: (observed - expected) / sigma over rounds, each with its own exact a_i."""
    gamma = max(r.drafted for r in rounds)
    mean, var, seen = [0.0] * (gamma + 1), [0.0] * (gamma + 1), [0] * (gamma + 1)
    for r in rounds:
        if not r.drafted:
            continue
        for n, prob in enumerate(accepted_count_law(r.overlap)):
            mean[n] += prob
            var[n] += prob * (1 - prob)
        seen[r.accepted] += 1
    return [(seen[n] - mean[n]) / math.sqrt(max(var[n], 1e-12)) for n in range(gamma + 1)]


GAMMAS = (1, 2, 4, 8)
PROMPTS = ([5, 9, 12], [20, 3, 3, 8, 14, 20, 3])


def reference(model, prompt: torch.Tensor, new_tokens: int, stop: int) -> list[int]:
    """Greedy target-only output: transformers' generate, an anchor outside the engine, where the model is
    transformers' own; the engine's target-only on the native model, which has no forward of its own (its
    rows are checked against single steps, and its quality against float32, elsewhere)."""
    if not hasattr(model, "generate"):
        return greedy(model, prompt, None, 1, new_tokens, stop)
    out = model.generate(
        prompt.view(1, -1), do_sample=False, max_new_tokens=new_tokens, eos_token_id=stop, pad_token_id=stop
    )
    return out[0, prompt.numel() :].tolist()


def greedy(model, prompt, drafter, gamma: int, new_tokens: int, stop: int) -> list[int]:
    params = DecodeParams(gamma=gamma, temperature=0, max_new_tokens=new_tokens, seed=0)
    return generate(model, prompt, drafter, params, stop_token_ids=(stop,)).token_ids


def chat_greedy_pair(target, drafter, text: str = "abcabc", new_tokens: int = 24, gamma: int = 4):
    """(target-only, speculative) greedy Results of a loaded target on one chat message, for tests that hold a
    drafter's tokens equal to target-only's."""
    ids = target.encode_chat([{"role": "user", "content": text}])
    params = DecodeParams(gamma=gamma, temperature=0.0, max_new_tokens=new_tokens, seed=0)
    common = dict(stop_token_ids=target.stop_token_ids, vocab_size=target.vocab_size)
    return generate(target.model, ids, None, params, **common), generate(target.model, ids, drafter, params, **common)
