"""accept's greedy form (acceptance._accept_greedy) gives the Verdict the general form gives on the same
one-hot rows, field for field, and the same draws from the generator: it only skips the passes along the
vocabulary that one-hot rows make needless. Planted twin: a greedy form that takes the draft's argmax for
the corrected token is caught."""

from __future__ import annotations

import pytest
import torch

from app.engine import acceptance
from app.engine.sampling import DecodeParams, logits_to_probs

GREEDY = DecodeParams(temperature=0)


def _cases():
    gen = torch.Generator().manual_seed(0)
    for trial in range(120):
        g, vocab = trial % 5, (64, 49152)[trial % 2]
        lp = torch.randn(g + 1, vocab, generator=gen)
        lq = lp[:g] + torch.randn(g, vocab, generator=gen) * (0.05 if trial % 3 else 2.0)  # mostly agreeing drafts
        p, q = logits_to_probs(lp, GREEDY), logits_to_probs(lq, GREEDY)
        yield trial, p, q, q.argmax(-1) if g else torch.zeros(0, dtype=torch.long)


def _verdicts(fast, p, q, x, seed):
    a, b = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    got = fast(p, q, x, a, None)
    want = acceptance._accept_any(p, q, x, b, True, None)
    return got, want, torch.rand(1, generator=a).item(), torch.rand(1, generator=b).item()


def test_the_greedy_form_is_the_general_forms_verdict():
    rejected = accepted_all = 0
    for trial, p, q, x in _cases():
        got, want, after_a, after_b = _verdicts(acceptance._accept_greedy, p, q, x, trial)
        assert got == want, trial
        assert after_a == after_b  # the same draws: the generator is where the general form leaves it
        rejected += got.n_accepted < len(x)
        accepted_all += bool(len(x)) and got.n_accepted == len(x)
    assert rejected > 10 and accepted_all > 10  # both outcomes were compared


def test_a_greedy_form_taking_the_drafts_token_is_caught(monkeypatch):
    def planted(p, q, x, generator, before_sync):
        v = acceptance._accept_greedy(p, q, x, generator, before_sync)
        if v.n_accepted < len(x):  # the corrected token replaced by the rejected draft
            from dataclasses import replace

            return replace(v, next_token=int(x[v.n_accepted]))
        return v

    caught = sum(_verdicts(planted, p, q, x, trial)[0] != _verdicts(planted, p, q, x, trial)[1]
                 for trial, p, q, x in _cases())
    assert caught > 10


def test_non_finite_rows_are_refused_as_the_general_form_refuses_them():
    p = logits_to_probs(torch.tensor([[0.0, float("nan"), 1.0]]), GREEDY)
    with pytest.raises(acceptance.NonFiniteError, match="target"):
        acceptance._accept_greedy(p, p[:0], torch.zeros(0, dtype=torch.long), torch.Generator(), None)
